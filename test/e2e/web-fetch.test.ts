/**
 * web_fetch end to end through bin/comis.js: config.yaml's web.fetch keys
 * take effect (the KEY_PROOFS table points here), against a real server on
 * 127.0.0.1. Only loopback URLs are used, so even a broken guard reaches
 * nothing but this machine. comis runs as a child process (spawned
 * asynchronously: the server lives in this process's event loop).
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { comisBin, parseJson, repoRoot } from '../helpers/cli.js';
import { makeHome, type Home } from '../helpers/orchestrate.js';
import { tempDir } from '../helpers/temp.js';
import { startWebServer, type WebServer } from '../helpers/web-server.js';

let server: WebServer;
beforeAll(async () => {
  server = await startWebServer();
});
afterAll(() => server.close());

function comis(h: Home, args: string[], env: Record<string, string> = {}): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [comisBin, ...args], { cwd: repoRoot, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: h.home, COMIS_HOME: h.home, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

const fetchAll = (urls: string[], extra = ''): string => `import { comis_tools } from './comis_tools.js';
for (const url of ${JSON.stringify(urls)}) {
  try {
    const r = await comis_tools.web_fetch({ url${extra} });
    console.log(JSON.stringify({ status: r.status, type: r.type ?? 'inline', kind: r.kind, truncated: r.truncated, bytes: r.bytes, len: typeof r.content === 'string' ? r.content.length : undefined }));
  } catch (e) {
    console.log(JSON.stringify({ code: e.code }));
  }
}`;

async function runFetch(config: string, script: string): Promise<Array<Record<string, unknown>>> {
  const h = makeHome(config);
  const res = await comis(h, ['orchestrate', h.script('f.mjs', script), '--json']);
  const body = parseJson(res.stdout);
  expect(body.result?.outcome, res.stderr).toBe('success');
  return (body.result.stdout as string)
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

const yaml = (fetch: Record<string, unknown>): string => `agents:\n  default:\n    web:\n      fetch: ${JSON.stringify(fetch)}\n`;

describe('web_fetch through comis orchestrate', () => {
  it('allowPrivate opens the local server; without it the same URL is refused; a big page is a ResultRef the script slices with read(0, 60)', async () => {
    const page = server.url('/big.html');
    const script = `import { comis_tools, ResultRef } from './comis_tools.js';
try { await comis_tools.web_fetch({ url: ${JSON.stringify(page)} }); console.log('FETCHED'); } catch (e) { console.log(e.code); }`;
    const refused = await runFetch(yaml({}), script.replace("console.log('FETCHED')", "console.log(JSON.stringify('FETCHED'))").replace('console.log(e.code)', 'console.log(JSON.stringify(e.code))'));
    expect(refused).toEqual(['ssrf_blocked']);
    const slicing = `import { comis_tools, ResultRef } from './comis_tools.js';
const page = await comis_tools.web_fetch({ url: ${JSON.stringify(page)} });
const head = await page.read(0, 60);
console.log(JSON.stringify({ isRef: page instanceof ResultRef, kind: page.kind, opens: head.startsWith('<<<EXTERNAL_UNTRUSTED_CONTENT'), para: head.includes('Paragraph 0:'), finalUrl: page.finalUrl, status: page.status, title: page.title, untrusted: page.untrusted }));`;
    expect(await runFetch(yaml({ allowPrivate: [`127.0.0.1:${server.port}`] }), slicing)).toEqual([{ isRef: true, kind: 'text', opens: true, para: true, finalUrl: page, status: 200, title: 'Big', untrusted: true }]);
  }, 120_000);

  it('allowHosts and denyHosts: a host outside allowHosts, or in denyHosts, is refused; listed hosts pass', async () => {
    // 127.0.0.1 is the host here: an IP literal is matched as a host name too.
    const urls = [server.url('/plain.txt')];
    const base = { allowPrivate: [`127.0.0.1:${server.port}`] };
    expect(await runFetch(yaml({ ...base, allowHosts: ['127.0.0.1'] }), fetchAll(urls))).toEqual([{ status: 200, type: 'inline', kind: 'text', truncated: false, len: expect.any(Number) }]);
    expect(await runFetch(yaml({ ...base, allowHosts: ['docs.example.org'] }), fetchAll(urls))).toEqual([{ code: 'host_denied' }]);
    expect(await runFetch(yaml({ ...base, denyHosts: ['127.0.0.1'] }), fetchAll(urls))).toEqual([{ code: 'host_denied' }]);
  }, 120_000);

  it('timeoutMs, maxResponseBytes and maxChars: a slow drip times out, a gzip bomb is cut at the configured bytes, text at the configured chars', async () => {
    const cfg = yaml({ allowPrivate: [`127.0.0.1:${server.port}`], timeoutMs: 1000, maxResponseBytes: 50_000, maxChars: 2000 });
    const out = await runFetch(cfg, fetchAll([server.url('/drip'), server.url('/bomb.gz'), server.url('/big.html')]));
    expect(out[0]).toEqual({ code: 'timeout' });
    // The bomb's text is cut at 50,000 decoded bytes, then at 2,000 chars: inline, truncated.
    expect(out[1]).toMatchObject({ status: 200, type: 'inline', kind: 'text', truncated: true });
    expect(out[1]!.len as number).toBeLessThan(2000 + 300);
    expect(out[2]).toMatchObject({ status: 200, type: 'inline', truncated: true });
    // Control: the defaults let the same bomb through to 2,000,000 bytes then 50,000 chars (a ResultRef).
    const dflt = await runFetch(yaml({ allowPrivate: [`127.0.0.1:${server.port}`] }), fetchAll([server.url('/bomb.gz')]));
    expect(dflt[0]).toMatchObject({ type: 'ResultRef', kind: 'text', truncated: true, status: 200 });
    expect(dflt[0]!.bytes as number).toBeGreaterThan(50_000);
    expect(dflt[0]!.bytes as number).toBeLessThan(50_000 + 300);
  }, 120_000);

  it("a run that never calls web_fetch loads no undici, linkedom or readability; one that does loads undici (control), and its page is extracted off comis's thread", async () => {
    const h = makeHome(yaml({ allowPrivate: [`127.0.0.1:${server.port}`] }));
    const traced = async (code: string): Promise<string[]> => {
      const trace = join(tempDir(), 'trace.txt');
      const res = await comis(h, ['orchestrate', h.script('t.mjs', code)], { NODE_OPTIONS: `--import=${join(repoRoot, 'test/helpers/trace-imports.mjs')}`, COMIS_TRACE_IMPORTS: trace });
      expect(res.status, res.stderr).toBe(0);
      return readFileSync(trace, 'utf8').split('\n');
    };
    const heavy = /\/undici\/|\/linkedom\/|@mozilla\/readability/;
    const plain = await traced(`import { comis_tools } from './comis_tools.js';\nconsole.log('hi');`);
    expect(plain.filter((m) => heavy.test(m))).toEqual([]);
    const fetching = await traced(`import { comis_tools } from './comis_tools.js';\nconsole.log((await comis_tools.web_fetch({ url: ${JSON.stringify(server.url('/page.html'))} })).status);`);
    expect(fetching.some((m) => /\/undici\//.test(m))).toBe(true);
    // The HTML page went to the extraction worker pool; linkedom and Readability load in its thread, not in comis's.
    expect(fetching.some((m) => /\/web\/html-pool\.js$/.test(m))).toBe(true);
    expect(fetching.filter((m) => /\/linkedom\/|@mozilla\/readability/.test(m))).toEqual([]);
  }, 120_000);
});
