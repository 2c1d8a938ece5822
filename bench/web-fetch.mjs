#!/usr/bin/env node
// web_fetch of a 1 MB page from a local server on 127.0.0.1, timed INSIDE the jail around each
// `comis_tools.web_fetch` call, against a plain undici request of the same URL made in this
// process, interleaved call by call:
//
//   for each i: the jailed script calls web_fetch('/baseline?…') on this process's control
//   server, whose handler runs the plain request (timed here), then it times web_fetch of the page
//   itself (the order of the two flips every call). Both read the same 1 MB body in full.
//
// Setup (BENCH_SETUP):
//   processes (default): the page server is a process of its own (bench/lib/web-pages.mjs), comis
//     is `comis orchestrate` as a user runs it (its own process, the CLI's bundled fast path), and
//     the baseline runs here: three processes, as a web server, comis and a plain client are.
//   shared (the setup of sessions 8-15): the page server, comis (runOrchestrate in this process,
//     unbundled) and the baseline share this one process and its event loop. comis's thread then
//     also serves every page it fetches, while the baseline's request is answered on its own
//     thread, a handoff no remote server gives; kept to compare with the earlier figures.
//
// Baseline A: `undici.request(url)` + `await res.body.arrayBuffer()` (the plain way to read a body:
// joined in memory). Baseline B (stricter): the same request with the body drained chunk by chunk,
// nothing joined. The subject is the whole web_fetch call as the script sees it: the capability
// socket round trip, the gate, the SSRF-guarded request, reading the body, the clean-ASCII check /
// sanitizer and envelope, the ResultRef file written and renamed, the handle and its reply frame.
// Reported: the median of the paired ratios (subject_i / baseline_i) and both medians, N calls
// (BENCH_CALLS, default 30) after 2 warm-up pairs, for a text/plain body (cut at maxChars 50,000:
// a 50 KB ResultRef) and a CSV body (kept whole: a 1 MB ResultRef). Text and CSV have no extraction
// step; their in-process sanitize/frame time is reported apart. Extraction is reported separately:
// the 1 MB HTML page through web_fetch, and the hidden-strip + Readability step alone in-process.
// Issue 14's target (<= 1.5x) is for a page before extraction: the text/plain case measures that.
// The CSV case is a dataset, kept whole: it also writes the whole 1 MB to its ResultRef file, work
// the plain request does not do; it is reported against the same 1.5x for comparison.
// BENCH_BEFORE_ROOT=<another built tree>: also the comis side alone, in this process, without the
// jail: that tree's web_fetch tool, this tree's and the plain request (A) alternated call by call
// (CPU and wall medians, paired ratios to A), the figure that still reads at a high load average.
// Run after `npm run build`.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { bodies, html, MB, servePage } from './lib/web-pages.mjs';

// BENCH_ROOT: another checkout's built tree (e.g. main's, for a before/after on the same load).
const root = process.env.BENCH_ROOT ?? join(dirname(fileURLToPath(import.meta.url)), '..');
const calls = Number(process.env.BENCH_CALLS ?? 30);
// BENCH_CASES: which bodies to run (default text,csv,html; json and jsonl on request), e.g. `csv` for a quick before/after.
const cases = new Set((process.env.BENCH_CASES ?? 'text,csv,html').split(','));
const setup = process.env.BENCH_SETUP ?? 'processes';
if (setup !== 'processes' && setup !== 'shared') throw new Error(`BENCH_SETUP: processes or shared, not ${setup}`);
const { loadConfig, resolveAgent } = await import(join(root, 'dist/lib/config/load.js'));
const { runOrchestrate } = await import(join(root, 'dist/lib/orchestrate/runner.js'));
const { extractBody, extractChunks, extractHtml } = await import(join(root, 'dist/lib/web/extract.js'));
const { cleanAsciiLines } = await import(join(root, 'dist/lib/untrusted/envelope.js'));
// The per-chunk check web_fetch runs on a streamed CSV: the SIMD kernel where the tree has it.
const cleanCheck = await import(join(root, 'dist/lib/web/clean-scan.js')).then(
  (m) => m.cleanLines,
  () => cleanAsciiLines,
);
const undici = await import('undici');

// The page server's port (this process's control server's in the shared setup), and the control server's.
let port = 0;
let controlPort = 0;
const url = (p) => `http://127.0.0.1:${port}${p}`;
const controlUrl = (p) => `http://127.0.0.1:${controlPort}${p}`;

/** Baseline A (joined) or B (drained), one call, ms. */
async function plain(path, mode) {
  const s = performance.now();
  const res = await undici.request(url(path));
  let n = 0;
  if (mode === 'drain') for await (const c of res.body) n += c.length;
  else n = (await res.body.arrayBuffer()).byteLength;
  const t = performance.now() - s;
  if (n !== bodies[path][1].length) throw new Error(`baseline read ${n} bytes of ${path}`);
  return t;
}

