#!/usr/bin/env node
// Startup benchmark: how long `comis --version`, `comis --help`, `comis jail probe --json`
// and `comis sdk emit --check` take, against bare `node -e 0`. Median of N runs each
// (default 15; BENCH_RUNS=N), clean environment (no NODE_OPTIONS, no NODE_EXTRA_CA_CERTS).
// Run after `npm run build`:  node bench/cli-start.mjs
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bin = join(root, 'bin/comis.js');
const runs = Number(process.env.BENCH_RUNS ?? 15);
const home = mkdtempSync(join(tmpdir(), 'comis-bench-'));
const sdkDir = join(home, 'sdk');
const env = { PATH: process.env.PATH, HOME: home, COMIS_HOME: home };
spawnSync(process.execPath, [bin, 'sdk', 'emit', '--out', sdkDir], { env });

function time(args) {
  const samples = [];
  for (let i = 0; i < runs + 2; i++) {
    const start = process.hrtime.bigint();
    const res = spawnSync(process.execPath, args, { env, stdio: ['ignore', 'ignore', 'pipe'] });
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    if (res.status !== 0 && res.status !== 1) throw new Error(`${args.join(' ')} exited ${res.status}: ${res.stderr}`);
    if (i >= 2) samples.push(ms); // two warm-up runs fill the page cache
  }
  samples.sort((a, b) => a - b);
  const median = samples[Math.floor(samples.length / 2)];
  return { median, min: samples[0], max: samples[samples.length - 1] };
}

const cases = [
  ['node -e 0', ['-e', '0']],
  ['comis --version', [bin, '--version']],
  ['comis --help', [bin, '--help']],
  ['comis sdk emit --check', [bin, 'sdk', 'emit', '--check', sdkDir]],
  ['comis jail probe --json', [bin, 'jail', 'probe', '--json']],
];
const results = cases.map(([name, args]) => ({ name, ...time(args) }));
const base = results[0].median;
process.stdout.write(`CLI start, median of ${runs} runs (ms), node ${process.version}\n`);
for (const r of results) {
  process.stdout.write(`${r.name.padEnd(26)} median ${r.median.toFixed(1).padStart(7)}  min ${r.min.toFixed(1).padStart(7)}  max ${r.max.toFixed(1).padStart(7)}  ratio ${(r.median / base).toFixed(2)}x\n`);
}
const version = results[1].median / base;
process.stdout.write(`target: comis --version within 2.5x of node -e 0 -> ${version.toFixed(2)}x ${version <= 2.5 ? 'MET' : 'MISSED'}\n`);
rmSync(home, { recursive: true, force: true });
