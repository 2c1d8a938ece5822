#!/usr/bin/env node
// The cost of durable runs (issue 17), through bin/comis (real jail, real store):
//  1. `comis orchestrate hello.js` with durability off vs on: median wall time of N runs each,
//     interleaved (off, on, off, on, ...) so drift in machine load hits both; the ratio on/off.
//  2. checkpoint() latency from inside the jail: p50/p99 of BENCH_CHECKPOINTS sequential calls
//     of a small state (~100 bytes) and of a 512 KiB one.
//  3. replay vs the original run: median wall time of `comis replay <runId>` against the
//     original (a script making 50 read calls).
// Run after `npm run build`, alone on the machine:  node bench/durability.mjs
// Report the medians with `cat /proc/loadavg`.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const runs = Number(process.env.BENCH_RUNS ?? 15);
const checkpoints = Number(process.env.BENCH_CHECKPOINTS ?? 500);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

function home(durable) {
  const h = mkdtempSync(join(tmpdir(), 'comis-durability-'));
  const d = durable ? '    autonomy:\n      durability:\n        enabled: true\n        orchestrateResume: true\n' : '    autonomy:\n      write: false\n';
  writeFileSync(join(h, 'config.yaml'), `agents:\n  default:\n${d}`);
  mkdirSync(join(h, 'workspaces', 'default'), { recursive: true });
  writeFileSync(join(h, 'workspaces', 'default', 'notes.md'), 'hello\n');
  return h;
}

function comis(h, args) {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, [join(root, 'bin', 'comis.js'), ...args], { env: { PATH: process.env.PATH, HOME: h, COMIS_HOME: h }, encoding: 'utf8' });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`comis ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
  return { ms, stdout: r.stdout };
}

const off = home(false);
const on = home(true);
const hello = join(off, 'hello.js');
writeFileSync(hello, "console.log('hello');\n");
// Warm both (the first run compiles the config cache and probes the jail).
comis(off, ['orchestrate', hello]);
comis(on, ['orchestrate', hello]);
const tOff = [];
const tOn = [];
for (let i = 0; i < runs; i++) {
  tOff.push(comis(off, ['orchestrate', hello, '--quiet']).ms);
  tOn.push(comis(on, ['orchestrate', hello, '--quiet']).ms);
}
const mOff = median(tOff);
const mOn = median(tOn);

// checkpoint latency, measured in the jail with performance.now() around each call.
const cpScript = join(on, 'cp.mjs');
writeFileSync(
  cpScript,
  `import { comis_tools } from './comis_tools.js';
const lat = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];
const small = { step: 0, items: ['a', 'b', 'c'], note: 'x'.repeat(60) };
const big = { blob: 'y'.repeat(512 * 1024) };
const out = {};
for (const [name, state, n] of [['small', small, ${checkpoints}], ['512KiB', big, 50]]) {
  const xs = [];
  for (let i = 0; i < n; i++) { const t = performance.now(); await comis_tools.checkpoint(state); xs.push(performance.now() - t); }
  out[name] = { n, p50: lat(xs, 0.5), p99: lat(xs, 0.99) };
}
console.log(JSON.stringify(out));`,
);
const cp = JSON.parse(comis(on, ['orchestrate', cpScript, '--quiet', '--timeout-ms', '120000']).stdout);

// replay vs original.
const reads = join(on, 'reads.mjs');
writeFileSync(reads, `import { comis_tools } from './comis_tools.js';\nlet n = 0;\nfor (let i = 0; i < 50; i++) n += (await comis_tools.read({ path: 'notes.md' })).lines;\nconsole.log(n);\n`);
const tOrig = [];
const tReplay = [];
for (let i = 0; i < Math.max(3, Math.floor(runs / 3)); i++) {
  const r = comis(on, ['orchestrate', reads, '--json']);
  tOrig.push(r.ms);
  const runId = JSON.parse(r.stdout).result.runId;
  tReplay.push(comis(on, ['replay', runId]).ms);
}

const fmt = (x) => x.toFixed(1);
const lines = [
  `load average at the end: ${(await import('node:fs')).readFileSync('/proc/loadavg', 'utf8').trim()}`,
  `hello.js, ${runs} runs each (interleaved): durability off median ${fmt(mOff)} ms, on median ${fmt(mOn)} ms, ratio on/off ${(mOn / mOff).toFixed(3)}x (target <= 1.1x)`,
  `checkpoint() in the jail: small state p50 ${cp.small.p50.toFixed(3)} ms, p99 ${cp.small.p99.toFixed(3)} ms (n=${cp.small.n}); 512 KiB state p50 ${cp['512KiB'].p50.toFixed(2)} ms, p99 ${cp['512KiB'].p99.toFixed(2)} ms (n=${cp['512KiB'].n})`,
  `50 read calls: original median ${fmt(median(tOrig))} ms, replay median ${fmt(median(tReplay))} ms, ratio replay/original ${(median(tReplay) / median(tOrig)).toFixed(3)}x (n=${tOrig.length})`,
];
process.stdout.write(`${lines.join('\n')}\n`);
rmSync(off, { recursive: true, force: true });
rmSync(on, { recursive: true, force: true });