const baselines = [];
const baselineCpu = [];
const marks = [];
const cpuNow = () => {
  const c = process.cpuUsage();
  return c.user + c.system;
};
/** CPU time of every thread of process `pid` so far, µs (schedstat: ns, unlike stat's clock ticks). */
function processCpuUs(pid) {
  let ns = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return ns / 1000;
}
/** The comis process of the run in flight (processes setup): its CPU is what /mark records. */
let comisPid = 0;
const control = createServer((req, res) => {
  const u = new URL(req.url, 'http://x');
  if (u.pathname === '/mark') {
    // The comis process's CPU (all its threads: the thread pool's file writes count) at this point of the script.
    marks.push(setup === 'shared' ? cpuNow() : processCpuUs(comisPid));
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('ok');
    return;
  }
  if (u.pathname === '/baseline') {
    // Runs while the jailed script's web_fetch of this URL waits: nothing else is in flight.
    const c0 = cpuNow();
    plain(u.searchParams.get('p'), u.searchParams.get('mode')).then(
      (t) => {
        baselineCpu.push(cpuNow() - c0);
        baselines.push(t);
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end('ok');
      },
      (err) => {
        res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(String(err));
      },
    );
    return;
  }
  servePage(req, res);
});
await new Promise((r) => control.listen(0, '127.0.0.1', r));
controlPort = control.address().port;
/** The page server's process (processes setup), ended with its stdin. */
let pageServer;
if (setup === 'shared') port = controlPort;
else {
  pageServer = spawn(process.execPath, [join(dirname(fileURLToPath(import.meta.url)), 'lib', 'web-pages.mjs')], { stdio: ['pipe', 'pipe', 'inherit'] });
  port = await new Promise((resolve, reject) => {
    let out = '';
    pageServer.stdout.on('data', (d) => {
      out += d;
      const m = /^port (\d+)$/m.exec(out);
      if (m) resolve(Number(m[1]));
    });
    pageServer.on('exit', (code) => reject(new Error(`the page server exited (${code}) before it listened`)));
  });
}

const home = mkdtempSync(join(tmpdir(), 'comis-webbench-'));
const allowPrivate = [...new Set([port, controlPort])].map((p) => `"127.0.0.1:${p}"`).join(', ');
writeFileSync(join(home, 'config.yaml'), `agents:\n  default:\n    web:\n      fetch:\n        allowPrivate: [${allowPrivate}]\n    autonomy:\n      limits:\n        timeoutMs: 600000\n        resultRunMb: 1024\n`);
const agent = resolveAgent(await loadConfig({ home }));
mkdirSync(agent.workspace, { recursive: true });

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};

/** The script's stdout from `comis orchestrate <script>` of this tree, as a user runs it (processes setup). */
function orchestrateCli(source) {
  const script = join(home, 'bench.mjs');
  writeFileSync(script, source);
  const child = spawn(process.execPath, [join(root, 'bin', 'comis.js'), 'orchestrate', script, '--quiet', '--timeout-ms', '600000'], {
    env: { ...process.env, COMIS_HOME: home },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  comisPid = child.pid;
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(stdout) : reject(new Error(`bench run exited ${code}: ${stderr}`))));
  });
}

/** The script's stdout from runOrchestrate in this process (shared setup). */
async function orchestrateInProcess(source) {
  const run = await runOrchestrate({ source, displayName: 'bench.mjs', language: 'js', agent, home, sessionKey: 'bench', timeoutMs: 600_000 });
  if (run.public.outcome !== 'success') throw new Error(`bench run failed: ${run.public.failureClass} ${run.public.stderrTail ?? ''}`);
  return run.public.stdout;
}

/**
 * N interleaved pairs in one jailed run. Wall: the subject timed in the jail, the baseline in
 * this process. CPU: the baseline's, this process's around its request; the subject's, the comis
 * process's (all threads; in the shared setup that process also serves the page) between two
 * /mark calls around it, minus an empty /mark pair taken right after (what the two marks
 * themselves cost). The last /mark (a 2-byte body) is timed in the jail too: with that pair's
 * CPU, the fixed part of every call.
 */
