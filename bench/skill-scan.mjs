#!/usr/bin/env node
// `comis skill scan` benchmark (not a test: it prints figures and asserts nothing).
//   1. throughput: MB/s over the benign development corpus, concatenated and file by file;
//   2. worst cases: each rule's `worstCase` repeated to 1 MB (the ReDoS inputs), scan time;
//   3. CLI: wall time of `comis skill scan` on the whole corpus against `node -e 0`,
//      next to the in-process scan time, and the heavy modules the command loaded (none expected).
// Run after a build (`npm run build` or `npm run build:fast`):  node bench/skill-scan.mjs
// BENCH_RUNS=N sets the CLI repetitions (default 7). BENCH_BEFORE=<module exporting scanSkillContent>
// (e.g. an esbuild bundle of an older src/lib/skills/scanner.ts) measures it in the same run, for a ratio
// that contention on a shared machine cannot skew. BENCH_BEFORE_ROOT=<a built checkout, e.g. of main>
// does both halves against it: its dist scanner in section 1 (unless BENCH_BEFORE is given), and its
// bin/comis.js alternated run by run with this one in section 3 (wall, and user+sys CPU when
// /usr/bin/time exists).
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { closeFinalFence } from './lib/close-fence.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const corpus = process.env.COMIS_SKILL_CORPUS ?? join(root, '..', 'shared', 'corpus', 'skills');
const bin = join(root, 'bin', 'comis.js');
const runs = Number(process.env.BENCH_RUNS ?? 7);
const { scanSkillContent } = await import(join(root, 'dist/lib/skills/scanner.js'));
const { scanSkillPaths } = await import(join(root, 'dist/lib/skills/scan-paths.js'));
const { RULES } = await import(join(root, 'dist/lib/skills/rules.js'));
const { analyzeMarkdown } = await import(join(root, 'dist/lib/skills/markdown-regions.js'));

