#!/usr/bin/env node
// ResultRef .sql() benchmark: the hardened, per-query DuckDB child (jailed, as in
// production) against DuckDB called directly in-process, on a generated 200 MB
// JSONL (1M rows: id, name, price 0..1000, tags), query:
//   SELECT id, price FROM read_json_auto(...) WHERE price > 990 ORDER BY price DESC LIMIT 5
// Median of N runs each (default 5; BENCH_RUNS=N), after one warm-up run.
// Prints both medians, their ratio (target: within 1.3x) and the peak RSS of this
// (parent) process, which must not load the payload.
// Env: BENCH_RUNS (default 5), BENCH_ROWS (default 1000000), BENCH_GAP_MS (default 500:
// the script's own work between two .sql() calls, during which the next child boots).
// Run: node bench/resultref-sql.mjs   (bundles src/ with esbuild; no build needed)
// The data file lives under /tmp and is deleted at the end.
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createInterface } from 'node:readline';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const runs = Math.max(5, Number(process.env.BENCH_RUNS ?? 5));
const rows = Number(process.env.BENCH_ROWS ?? 1_000_000);
const gapMs = Number(process.env.BENCH_GAP_MS ?? 500);
const work = mkdtempSync(join(tmpdir(), 'comis-bench-sql-'));
const resultsDir = join(work, 'results');
mkdirSync(resultsDir);
const dataFile = join(resultsDir, 'ref-1.jsonl');
const requireFromRoot = createRequire(join(root, 'package.json'));

