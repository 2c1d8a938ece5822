#!/usr/bin/env node
// web_fetch of a 1 MB page from a local server (node:http on 127.0.0.1), timed INSIDE the jail
// around each `comis_tools.web_fetch` call, against a plain `undici.request` of the same URL in
// this process (body read whole). Median of N (BENCH_CALLS, default 30) and the ratio
// (target <= 1.5x before extraction), for a text/plain body and a CSV body (data kept whole as
// a ResultRef). Extraction is reported separately: the 1 MB HTML page through web_fetch, and
// the hidden-strip + Readability step alone in-process. Run after `npm run build`.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const calls = Number(process.env.BENCH_CALLS ?? 30);
const { loadConfig, resolveAgent } = await import(join(root, 'dist/lib/config/load.js'));
const { runOrchestrate } = await import(join(root, 'dist/lib/orchestrate/runner.js'));
const { extractBody, extractHtml } = await import(join(root, 'dist/lib/web/extract.js'));
const undici = await import('undici');

const MB = 1024 * 1024;
const line = 'lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor\n';
const text = line.repeat(Math.ceil(MB / line.length)).slice(0, MB);
const csv = `id,name,note\n${Array.from({ length: Math.ceil(MB / 48) }, (_, i) => `${i},item-${i},${'x'.repeat(30)}`).join('\n')}\n`.slice(0, MB);
const para = `<p>${'lorem ipsum dolor sit amet '.repeat(20)}</p>\n`;
const html = `<!doctype html><html><head><title>Big</title></head><body><article>${para.repeat(Math.ceil(MB / para.length))}</article></body></html>`;
// Bytes, not strings: the server must not re-encode 1 MB per request inside the measured time.
const bodies = { '/page.txt': ['text/plain', Buffer.from(text)], '/data.csv': ['text/csv', Buffer.from(csv)], '/page.html': ['text/html', Buffer.from(html)] };

const server = createServer((req, res) => {
  const [type, body] = bodies[req.url] ?? ['text/plain', 'missing'];
  res.writeHead(200, { 'content-type': type });
  res.end(body);
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const port = server.address().port;
const url = (p) => `http://127.0.0.1:${port}${p}`;

const home = mkdtempSync(join(tmpdir(), 'comis-webbench-'));
writeFileSync(join(home, 'config.yaml'), `agents:\n  default:\n    web:\n      fetch:\n        allowPrivate: ["127.0.0.1:${port}"]\n    autonomy:\n      limits:\n        timeoutMs: 600000\n        resultRunMb: 1024\n`);
const agent = resolveAgent(await loadConfig({ home }));
mkdirSync(agent.workspace, { recursive: true });

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};

async function inJail(path) {
  const source = `import { comis_tools } from './comis_tools.js';
const t = [];
for (let i = 0; i < ${calls + 2}; i++) {
  const s = performance.now();
  const r = await comis_tools.web_fetch({ url: ${JSON.stringify(url(path))} });
  t.push(performance.now() - s);
  if (r.status !== 200) throw new Error('status ' + r.status);
}
console.log(JSON.stringify(t.slice(2)));`;
  const run = await runOrchestrate({ source, displayName: 'bench.mjs', language: 'js', agent, home, sessionKey: 'bench', timeoutMs: 600_000 });
  if (run.public.outcome !== 'success') throw new Error(`bench run failed: ${run.public.failureClass} ${run.public.stderrTail ?? ''}`);
  return JSON.parse(run.public.stdout);
}

async function plainUndici(path) {
  const t = [];
  for (let i = 0; i < calls + 2; i++) {
    const s = performance.now();
    const res = await undici.request(url(path));
    await res.body.arrayBuffer();
    t.push(performance.now() - s);
  }
  return t.slice(2);
}

async function processing(path) {
  const [type, body] = bodies[path];
  const buf = Buffer.from(body);
  const kind = type === 'text/csv' ? 'csv' : type === 'text/html' ? 'html' : 'text';
  const t = [];
  for (let i = 0; i < Math.min(calls, 10) + 1; i++) {
    const s = performance.now();
    await extractBody(buf, kind, type, url(path), 50_000, false);
    t.push(performance.now() - s);
  }
  return t.slice(1);
}

// Warm undici, the server and the JIT on every body before anything is measured.
for (const path of Object.keys(bodies)) await plainUndici(path);

const rows = [];
for (const path of ['/page.txt', '/data.csv']) {
  const base = median(await plainUndici(path));
  const jailed = median(await inJail(path));
  const proc = median(await processing(path));
  rows.push({ case: `${path} (1 MB, ${bodies[path][0]})`, base, jailed, proc });
}
const htmlBase = median(await plainUndici('/page.html'));
const htmlFetch = median(await inJail('/page.html'));
const htmlProc = median(await processing('/page.html'));

const ex = [];
for (let i = 0; i < Math.min(calls, 10); i++) {
  const s = performance.now();
  await extractHtml(html, url('/page.html'));
  ex.push(performance.now() - s);
}
server.close();
rmSync(home, { recursive: true, force: true });

const f = (n) => `${n.toFixed(2)} ms`;
for (const r of rows) {
  const before = Math.max(0, r.jailed - r.proc);
  process.stdout.write(
    `${r.case}: plain undici ${f(r.base)}; web_fetch from the jail ${f(r.jailed)} (ratio ${(r.jailed / r.base).toFixed(2)}x), of which sanitize/frame ${f(r.proc)}; before extraction ${f(before)}, ratio ${(before / r.base).toFixed(2)}x (target <= 1.5x)\n`,
  );
}
process.stdout.write(`/page.html (1 MB HTML): plain undici ${f(htmlBase)}; web_fetch from the jail with extraction ${f(htmlFetch)} (extraction dominates; see the next line)\n`);
process.stdout.write(`extraction (hidden strip + Readability + text, in-process): median ${f(median(ex))}; with sanitize and envelope ${f(htmlProc)}\n`);
process.stdout.write(`medians of ${calls} calls (2 warm-up calls dropped); "before extraction" = in-jail median minus the in-process median of the same body's processing\n`);