async function paired(path, mode) {
  const base = controlUrl(`/baseline?p=${encodeURIComponent(path)}&mode=${mode}`);
  const source = `import { comis_tools } from './comis_tools.js';
const t = [];
const tiny = [];
const mark = () => comis_tools.web_fetch({ url: ${JSON.stringify(controlUrl('/mark'))} });
const subject = async () => {
  await mark();
  const s = performance.now();
  const r = await comis_tools.web_fetch({ url: ${JSON.stringify(url(path))} });
  const ms = performance.now() - s;
  await mark();
  await mark();
  const m = performance.now();
  await mark();
  tiny.push(performance.now() - m);
  if (r.status !== 200) throw new Error('status ' + r.status);
  return ms;
};
const baseline = async () => {
  const r = await comis_tools.web_fetch({ url: ${JSON.stringify(base)} });
  if (r.status !== 200) throw new Error('baseline ' + r.content);
};
for (let i = 0; i < ${calls + 2}; i++) {
  if (i % 2 === 0) { await baseline(); t.push(await subject()); }
  else { const ms = await subject(); await baseline(); t.push(ms); }
}
const round = (xs) => xs.map((x) => Math.round(x * 1e4) / 1e4);
console.log(JSON.stringify({ t: round(t), tiny: round(tiny) }));`;
  baselines.length = 0;
  baselineCpu.length = 0;
  marks.length = 0;
  const stdout = setup === 'shared' ? await orchestrateInProcess(source) : await orchestrateCli(source);
  const out = JSON.parse(stdout.trim().split('\n').pop());
  const subject = out.t.slice(2);
  const baseline = baselines.slice(2);
  if (subject.length !== baseline.length || marks.length !== 4 * (calls + 2)) throw new Error('unpaired');
  const subjectCpu = [];
  const tinyCpu = [];
  for (let i = 2; i < calls + 2; i++) {
    const [s0, s1, c0, c1] = marks.slice(4 * i, 4 * i + 4);
    subjectCpu.push(Math.max(0, s1 - s0 - (c1 - c0)) / 1000);
    tinyCpu.push((c1 - c0) / 1000);
  }
  const baseCpu = baselineCpu.slice(2).map((us) => us / 1000);
  return { subject, baseline, ratios: subject.map((s, i) => s / baseline[i]), subjectCpu, baseCpu, cpuRatios: subjectCpu.map((s, i) => s / baseCpu[i]), tiny: out.tiny.slice(2), tinyCpu };
}

/** In-process median of what the call does to the body besides moving it: sanitize/frame (text, html), the per-chunk clean check and row count (a streamed CSV). */
async function processing(path) {
  const [type, body] = bodies[path];
  const chunks = [];
  for (let off = 0; off < body.length; off += 65536) chunks.push(body.subarray(off, off + 65536));
  const kind = { 'text/csv': 'csv', 'text/html': 'html', 'application/x-ndjson': 'jsonl', 'application/json': 'json' }[type] ?? 'text';
  const step =
    kind === 'csv' && cleanCheck
      ? () => chunks.forEach((c) => cleanCheck(c))
      : extractChunks
        ? // 15,000: the ResultRef threshold (a JSON document over it takes the fast path where the tree has one).
          () => extractChunks(chunks, body.length, kind, type, url(path), 50_000, false, 15_000)
        : () => extractBody(Buffer.concat(chunks), kind, type, url(path), 50_000, false);
  const t = [];
  for (let i = 0; i < Math.min(calls, 10) + 1; i++) {
    const s = performance.now();
    await step();
    t.push(performance.now() - s);
  }
  return median(t.slice(1));
}

// Warm undici, the server and the JIT on every body before anything is measured.
for (const path of Object.keys(bodies)) for (let i = 0; i < 5; i++) await plain(path, 'join');

