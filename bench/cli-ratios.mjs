#!/usr/bin/env node
// Startup ratios against `node -e 0`, INTERLEAVED (one of each per round, so a contended machine
// slows all of them alike), median of N rounds (BENCH_RUNS, default 15) after two warm-up rounds:
// `comis --help` (target <= 2x), `comis explain --last` (<= 3x), `comis jail probe --json` with its
// cache warm (<= 3x). The home gets one recorded run first, so explain has something to explain.
// Run after `npm run build`:  node bench/cli-ratios.mjs
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bin = join(root, 'bin/comis.js');
const runs = Number(process.env.BENCH_RUNS ?? 15);
const home = mkdtempSync(join(tmpdir(), 'comis-bench-'));
const env = { PATH: process.env.PATH, HOME: home, COMIS_HOME: home };
const hello = join(home, 'hello.js');
writeFileSync(hello, "console.log('hello');\n");
const seeded = spawnSync(process.execPath, [bin, 'orchestrate', '--quiet', hello], { env, encoding: 'utf8' });
if (seeded.status !== 0) throw new Error(`seeding run failed: ${seeded.stderr}`);

const subjects = [
  ['node -e 0', [process.execPath, '-e', '0'], 1],
  ['comis --help', [process.execPath, bin, '--help'], 2],
  ['comis explain --last', [process.execPath, bin, 'explain', '--last'], 3],
  ['comis jail probe --json (cached)', [process.execPath, bin, 'jail', 'probe', '--json'], 3],
];
const samples = subjects.map(() => []);
for (let i = 0; i < runs + 2; i++) {
  subjects.forEach(([name, [cmd, ...args]], j) => {
    const t = process.hrtime.bigint();
    const r = spawnSync(cmd, args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
    const ms = Number(process.hrtime.bigint() - t) / 1e6;
    if (r.status !== 0) throw new Error(`${name} exited ${r.status}: ${r.stderr}`);
    if (i >= 2) samples[j].push(ms);
  });
}
const median = (s) => [...s].sort((a, b) => a - b)[Math.floor(s.length / 2)];
const m = samples.map(median);
process.stdout.write(`CLI startup, interleaved, median of ${runs} rounds (ms), node ${process.version}\n`);
subjects.forEach(([name, , target], j) => {
  const ratio = m[j] / m[0];
  const verdict = j === 0 ? '' : `  ${ratio.toFixed(2)}x node -e 0 (target <= ${target}x) ${ratio <= target ? 'MET' : 'MISSED'}`;
  process.stdout.write(`${name.padEnd(34)} ${m[j].toFixed(1).padStart(7)}${verdict}\n`);
});
rmSync(home, { recursive: true, force: true });
