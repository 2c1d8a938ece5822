/**
 * `mcp.servers.<name>` and `agents.<id>.autonomy.mcp.allow`: what loads, and
 * what is refused with file:line:col and the dotted key, never the value.
 */
import { describe, expect, it } from 'vitest';

import { parseConfigText } from '../../src/lib/config/load.js';

async function parse(text: string) {
  const yaml = await import('yaml');
  const { configSchema } = await import('../../src/lib/config/schema.js');
  return parseConfigText(text, 'c.yaml', { yaml, configSchema });
}

async function problems(text: string): Promise<string> {
  try {
    await parse(text);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('expected the config to be refused');
}

describe('mcp config', () => {
  it('a stdio server, an http server and an allowlist load', async () => {
    const c = await parse(
      'mcp:\n  servers:\n    everything:\n      command: node\n      args: [server.js, stdio]\n      env: {LOG_LEVEL: debug}\n      envFrom: {API_TOKEN: MY_TOKEN_VAR}\n      callTimeoutMs: 5000\n    remote:\n      url: http://127.0.0.1:9/mcp\n      headersFrom: {Authorization: REMOTE_AUTH}\nagents:\n  a:\n    autonomy:\n      mcp:\n        allow: [everything, remote.search]\n',
    );
    expect(c.mcp?.servers.everything).toMatchObject({ command: 'node', args: ['server.js', 'stdio'], callTimeoutMs: 5000, startupTimeoutMs: 15_000 });
    expect(c.mcp?.servers.remote).toMatchObject({ url: 'http://127.0.0.1:9/mcp', callTimeoutMs: 60_000 });
    expect(c.agents.a!.autonomy.mcp?.allow).toEqual(['everything', 'remote.search']);
  });

  it('an agent without autonomy.mcp reaches no server (absent, not an empty default)', async () => {
    const c = await parse('agents:\n  a: {}\n');
    expect(c.agents.a!.autonomy.mcp).toBeUndefined();
    expect(c.mcp).toBeUndefined();
  });

  it('refuses bad server names, bad allow entries and mixed forms at their line, naming the key', async () => {
    const msg = await problems(
      'mcp:\n  servers:\n    Bad-Name:\n      command: x\n    then:\n      command: x\n    mixed:\n      command: x\n      headers: {X-A: b}\n    neither: {}\nagents:\n  a:\n    autonomy:\n      mcp:\n        allow: ["../etc", "__proto__", "ok.a/b"]\n',
    );
    expect(msg).toMatch(/c\.yaml:3:\d+ mcp\.servers\.Bad-Name: invalid key/);
    expect(msg).toMatch(/c\.yaml:\d+:\d+ mcp\.servers\.then: invalid key: MCP server names.*confuse/);
    expect(msg).toMatch(/c\.yaml:9:\d+ mcp\.servers\.mixed\.headers: `headers` is only for url \(Streamable HTTP\) servers/);
    expect(msg).toMatch(/mcp\.servers\.neither: give either command/);
    expect(msg).toMatch(/c\.yaml:15:\d+ agents\.a\.autonomy\.mcp\.allow\[0\]: invalid format/);
    expect(msg).toMatch(/agents\.a\.autonomy\.mcp\.allow\[1\]/);
    expect(msg).toMatch(/agents\.a\.autonomy\.mcp\.allow\[2\]/);
  });

  it('refuses an inline secret and never echoes it', async () => {
    const msg = await problems('mcp:\n  servers:\n    s:\n      command: x\n      env: {API_KEY: sk-inline-canary-123}\n    h:\n      url: http://127.0.0.1:1/\n      headers: {Authorization: "Bearer canary-456"}\n');
    expect(msg).toMatch(/mcp\.servers\.s\.env: .*must come by reference: use envFrom/);
    expect(msg).toMatch(/mcp\.servers\.h\.headers: .*use headersFrom/);
    expect(msg).not.toContain('canary');
  });

  it('refuses a non-http url, credentials in a url and an out-of-range timeout', async () => {
    const creds = await problems('mcp:\n  servers:\n    h:\n      url: "https://u:pw-canary@example.org/mcp"\n');
    expect(creds).toMatch(/mcp\.servers\.h\.url: .*no credentials in the URL/);
    expect(creds).not.toContain('canary');
    const msg = await problems('mcp:\n  servers:\n    h:\n      url: "file:///etc/passwd"\n      callTimeoutMs: 900000\n');
    expect(msg).toMatch(/mcp\.servers\.h\.url: .*http/);
    expect(msg).toMatch(/mcp\.servers\.h\.callTimeoutMs: too large: must be <= 600000/);
  });
});
