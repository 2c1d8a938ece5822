#!/usr/bin/env node
// The research example of seed 000 (examples/research.ts and .py) against local servers: a fake
// SearXNG on 127.0.0.1 (its JSON shape) returning 5 hits, pages of ~100 KB served by node http,
// reached through web.fetch.allowPrivate (3 fetches). BENCH_RUNS runs per language (default 5).
// Prints the median wall time of `comis orchestrate` and the savings `explain` reports (the share
// of materialized bytes kept out of stdout). Nothing leaves the machine. Run after `npm run build`.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const runs = Number(process.env.BENCH_RUNS ?? 5);
const listen = (handler) =>
  new Promise((r) => {
    const s = createServer(handler);
    s.listen(0, '127.0.0.1', () => r(s));
  });
// Two page shapes: ~200-char paragraphs (60 lines ≈ 12 KB of each page re-enter) and ~40-char ones (≈ 2.5 KB).
// Either way web_fetch cuts the extracted text at maxChars (50,000), so a ResultRef is at most ~50 KB.
const SHAPES = { long: 'the autonomy model keeps intermediate results out of context. '.repeat(3), short: 'results stay out.' };
let shape = 'long';
const page = (n) =>
  `<!doctype html><html><head><title>Page ${n}</title></head><body><article><h1>Page ${n}</h1>\n${Array.from({ length: 3000 }, (_, i) => `<p>Page ${n} paragraph ${i}: ${SHAPES[shape]}</p>`).join('\n')}</article></body></html>`;
const pages = await listen((req, res) => {
  const m = /^\/page-(\d+)$/.exec(req.url);
  res.writeHead(m ? 200 : 404, { 'content-type': 'text/html; charset=utf-8' });
  res.end(m ? page(Number(m[1])) : '');
});
const pagesPort = pages.address().port;
const searx = await listen((req, res) => {
  const q = new URL(req.url, 'http://x').searchParams.get('q');
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ query: q, number_of_results: 5, results: Array.from({ length: 5 }, (_, i) => ({ url: `http://127.0.0.1:${pagesPort}/page-${i}`, title: `Result ${i}`, content: `About page ${i}`, engine: 'bench' })) }));
});
const home = mkdtempSync(join(tmpdir(), 'comis-research-bench-'));
writeFileSync(
  join(home, 'config.yaml'),
  `agents:\n  default:\n    web:\n      search:\n        provider: searxng\n        baseUrl: http://127.0.0.1:${searx.address().port}\n      fetch:\n        allowPrivate: ["127.0.0.1:${pagesPort}"]\n`,
);
const comis = (args) =>
  new Promise((resolve) => {
    const child = spawn(process.execPath, [join(root, 'bin/comis.js'), ...args], { env: { PATH: process.env.PATH, HOME: home, COMIS_HOME: home }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    child.on('close', (status) => resolve({ status, out }));
  });
const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const [s, file] of [
  ['long', 'research.ts'],
  ['long', 'research.py'],
  ['short', 'research.ts'],
  ['short', 'research.py'],
]) {
  shape = s;
  const wall = [];
  let last;
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    const res = await comis(['orchestrate', join(root, 'examples', file), '--json']);
    wall.push(performance.now() - t);
    last = JSON.parse(res.out);
    if (last.status !== 'ok') throw new Error(res.out);
  }
  const r = last.result;
  console.log(
    `${file} (${shape} paragraphs, pages ${(Buffer.byteLength(page(0)) / 1024).toFixed(0)} KB of HTML): median wall ${med(wall).toFixed(0)} ms over ${runs} runs (min ${Math.min(...wall).toFixed(0)}), ${r.resultRefs.count} ResultRefs ${(r.resultRefs.bytes / 1024).toFixed(0)} KB, stdout ${r.stdout.length} chars, savedRatio ${r.savings?.savedRatio} (explain's figure), bytes kept out ${((1 - r.stdout.length / r.resultRefs.bytes) * 100).toFixed(1)}%`,
  );
}
const explain = JSON.parse((await comis(['explain', '--last', '--json'])).out);
const lastRun = explain.result.orchestrate.at(-1);
console.log(`explain --last: savings ${JSON.stringify(lastRun.savings)}, toolCalls ${JSON.stringify(lastRun.toolCalls.map((t) => `${t.tool}×${t.count}`))}`);
pages.close();
searx.close();
rmSync(home, { recursive: true, force: true });
