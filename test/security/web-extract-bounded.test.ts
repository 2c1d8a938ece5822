/**
 * Attack: a page that makes its own extraction long. The hidden-content strip and Readability
 * are page-controlled work (a 22 KB page of 2,000 nested elements took 41 s, 10,000 hiding rules
 * over 50,000 elements as long), and they ran on comis's event loop: nothing else of comis ran
 * meanwhile, not the run's other calls, not its timers, and web.fetch.timeoutMs did not cover
 * them. Now an HTML page is extracted in a worker thread, stopped at the call's deadline.
 *
 * Proof the attack ran: the script reaches its attack line, the server sends each page whole,
 * and the call fails as a timeout of the extraction (not of the download). Held: the call ends
 * at its deadline, and comis's event loop (this process runs the run) never stalls for a second
 * (the same pages extracted on it stall it for tens of seconds: a liveness bound, not a timing).
 * Control: a normal page is extracted through the same worker.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { loadConfig, resolveAgent } from '../../src/lib/config/load.js';
import { runOrchestrate } from '../../src/lib/orchestrate/runner.js';
import { htmlWorkersAlive, MAX_HTML_WORKERS } from '../../src/lib/web/html-pool.js';
import { tempDir } from '../helpers/temp.js';

const DEPTH = 2000;
const PAGES: Record<string, string> = {
  '/deep.html': `<!doctype html><html><head><title>Deep</title></head><body>${'<div>'.repeat(DEPTH)}DEEP-TEXT${'</div>'.repeat(DEPTH)}</body></html>`,
  '/rules.html': `<!doctype html><html><head><title>Rules</title><style>${Array.from({ length: 10_000 }, (_, i) => `.c${i}{display:none}`).join('')}</style></head><body>${'<p>x</p>'.repeat(50_000)}</body></html>`,
  '/ok.html': `<!doctype html><html><head><title>Fine page</title></head><body><article><h1>Fine heading</h1><p>${'FINE-TEXT is the readable paragraph of this page. '.repeat(20)}</p></article></body></html>`,
};

let server: Server;
let port = 0;
const served: string[] = [];
beforeAll(async () => {
  server = createServer((req, res) => {
    const body = PAGES[req.url ?? ''];
    if (!body) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(body, () => served.push(req.url!));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => {
  server.closeAllConnections();
  server.close();
});

describe('web_fetch: a page cannot make its extraction hold comis', () => {
  it('a deeply nested page and a page of thousands of hiding rules end at the deadline, and comis keeps running meanwhile', async () => {
    const home = tempDir('comis-webx-');
    writeFileSync(join(home, 'config.yaml'), `agents:\n  default:\n    web:\n      fetch:\n        allowPrivate: ["127.0.0.1:${port}"]\n        timeoutMs: 1000\n`);
    const agent = resolveAgent(await loadConfig({ home }));
    mkdirSync(agent.workspace, { recursive: true });
    const source = `import { comis_tools } from './comis_tools.js';
console.log('ATTACK-LINE');
for (const p of ['/deep.html', '/rules.html']) {
  try { await comis_tools.web_fetch({ url: 'http://127.0.0.1:${port}' + p }); console.log('EXTRACTED', p); } catch (e) { console.log(e.code, e.message); }
}
const ok = await comis_tools.web_fetch({ url: 'http://127.0.0.1:${port}/ok.html' });
console.log('control', ok.status, ok.title, ok.content.includes('FINE-TEXT'));`;
    // The longest gap between two ticks of this process's event loop during the run.
    let last = performance.now();
    let longest = 0;
    const tick = setInterval(() => {
      const now = performance.now();
      longest = Math.max(longest, now - last);
      last = now;
    }, 20);
    let run;
    try {
      run = await runOrchestrate({ source, displayName: 's.mjs', language: 'js', agent, home, sessionKey: 's', timeoutMs: 60_000 });
    } finally {
      clearInterval(tick);
    }
    const lines = run.public.stdout.trim().split('\n');
    expect(lines[0], run.public.stdout + (run.public.stderrTail ?? '')).toBe('ATTACK-LINE');
    expect(longest).toBeLessThan(1000);
    for (const line of lines.slice(1, 3)) expect(line).toMatch(/^timeout web_fetch: extracting the page's readable text did not finish within the call's deadline/);
    // Each page was downloaded whole: what timed out is its extraction.
    expect(served).toEqual(expect.arrayContaining(['/deep.html', '/rules.html', '/ok.html']));
    expect(lines[3]).toBe('control 200 Fine page true');
    expect(run.public.outcome).toBe('success');
    expect(htmlWorkersAlive()).toBeLessThanOrEqual(MAX_HTML_WORKERS);
  }, 120_000);
});
