#!/usr/bin/env node
// ResultRef .sql() benchmark: the hardened, per-query DuckDB child (jailed, as in
// production) against DuckDB called directly in-process, on a generated 200 MB
// JSONL (1M rows: id, name, price 0..1000, tags), query:
//   SELECT id, price FROM read_json_auto(...) WHERE price > 990 ORDER BY price DESC LIMIT 5
// Modes, one sample of each per round, the order rotated every round (paired and
// interleaved, so every mode sees the same machine load):
// - direct: DuckDB in a long-lived node, module imported once, a fresh instance per query;
// - run one-shot (the target): what a run whose script calls .sql() once gets: the
//   run's slicer is created and warmed at run start (pre-flight saw `.sql(`), the
//   script starts (BENCH_STARTUP_MS, default 300: the script jail booting and its
//   read() before the query), then its one .sql() is timed, then the run ends (close);
// - cold one-shot: runSliceQuery, a fresh child started for the call (no pre-warm);
// - run: one slicer for all rounds, BENCH_GAP_MS (default 500) of script work after
//   each query, during which the next child boots;
// - orchestrate (needs `npm run build`): a real `comis orchestrate` run whose script
//   reads the 200 MB file (a ResultRef) and times its own one .sql() call, socket and
//   all: the one-shot as a script sees it, the spare started by pre-flight at run start.
// Prints medians, min/max, the ratio of medians to direct and the median of the
// per-round (paired) ratios; target: run one-shot within 1.3x of direct.
// Env: BENCH_RUNS (default 5), BENCH_ROWS (default 1000000), BENCH_GAP_MS, BENCH_STARTUP_MS,
// BENCH_PLAIN=1 adds the unjailed child.
// Run: node bench/resultref-sql.mjs   (bundles src/ with esbuild; no build needed)
// The data file lives under /tmp and is deleted at the end.
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createInterface } from 'node:readline';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const runs = Math.max(5, Number(process.env.BENCH_RUNS ?? 5));
const rows = Number(process.env.BENCH_ROWS ?? 1_000_000);
const gapMs = Number(process.env.BENCH_GAP_MS ?? 500);
const startupMs = Number(process.env.BENCH_STARTUP_MS ?? 300);
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
  const modes = [{ label: 'DuckDB direct, in-process', run: direct }];
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
    } else if (kind === 'run-one-shot') {
      modes.push({
        label,
        run: async () => {
          // A run: its slicer made and warmed at run start, the script's own start-up, one query, the end.
          const runner = slice.createSliceQueryRunner({ resultsDir, resolveDuckDb, ...extra });
          runner.warm();
          await new Promise((resolve) => setTimeout(resolve, startupMs));
          const t = process.hrtime.bigint();
          const answer = await runner.query(query, { timeoutMs: 120_000 });
          const ms = Number(process.hrtime.bigint() - t) / 1e6;
          await runner.close();
          return { ms, answer };
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
    addMode('comis jailed, run one-shot (pre-warmed)', {}, 'run-one-shot');
    addMode('comis jailed, cold one-shot runSliceQuery', {}, 'one-shot');
    addMode('comis jailed, run (createSliceQueryRunner)', {}, 'run');
  }
  const bin = join(root, 'bin/comis.js');
  if (jailAvailable && existsSync(join(root, 'dist/lib/orchestrate/runner.js'))) {
    const home = join(work, 'home');
    const ws = join(home, 'workspaces', 'default');
    mkdirSync(ws, { recursive: true });
    copyFileSync(dataFile, join(ws, 'data.jsonl'));
    const mb = Math.ceil(bytes / 1048576) + 16;
    writeFileSync(
      join(home, 'config.yaml'),
      `agents:\n  default:\n    autonomy:\n      profile: standard\n      limits:\n        timeoutMs: 300000\n        resultFileMb: ${mb}\n        resultRunMb: ${mb * 2}\n        workspaceMb: ${mb * 4}\n`,
    );
    const script = join(home, 'one-sql.mjs');
    writeFileSync(
      script,
      `import { comis_tools } from './comis_tools.js';\nconst ref = await comis_tools.read({ path: 'data.jsonl' });\nconst t = performance.now();\nconst rows = await ref.sql(${JSON.stringify(query)}.replace('results/ref-1.jsonl', ref.ref));\nconsole.log(JSON.stringify({ ms: performance.now() - t, rows }));\n`,
    );
    modes.push({
      label: 'comis orchestrate, script-timed one .sql()',
      run: async () => {
        const out = await new Promise((resolve, reject) => {
          const c = spawn(process.execPath, [bin, 'orchestrate', script, '--quiet'], { env: { PATH: process.env.PATH, HOME: home, COMIS_HOME: home }, stdio: ['ignore', 'pipe', 'pipe'] });
          let text = '';
          let err = '';
          c.stdout.on('data', (d) => (text += d));
          c.stderr.on('data', (d) => (err += d));
          c.on('close', (code) => (code === 0 ? resolve(text) : reject(new Error(`orchestrate exited ${code}: ${err.slice(0, 500)}`))));
        });
        const { ms, rows: got } = JSON.parse(out);
        return { ms, answer: { rows: got } };
      },
    });
  } else {
    process.stdout.write('orchestrate mode skipped: no jail or no dist/ (run `npm run build`)\n');
  }
  if (!jailAvailable || process.env.BENCH_PLAIN === '1') {
    addMode('comis plain child, run one-shot (pre-warmed)', { spawnQueryProcess: slice.spawnQueryProcessPlain }, 'run-one-shot');
    addMode('comis plain child, cold one-shot', { spawnQueryProcess: slice.spawnQueryProcessPlain }, 'one-shot');
  }

  const samples = modes.map(() => []);
  const answers = modes.map(() => undefined);
  try {
    for (let i = 0; i < runs + 1; i++) {
      // Rotated each round: no mode always runs right after another's cleanup.
      const order = modes.map((_, k) => (k + i) % modes.length);
      for (const k of order) {
        const mode = modes[k];
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
  process.stdout.write(`run one-shot = a fresh slicer per run, warmed at run start, ${startupMs} ms of script start-up (BENCH_STARTUP_MS), one query; run = one slicer, ${gapMs} ms of script work after each query (BENCH_GAP_MS)\n`);
  process.stdout.write(
    `load average at the end: ${loadavg()
      .map((x) => x.toFixed(1))
      .join(' ')} on ${availableParallelism()} CPUs (a shared machine: the paired ratio is the figure to read)\n`,
  );
  const paired = (k) => median(samples[k].map((ms, i) => ms / samples[0][i]));
  for (const [k, mode] of modes.entries()) {
    const m = median(samples[k]);
    process.stdout.write(`${mode.label.padEnd(46)} median ${fmt(m)}  min ${fmt(Math.min(...samples[k]))}  max ${fmt(Math.max(...samples[k]))}  ratio ${(m / directMedian).toFixed(2)}x  paired ${paired(k).toFixed(2)}x\n`);
  }
  process.stdout.write(`same 5 rows from every path: ${same ? 'yes' : 'NO'}\n`);
  const target = modes.findIndex((m) => m.label.startsWith(jailAvailable ? 'comis jailed, run one-shot' : 'comis plain child, run one-shot'));
  const ratio = median(samples[target]) / directMedian;
  process.stdout.write(`target: ${modes[target].label} within 1.3x of direct -> ${ratio.toFixed(2)}x (paired ${paired(target).toFixed(2)}x) ${ratio <= 1.3 ? 'MET' : 'MISSED'}\n`);
  process.stdout.write(`parent peak RSS: ${(parentPeakRssKb / 1024).toFixed(1)} MB (before the queries: ${(rssBefore / 1024).toFixed(1)} MB; payload ${(bytes / 1048576).toFixed(1)} MiB)\n`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
