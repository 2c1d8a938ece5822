/** `comis mcp list`: the configured servers, whether each starts, its tools and what the agent may call; no secret shown. */
import { describe, expect, it } from 'vitest';

import { parseJson } from '../helpers/cli.js';
import { mcpConfigYaml } from '../helpers/mcp.js';
import { makeHome } from '../helpers/orchestrate.js';

describe('comis mcp list', () => {
  it('shows each server, whether it starts, its tools and the allowlisted ones; exit 1 when one does not start', () => {
    const extra =
      '    broken:\n      command: /bin/false\n      startupTimeoutMs: 1000\n    secretive:\n      url: "http://127.0.0.1:1/mcp?token=q-canary"\n      headersFrom: {Authorization: COMIS_TEST_LIST_TOKEN}\n      startupTimeoutMs: 1000';
    const h = makeHome(mcpConfigYaml({ default: ['everything.echo', 'edge', 'ghost'], other: undefined }, { extraServers: extra }));
    const res = h.run(['mcp', 'list', '--json'], { env: { COMIS_TEST_LIST_TOKEN: 'Bearer header-canary-1' } });
    expect(res.status).toBe(1);
    const r = parseJson(res.stdout).result;
    const by = Object.fromEntries((r.servers as { name: string }[]).map((s) => [s.name, s])) as unknown as Record<
      string,
      { starts: boolean; allowlisted: boolean; tools: { name: string; allowlisted: boolean }[]; target: string; envNames: string[]; error?: { code: string } }
    >;
    expect(Object.keys(by)).toEqual(['broken', 'edge', 'everything', 'secretive']);
    expect(by.everything!.starts).toBe(true);
    expect(by.everything!.tools.filter((t) => t.allowlisted).map((t) => t.name)).toEqual(['echo']);
    expect(by.everything!.tools.map((t) => t.name)).toContain('get-sum');
    expect(by.edge!.tools.every((t) => t.allowlisted)).toBe(true);
    expect(by.broken).toMatchObject({ starts: false, error: { code: 'mcp_start_failed' } });
    expect(by.secretive!.target).toBe('http://127.0.0.1:1/mcp');
    expect(by.secretive!.envNames).toEqual(['Authorization']);
    expect(r.unknownAllowEntries).toEqual(['ghost']);
    expect(res.stdout + res.stderr).not.toMatch(/canary/);
    // Another agent: same servers, nothing allowlisted.
    const other = parseJson(h.run(['mcp', 'list', '--agent', 'other', '--json']).stdout).result;
    expect((other.servers as { tools: { allowlisted: boolean }[] }[]).flatMap((s) => s.tools).some((t) => t.allowlisted)).toBe(false);
    // The human form names the allow key to add.
    const text = h.run(['mcp', 'list', '--agent', 'other']);
    expect(text.stdout).toContain('(not on agents.other.autonomy.mcp.allow: add "everything" or "everything.<tool>" to open it)');
  });

  it('with no server configured, says so and exits 0', () => {
    const h = makeHome();
    const res = h.run(['mcp', 'list']);
    expect(res.status).toBe(0);
    expect(res.stdout).toContain('No MCP servers are configured');
  });
});