const out = (line = '') => process.stdout.write(`${line}\n`);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
function time(fn, repeat = 1) {
  const samples = [];
  for (let i = 0; i < repeat; i++) {
    const start = process.hrtime.bigint();
    fn();
    samples.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  return median(samples);
}

if (!existsSync(join(corpus, 'manifest.tsv'))) {
  out(`corpus not found at ${corpus}`);
  process.exit(2);
}

// 1. Throughput over the benign corpus.
const benignDir = join(corpus, 'benign');
const benign = readdirSync(benignDir)
  .sort()
  .map((f) => readFileSync(join(benignDir, f), 'utf8'));
const closed = (text) => closeFinalFence(text, analyzeMarkdown);
const concatenated = benign.map(closed).join('\n\n');
const bytes = Buffer.byteLength(concatenated);
// Warm-up: the JIT, the regexes' compilation, the heap grown to its working size. With a single
// warm-up scan, the median of the next five read 65-76 ms here against 48-49 ms warmed (session
// 16): the figure then measured V8 settling, not the scanner. The CPU time is that of the same
// scans, all threads (V8's helper threads for GC and compilation included).
for (let i = 0; i < 5; i++) scanSkillContent(concatenated);
for (let i = 0; i < 2; i++) for (const text of benign) scanSkillContent(text);
const SAMPLES = 11;
const concatWall = [];
const concatCpu = [];
for (let i = 0; i < SAMPLES; i++) {
  const c0 = process.cpuUsage();
  const s = process.hrtime.bigint();
  scanSkillContent(concatenated);
  concatWall.push(Number(process.hrtime.bigint() - s) / 1e6);
  const used = process.cpuUsage(c0);
  concatCpu.push((used.user + used.system) / 1000);
}
const concatMs = median(concatWall);
const concatCpuMs = median(concatCpu);
const perFileMs = time(() => {
  for (const text of benign) scanSkillContent(text);
}, SAMPLES);
// Same findings either way? Compare the multiset of (rule, matched text); context at file joins may differ.
const key = (f) => `${f.ruleId}\t${f.matchedText}`;
const count = (keys) => keys.reduce((m, k) => m.set(k, (m.get(k) ?? 0) + 1), new Map());
const joined = count(scanSkillContent(concatenated).findings.map(key));
const separate = count(benign.flatMap((t) => scanSkillContent(t).findings.map(key)));
const differing = [...new Set([...joined.keys(), ...separate.keys()])].filter((k) => joined.get(k) !== separate.get(k));
out(`comis skill scan benchmark, node ${process.version}, ${(await import('node:os')).cpus().length} CPUs, load average ${(await import('node:os')).loadavg()[0].toFixed(1)} (a shared machine: compare ratios from one run)`);
out();
out(`1. Throughput over the benign corpus (${benign.length} files, ${(bytes / 1e6).toFixed(2)} MB), warmed, median of ${SAMPLES} (target >= 50 MB/s):`);
out(`   concatenated into one text   ${concatMs.toFixed(0).padStart(6)} ms   ${(bytes / 1e6 / (concatMs / 1000)).toFixed(2)} MB/s`);
out(`   same scans, CPU time         ${concatCpuMs.toFixed(0).padStart(6)} ms   ${(bytes / 1e6 / (concatCpuMs / 1000)).toFixed(2)} MB/s`);
out(`   file by file                 ${perFileMs.toFixed(0).padStart(6)} ms   ${(bytes / 1e6 / (perFileMs / 1000)).toFixed(2)} MB/s`);
out(`   findings, concatenated vs file by file: ${differing.length === 0 ? 'the same' : `${differing.length} (rule, text) pairs differ: ${differing.slice(0, 5).join('; ')}`}`);
const beforeRoot = process.env.BENCH_BEFORE_ROOT;
const beforeModule = process.env.BENCH_BEFORE ?? (beforeRoot ? join(beforeRoot, 'dist/lib/skills/scanner.js') : undefined);
if (beforeModule) {
  const before = await import(beforeModule);
  // The same warm-up as this build had above (1 + 5 + 5 concatenated scans, 5 + 1 passes file by file, one
  // more concatenated), then samples alternated: with a single warm-up scan the before module was timed
  // before V8 had optimised it, and two identical builds read 1.48x apart (148 vs 100 ms, one run).
  for (let i = 0; i < 12; i++) before.scanSkillContent(concatenated);
  for (let i = 0; i < 6; i++) for (const text of benign) before.scanSkillContent(text);
  const beforeSamples = [];
  const nowSamples = [];
  for (let i = 0; i < 7; i++) {
    beforeSamples.push(time(() => before.scanSkillContent(concatenated)));
    nowSamples.push(time(() => scanSkillContent(concatenated)));
  }
  const beforeMs = median(beforeSamples);
  const nowMs = median(nowSamples);
  out(
    `   before (${beforeModule}): ${beforeMs.toFixed(0)} ms ${(bytes / 1e6 / (beforeMs / 1000)).toFixed(2)} MB/s; now ${nowMs.toFixed(0)} ms ${(bytes / 1e6 / (nowMs / 1000)).toFixed(2)} MB/s; speed-up ${(beforeMs / nowMs).toFixed(2)}x (same run)`,
  );
}

// 2. Worst cases: 1 MB of each rule's worst case (the ReDoS test inputs), plus the classic ones.
const ONE_MB = 1024 * 1024;
const fill = (unit) => unit.repeat(Math.ceil(ONE_MB / unit.length)).slice(0, ONE_MB);
const cases = [
  ...RULES.filter((r) => r.kind !== 'artifact' && r.kind !== 'spec').map((r) => [r.id, r.worstCase]),
  ['(unclosed <!--)', '<!--'],
  ['($( repeated)', '$('],
  ['(long curl ... | lines)', `curl -s https://x.example/${'a'.repeat(500)} `],
  ['(near-base64 runs)', 'QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0123456789abcdefghijklmnopqrstuv='],
];
const worst = cases.map(([id, unit]) => {
  const text = fill(unit);
  return {
    id,
    ms: Math.max(
      time(() => scanSkillContent(text)),
      time(() => scanSkillContent(text, { kind: 'script', path: 'run.sh' })),
    ),
  };
});
worst.sort((a, b) => b.ms - a.ms);
out();
out(`2. Worst cases: whole scan of 1 MB of each rule's worst case (slowest of Markdown/script), ${worst.length} inputs:`);
for (const w of worst.slice(0, 12)) out(`   ${w.id.padEnd(28)} ${w.ms.toFixed(0).padStart(6)} ms   ${(1.048576 / (w.ms / 1000)).toFixed(2)} MB/s`);
out(`   ... slowest ${worst[0].ms.toFixed(0)} ms, median ${median(worst.map((w) => w.ms)).toFixed(0)} ms, total ${(worst.reduce((n, w) => n + w.ms, 0) / 1000).toFixed(1)} s`);

// 3. The CLI on the whole corpus, rebuilt as directory trees from the manifest.
const tree = mkdtempSync(join(tmpdir(), 'comis-bench-corpus-'));
const rows = readFileSync(join(corpus, 'manifest.tsv'), 'utf8')
  .trim()
  .split('\n')
  .slice(1)
  .map((l) => l.split('\t'));
for (const [file, , , repo, , sourcePath] of rows) {
  const target = join(tree, repo, sourcePath);
  mkdirSync(dirname(target), { recursive: true });
  copyFileSync(join(corpus, file), target);
}
const home = mkdtempSync(join(tmpdir(), 'comis-bench-home-'));
const env = { PATH: process.env.PATH, HOME: home, COMIS_HOME: home };
function wall(args) {
  const samples = [];
  for (let i = 0; i < runs + 1; i++) {
    const start = process.hrtime.bigint();
    const res = spawnSync(process.execPath, args, { env, cwd: tree, stdio: ['ignore', 'ignore', 'pipe'] });
    if (res.status !== 0 && res.status !== 1) throw new Error(`${args.join(' ')} exited ${res.status}: ${res.stderr}`);
    if (i > 0) samples.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  return median(samples);
}
const nodeMs = wall(['-e', '0']);
const oneFile = join(tree, rows[0][3], rows[0][5]);
const oneMs = wall([bin, 'skill', 'scan', oneFile, '--format', 'json', '--fail-on', 'never']);
const cliMs = wall([bin, 'skill', 'scan', '.', '--format', 'json', '--fail-on', 'never']);
let report;
const inProcessMs = time(() => {
  report = scanSkillPaths({ paths: ['.'], cwd: tree, root: tree, failOn: 'never' });
}, 3);
const traceFile = join(home, 'trace.txt');
spawnSync(process.execPath, [bin, 'skill', 'scan', '.', '--format', 'sarif'], {
  env: { ...env, NODE_OPTIONS: `--import=${join(root, 'test/helpers/trace-imports.mjs')}`, COMIS_TRACE_IMPORTS: traceFile },
  cwd: tree,
  stdio: 'ignore',
});
const heavy = existsSync(traceFile)
  ? readFileSync(traceFile, 'utf8')
      .split('\n')
      .filter((m) => /better-sqlite3|\/ink\/|\/react\/|undici|duckdb|\/pino\//.test(m))
  : ['(trace missing)'];
out();
out(`3. CLI on the whole corpus (${report.summary.files} files), median of ${runs} runs:`);
out(`   node -e 0                              ${nodeMs.toFixed(0).padStart(6)} ms`);
out(`   comis skill scan <one SKILL.md>        ${oneMs.toFixed(0).padStart(6)} ms   (${(oneMs / nodeMs).toFixed(2)}x node -e 0)`);
out(`   comis skill scan . --format json       ${cliMs.toFixed(0).padStart(6)} ms   (${(cliMs / nodeMs).toFixed(2)}x node -e 0)`);
out(`   in-process scan of the same tree       ${inProcessMs.toFixed(0).padStart(6)} ms`);
out(`   start-up + output overhead             ${(cliMs - nodeMs - inProcessMs).toFixed(0).padStart(6)} ms   (wall - node - scan)`);
out(`   heavy modules loaded (SQLite, Ink, DuckDB, undici, pino): ${heavy.length === 0 ? 'none' : heavy.join(', ')}`);
if (beforeRoot) {
  // Alternated run by run: before, this build, node -e 0; medians of BENCH_RUNS.
  const timeBin = existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined;
  const measure = (args) => {
    const start = process.hrtime.bigint();
    const res = timeBin ? spawnSync(timeBin, ['-f', '%U %S', process.execPath, ...args], { env, cwd: tree, stdio: ['ignore', 'ignore', 'pipe'] }) : spawnSync(process.execPath, args, { env, cwd: tree, stdio: ['ignore', 'ignore', 'pipe'] });
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    const cpu = timeBin ? res.stderr.toString().trim().split('\n').at(-1).split(' ').map(Number) : [NaN, NaN];
    return { ms, cpuMs: (cpu[0] + cpu[1]) * 1000 };
  };
  const subjects = [
    ['node -e 0', ['-e', '0']],
    ['before, one SKILL.md', [join(beforeRoot, 'bin/comis.js'), 'skill', 'scan', oneFile, '--format', 'json', '--fail-on', 'never']],
    ['now, one SKILL.md', [bin, 'skill', 'scan', oneFile, '--format', 'json', '--fail-on', 'never']],
    ['before, corpus', [join(beforeRoot, 'bin/comis.js'), 'skill', 'scan', '.', '--format', 'json', '--fail-on', 'never']],
    ['now, corpus', [bin, 'skill', 'scan', '.', '--format', 'json', '--fail-on', 'never']],
  ];
  const samples = subjects.map(() => []);
  for (let i = 0; i < runs + 1; i++) subjects.forEach(([, args], k) => (i > 0 ? samples[k].push(measure(args)) : measure(args)));
  const wallOf = (k) => median(samples[k].map((x) => x.ms));
  const cpuOf = (k) => median(samples[k].map((x) => x.cpuMs));
  out();
  out(`   alternated with ${beforeRoot} (${runs} runs each, medians; CPU = user+sys${timeBin ? '' : ', unavailable'}):`);
  subjects.forEach(([name], k) =>
    out(`   ${name.padEnd(24)} wall ${wallOf(k).toFixed(0).padStart(6)} ms (${(wallOf(k) / wallOf(0)).toFixed(2)}x node)   CPU ${cpuOf(k).toFixed(0).padStart(6)} ms (${(cpuOf(k) / cpuOf(0)).toFixed(2)}x node)`),
  );
  out(
    `   now / before: one file wall ${(wallOf(2) / wallOf(1)).toFixed(2)}x CPU ${(cpuOf(2) / cpuOf(1)).toFixed(2)}x; corpus wall ${(wallOf(4) / wallOf(3)).toFixed(2)}x CPU ${(cpuOf(4) / cpuOf(3)).toFixed(2)}x; load average ${(await import('node:os')).loadavg()[0].toFixed(1)}`,
  );
}
rmSync(tree, { recursive: true, force: true });
rmSync(home, { recursive: true, force: true });