function median(samples) {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

try {
  // 1. The payload, written by a separate process so this one never holds it.
  const gen = `
    const fs = require('node:fs');
    const fd = fs.openSync(process.argv[1], 'w');
    const words = ['alpha','bravo','charlie','delta','echo','foxtrot','golf','hotel','india','juliet','kilo','lima'];
    let seed = 42;
    const rnd = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296);
    let buf = [];
    for (let id = 0; id < ${rows}; id++) {
      const name = 'product-' + id + ' ' + Array.from({ length: 19 }, () => words[Math.floor(rnd() * words.length)]).join(' ');
      const price = Math.round(rnd() * 100000) / 100;
      buf.push(JSON.stringify({ id, name, price, tags: [words[id % 12], words[(id * 7) % 12], 'tag-' + (id % 97)] }));
      if (buf.length === 20000) { fs.writeSync(fd, buf.join('\\n') + '\\n'); buf = []; }
    }
    if (buf.length) fs.writeSync(fd, buf.join('\\n') + '\\n');
    fs.closeSync(fd);`;
  const made = spawnSync(process.execPath, ['-e', gen, dataFile], { stdio: ['ignore', 'ignore', 'inherit'] });
  if (made.status !== 0) throw new Error('generating the data failed');
  const bytes = statSync(dataFile).size;

  // 2. comis: bundle the slicer from src/ (Node 20 cannot run .ts) into the scratch dir.
  const esbuild = await import(pathToFileURL(requireFromRoot.resolve('esbuild')).href);
  const bundle = join(work, 'slice.mjs');
  await esbuild.build({
    stdin: {
      contents: "export { runSliceQuery, createSliceQueryRunner } from './run-slice-query.ts';\nexport { spawnQueryProcessPlain } from './spawn-query-process.ts';\n",
      resolveDir: join(root, 'src/lib/resultref/duckdb'),
      loader: 'ts',
    },
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile: bundle,
    logLevel: 'silent',
  });
  // The child program is read beside the module that spawns it (child-program.ts): put it beside the bundle.
  await esbuild.build({ entryPoints: [join(root, 'src/lib/resultref/duckdb/query-child.ts')], format: 'esm', platform: 'node', target: 'node20', outfile: join(work, 'query-child.js'), logLevel: 'silent' });
  const slice = await import(pathToFileURL(bundle).href);
  const apiPkg = requireFromRoot.resolve('@duckdb/node-api/package.json');
  const duck = { scopeDir: dirname(dirname(apiPkg)), version: requireFromRoot(apiPkg).version };
  const resolveDuckDb = () => duck;
  const query = "SELECT id, price FROM read_json_auto('results/ref-1.jsonl') WHERE price > 990 ORDER BY price DESC, id LIMIT 5";

  // DuckDB directly, in-process, in a separate long-lived node (so its memory is not
  // counted below): a fresh in-memory instance per query, as comis makes, with the
  // module imported once. It answers one query per line on stdin, so its samples
  // interleave with comis's and share the same machine load.
  const directSource = `
    const { DuckDBInstance } = await import(${JSON.stringify(pathToFileURL(join(dirname(apiPkg), 'lib/index.js')).href)});
    const q = ${JSON.stringify(query.replace("'results/ref-1.jsonl'", `'${dataFile.replace(/'/g, "''")}'`))};
    const { createInterface } = await import('node:readline');
    for await (const _line of createInterface({ input: process.stdin })) {
      const t = process.hrtime.bigint();
      const instance = await DuckDBInstance.create(':memory:');
      const c = await instance.connect();
      const rows = (await c.runAndReadAll(q)).getRowObjectsJson();
      c.closeSync(); instance.closeSync();
      process.stdout.write(JSON.stringify({ ms: Number(process.hrtime.bigint() - t) / 1e6, rows }) + '\\n');
    }`;
  const directChild = spawn(process.execPath, ['--input-type=module', '-e', directSource], { stdio: ['pipe', 'pipe', 'inherit'] });
  const directLines = createInterface({ input: directChild.stdout })[Symbol.asyncIterator]();
  const direct = async () => {
    directChild.stdin.write('go\n');
    const { value } = await directLines.next();
    const out = JSON.parse(value);
    return { ms: out.ms, rows: out.rows.map((r) => ({ id: Number(r.id), price: Number(r.price) })) };
  };

  const rssBefore = process.resourceUsage().maxRSS;
  // one-shot: runSliceQuery starts a fresh child for the call and waits for it to boot.
  // run: createSliceQueryRunner starts the next (hardened, query-less) child as soon as a
  // query ends, so a script's next .sql() does not wait for node and DuckDB to start; the
  // pause after each of its queries stands for the script's own work in between.
  const modes = [
    { label: 'DuckDB direct, in-process', run: direct },
  ];
  const runners = [];
  const addMode = (label, extra, kind) => {
    if (kind === 'one-shot') {
      modes.push({
        label,
        run: async () => {
          const t = process.hrtime.bigint();
          const answer = await slice.runSliceQuery({ resultsDir, query, timeoutMs: 120_000, resolveDuckDb, ...extra });
          return { ms: Number(process.hrtime.bigint() - t) / 1e6, answer };
        },
      });
    } else {
      const runner = slice.createSliceQueryRunner({ resultsDir, resolveDuckDb, ...extra });
      runners.push(runner);
      modes.push({
        label,
        run: async () => {
          const t = process.hrtime.bigint();
          const answer = await runner.query(query, { timeoutMs: 120_000 });
          const ms = Number(process.hrtime.bigint() - t) / 1e6;
          await new Promise((resolve) => setTimeout(resolve, gapMs));
          return { ms, answer };
        },
      });
    }
  };
  let jailAvailable = true;
  const probe = await slice.runSliceQuery({ resultsDir, query: 'SELECT 1 AS one', resolveDuckDb });
  if (!probe.rows) {
    jailAvailable = false;
    process.stdout.write(`jailed runs unavailable here (${probe.code}: ${probe.error}); timing the plain child only\n`);
  }
  if (jailAvailable) {
    addMode('comis jailed, one-shot runSliceQuery', {}, 'one-shot');
    addMode('comis jailed, run (createSliceQueryRunner)', {}, 'run');
  }
  addMode('comis plain child, one-shot', { spawnQueryProcess: slice.spawnQueryProcessPlain }, 'one-shot');
  addMode('comis plain child, run', { spawnQueryProcess: slice.spawnQueryProcessPlain }, 'run');

  const samples = modes.map(() => []);
  const answers = modes.map(() => undefined);
  try {
    for (let i = 0; i < runs + 1; i++) {
      for (const [k, mode] of modes.entries()) {
        const { ms, answer, rows: directRows } = await mode.run();
        const rowsOut = directRows ?? answer?.rows;
        if (!rowsOut) throw new Error(`${mode.label}: ${answer.code}: ${answer.error}`);
        answers[k] = rowsOut.map((r) => [r.id, r.price]);
        if (i > 0) samples[k].push(ms); // the first round warms the page cache and the runners
      }
    }
  } finally {
    for (const runner of runners) await runner.close();
    directChild.stdin.end();
  }
  const parentPeakRssKb = process.resourceUsage().maxRSS;
  const same = answers.every((a) => JSON.stringify(a) === JSON.stringify(answers[0]));
  const directMedian = median(samples[0]);
  const fmt = (ms) => ms.toFixed(1).padStart(8);
  process.stdout.write(`ResultRef .sql() over ${(bytes / 1e6).toFixed(1)} MB JSONL (${rows} rows), median of ${runs} interleaved runs (ms), node ${process.version}, DuckDB ${duck.version}\n`);
  process.stdout.write(`query: ${query}\n`);
  process.stdout.write(`one-shot = runSliceQuery; run = createSliceQueryRunner with ${gapMs} ms of script work after each query (BENCH_GAP_MS)\n`);
  for (const [k, mode] of modes.entries()) {
    const m = median(samples[k]);
    process.stdout.write(`${mode.label.padEnd(44)} median ${fmt(m)}  min ${fmt(Math.min(...samples[k]))}  max ${fmt(Math.max(...samples[k]))}  ratio ${(m / directMedian).toFixed(2)}x\n`);
  }
  process.stdout.write(`same 5 rows from every path: ${same ? 'yes' : 'NO'}\n`);
  for (const [k, mode] of modes.entries()) {
    if (k === 0 || !mode.label.startsWith(jailAvailable ? 'comis jailed' : 'comis plain')) continue;
    const ratio = median(samples[k]) / directMedian;
    process.stdout.write(`target: ${mode.label} within 1.3x of direct -> ${ratio.toFixed(2)}x ${ratio <= 1.3 ? 'MET' : 'MISSED'}\n`);
  }
  process.stdout.write(`parent peak RSS: ${(parentPeakRssKb / 1024).toFixed(1)} MB (before the queries: ${(rssBefore / 1024).toFixed(1)} MB; payload ${(bytes / 1048576).toFixed(1)} MiB)\n`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
