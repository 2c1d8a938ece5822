#!/usr/bin/env node
// The research example of seed 000 (examples/research.ts and .py) against local servers: a fake
// SearXNG on 127.0.0.1 (its JSON shape) returning 5 hits, and article pages served by node http,
// reached through web.fetch.allowPrivate (3 fetches). BENCH_RUNS runs per language (default 5).
// Prints the median wall time of `comis orchestrate` and two savings figures: the share of the
// fetched response bytes (search JSON + the 3 pages' HTML, counted by the servers) kept out of
// stdout, and the savedRatio `explain` reports (seed 001's estimate: materialized ResultRef bytes
// only; a page whose extracted text is under 15,000 bytes comes back inline and is not counted).
// Nothing leaves the machine. Run after `npm run build`.
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

// Article pages shaped like real ones: the 88 pages of 30 KB or more in Mozilla Readability's test
// corpus (test/test-pages/*/source.html: news, blogs, Wikipedia, docs), put through comis's own
// extraction, give these quartiles: HTML 95 / 182 / 301 KB, extracted text 3.0 / 7.0 / 14.3 KB,
// 19 / 38 / 96 paragraphs. The three pages fetched are one of each (generated, not copied: the same
// sizes and shapes, neutral words): head with meta, inline CSS and a JSON state script, a nav of
// links, the article (h1, byline, paragraphs of varied length, h2s), a hidden cookie banner, an
// aside of related links, a footer; the scripts fill the page to its HTML size.
const QUARTILES = [
  { html: 95_492, text: 2_973, paras: 19 },
  { html: 182_350, text: 6_975, paras: 38 },
  { html: 300_962, text: 14_317, paras: 96 },
];
function prng(seed) {
  let x = seed;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 4294967296;
  };
}
const VOCAB =
  'the of and to in a is that for on with as was by at from this be are it an or which have has their more about its after over two into than other new most some when also time people first years been would could between during state report study data model results system work city world government research public service local support policy program health market water energy school'.split(
    ' ',
  );
function words(rand, chars) {
  let out = '';
  while (out.length < chars) out += `${out ? ' ' : ''}${VOCAB[Math.floor(rand() * VOCAB.length)]}`;
  return out;
}
function sentenceCase(s) {
  return `${s[0].toUpperCase()}${s.slice(1)}.`;
}
function article(n) {
  const q = QUARTILES[n % QUARTILES.length];
  const rand = prng(0x9e3779b9 ^ (n + 1));
  const mean = q.text / q.paras;
  const paras = Array.from({ length: q.paras }, (_, i) => {
    const len = Math.max(30, Math.round(mean * (0.3 + 1.4 * rand())));
    const p = `<p>${sentenceCase(words(rand, len - 1))}</p>`;
    return i > 0 && i % 8 === 0 ? `<h2>${sentenceCase(words(rand, 30))}</h2>\n${p}` : p;
  });
  const links = (k, prefix) => Array.from({ length: k }, (_, i) => `<li><a href="/${prefix}/${i}">${words(rand, 14)}</a></li>`).join('');
  const head = `<head><meta charset="utf-8"><title>${sentenceCase(words(rand, 50))} | Example News</title><meta name="viewport" content="width=device-width, initial-scale=1"><meta property="og:title" content="article ${n}"><link rel="stylesheet" href="/static/site.css"><style>${'.c{margin:0 auto;padding:8px 16px;font:16px/1.5 Georgia,serif}.n a{color:#333;text-decoration:none}\n'.repeat(60)}</style></head>`;
  const body = `<body><header class="n"><nav><ul>${links(80, 'section')}</ul></nav></header><div style="display:none" class="cookie">We use cookies. ${words(rand, 300)}</div><main><article><h1>${sentenceCase(words(rand, 60))}</h1><p class="byline">By ${words(rand, 20)}</p>\n${paras.join('\n')}</article><aside><h3>Related</h3><ul>${links(20, 'story')}</ul></aside></main><footer class="n"><ul>${links(40, 'about')}</ul></footer>`;
  const page = (filler) => `<!doctype html><html lang="en">${head}${body}<script>window.__STATE__=${filler}</script></body></html>`;
  const need = q.html - Buffer.byteLength(page(''));
  const items = [];
  for (let size = 0; size < need;) {
    const item = JSON.stringify({ id: items.length, k: words(rand, 30) });
    items.push(item);
    size += item.length + 1;
  }
  // Cut to the quartile's size inside the script's text (all ASCII: chars are bytes).
  return page(`{"items":[${items.join(',')}]}`.slice(0, need));
}
// Bytes served while a run is on: the fetched response bytes the first figure is about.
let served = 0;
const pages = await listen((req, res) => {
  const m = /^\/page-(\d+)$/.exec(req.url);
  const body = Buffer.from(m ? article(Number(m[1])) : '');
  served += body.length;
  res.writeHead(m ? 200 : 404, { 'content-type': 'text/html; charset=utf-8' });
  res.end(body);
});
const pagesPort = pages.address().port;
const searx = await listen((req, res) => {
  const q = new URL(req.url, 'http://x').searchParams.get('q');
  const body = Buffer.from(
    JSON.stringify({ query: q, number_of_results: 5, results: Array.from({ length: 5 }, (_, i) => ({ url: `http://127.0.0.1:${pagesPort}/page-${i}`, title: `Result ${i}`, content: `About page ${i}`, engine: 'bench' })) }),
  );
  served += body.length;
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(body);
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
for (const file of ['research.ts', 'research.py']) {
  const wall = [];
  let last;
  let fetched = 0;
  for (let i = 0; i < runs; i++) {
    served = 0;
    const t = performance.now();
    const res = await comis(['orchestrate', join(root, 'examples', file), '--json']);
    wall.push(performance.now() - t);
    fetched = served;
    last = JSON.parse(res.out);
    if (last.status !== 'ok') throw new Error(res.out);
  }
  const r = last.result;
  const stdoutBytes = Buffer.byteLength(r.stdout);
  console.log(
    `${file}: median wall ${med(wall).toFixed(0)} ms over ${runs} runs (min ${Math.min(...wall).toFixed(0)}); fetched ${(fetched / 1024).toFixed(0)} KB (search JSON + pages of ${[0, 1, 2].map((n) => (Buffer.byteLength(article(n)) / 1024).toFixed(0)).join(' / ')} KB HTML), stdout ${stdoutBytes} bytes: fetched bytes kept out of stdout ${((1 - stdoutBytes / fetched) * 100).toFixed(1)}%; ${r.resultRefs.count} ResultRefs ${(r.resultRefs.bytes / 1024).toFixed(1)} KB, explain's savedRatio ${r.savings?.savedRatio ?? 'none (nothing materialized)'}`,
  );
}
const explain = JSON.parse((await comis(['explain', '--last', '--json'])).out);
const lastRun = explain.result.orchestrate.at(-1);
console.log(`explain --last: savings ${JSON.stringify(lastRun.savings)}, toolCalls ${JSON.stringify(lastRun.toolCalls.map((t) => `${t.tool}×${t.count}`))}`);
pages.close();
searx.close();
rmSync(home, { recursive: true, force: true });