const f = (n) => `${n.toFixed(2)} ms`;
const loadavg = () => {
  try {
    return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  } catch {
    return '?';
  }
};
process.stdout.write(`setup: ${setup === 'shared' ? 'shared (page server, comis and baseline in this process)' : 'processes (page server, comis orchestrate and the baseline each in its own process)'}; load average before: ${loadavg()}\n`);
const caseOf = { '/page.txt': 'text', '/data.csv': 'csv', '/data.jsonl': 'jsonl', '/data.json': 'json' };
for (const path of Object.keys(caseOf).filter((p) => cases.has(caseOf[p]))) {
  const what = `${path} (${(bodies[path][1].length / MB).toFixed(2)} MB, ${bodies[path][0]})`;
  for (const mode of ['join', 'drain']) {
    const r = await paired(path, mode);
    const label = mode === 'join' ? 'A: undici.request + body.arrayBuffer()' : 'B: undici.request, body drained unjoined';
    process.stdout.write(
      `${what}, baseline ${label}: wall: web_fetch from the jail ${f(median(r.subject))} / plain ${f(median(r.baseline))}, median of ${r.ratios.length} paired ratios ${median(r.ratios).toFixed(2)}x (${path === '/page.txt' ? 'target <= 1.5x' : 'the page target is 1.5x; this body is also written whole to its ResultRef'}); comis-process CPU: ${f(median(r.subjectCpu))} / ${f(median(r.baseCpu))}, paired ${median(r.cpuRatios).toFixed(2)}x; a 2-byte web_fetch from the jail in the same run (the fixed part of a call) ${f(median(r.tiny))} wall / ${f(median(r.tinyCpu))} CPU\n`,
    );
  }
  process.stdout.write(`${what}: in-process sanitize/frame (CSV: per-chunk clean check and row count) of the same body, inside the figures above ${f(await processing(path))}\n`);
}
if (cases.has('html')) {
  const html1 = await paired('/page.html', 'join');
  const ex = [];
  for (let i = 0; i < Math.min(calls, 10); i++) {
    const s = performance.now();
    await extractHtml(html, url('/page.html'));
    ex.push(performance.now() - s);
  }
  process.stdout.write(`/page.html (1 MB HTML): web_fetch from the jail with extraction ${f(median(html1.subject))} / plain ${f(median(html1.baseline))} (extraction dominates; see the next line)\n`);
  process.stdout.write(`extraction (hidden strip + Readability + text, in-process): median ${f(median(ex))}; with sanitize and envelope ${f(await processing('/page.html'))}\n`);
}
if (process.env.BENCH_BEFORE_ROOT) {
  // The comis side alone: each tree's tool on its own results store, the plain request between.
  const trees = {};
  const refDirs = [];
  for (const [name, treeRoot] of [
    ['before', process.env.BENCH_BEFORE_ROOT],
    ['after', root],
  ]) {
    const { webFetchTool } = await import(join(treeRoot, 'dist/lib/tools/web-fetch.js'));
    const { webFetchSchema } = await import(join(treeRoot, 'dist/lib/config/web-schema.js'));
    const { createResultStore } = await import(join(treeRoot, 'dist/lib/resultref/materialize.js'));
    const dir = join(home, `inproc-${name}`);
    mkdirSync(dir);
    refDirs.push(dir);
    const runEnded = new AbortController().signal;
    const store = createResultStore(dir, { budget: { remainingBytes: 1e12 }, ended: runEnded });
    const ctx = {
      runId: name,
      agentId: 'a',
      workspaceReal: home,
      jail: { uid: process.getuid(), gid: process.getgid() },
      jailWorkspace: '/workspace',
      writesDir: dir,
      maxReadBytes: MB,
      budget: store.budget,
      results: store,
      runEnded,
    };
    const config = webFetchSchema.parse({ allowPrivate: [`127.0.0.1:${port}`] });
    trees[name] = async (path) => {
      const r = await webFetchTool(ctx, config, { url: url(path) });
      if (r.status !== 200) throw new Error(`${name}: status ${r.status}`);
    };
  }
  const cpuMs = () => cpuNow() / 1000;
  const gapMs = Number(process.env.BENCH_GAP_MS ?? 0);
  for (const path of ['/page.txt', '/data.csv'].filter((p) => cases.has(p === '/page.txt' ? 'text' : 'csv'))) {
    const got = { before: { w: [], c: [] }, after: { w: [], c: [] }, plain: { w: [], c: [] } };
    const run = { before: () => trees.before(path), after: () => trees.after(path), plain: () => plain(path, 'join') };
    const orders = [
      ['before', 'after', 'plain'],
      ['after', 'plain', 'before'],
      ['plain', 'before', 'after'],
    ];
    const n = Math.max(calls, 100);
    for (let i = 0; i < n + 6; i++) {
      for (const k of orders[i % 3]) {
        // BENCH_GAP_MS: an idle pause before each call, outside its timing, as the jail's round
        // trip leaves between two calls (work a store does after a reply, e.g. its spare ref
        // file, then falls there, not inside the next call as it does back to back).
        if (gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
        const c0 = cpuMs();
        const s = performance.now();
        await run[k]();
        if (i >= 6) {
          got[k].w.push(performance.now() - s);
          got[k].c.push(cpuMs() - c0);
        }
        // The call's ref goes after its timing, as a run keeps its refs until it ends: an unlink of
        // a 1 MB file took up to 0.28 s here while the disk had gigabytes of dirty pages to write back.
        // (A store's spare, the empty file its next ref takes, stays: it is not a ref.)
        for (const dir of refDirs) for (const f of readdirSync(dir)) if (!f.startsWith('.spare-')) rmSync(join(dir, f));
      }
    }
    const paired = (k, m) => median(got[k][m].map((x, i) => x / got.plain[m][i])).toFixed(2);
    process.stdout.write(
      `${path} in process (no jail), ${n} alternated calls: web_fetch tool before ${f(median(got.before.w))} wall / ${f(median(got.before.c))} CPU (paired to A ${paired('before', 'w')}x / ${paired('before', 'c')}x), after ${f(median(got.after.w))} / ${f(median(got.after.c))} (${paired('after', 'w')}x / ${paired('after', 'c')}x), plain A ${f(median(got.plain.w))} / ${f(median(got.plain.c))}\n`,
    );
  }
}
process.stdout.write(`load average after: ${loadavg()}\n`);
control.close();
pageServer?.stdin.end();
rmSync(home, { recursive: true, force: true });
