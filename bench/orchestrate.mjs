#!/usr/bin/env node
// End-to-end `comis orchestrate hello.js` against plain `node hello.js` and against the bare
// bwrap + node command the jail is built from. Median of N runs (BENCH_RUNS, default 15), clean
// environment. Then where the time goes, from an in-process breakdown of one run's phases.
// Run after `npm run build`:  node bench/orchestrate.mjs
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { BARE_SYSTEM_TREE } from './lib/bare-jail.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bin = join(root, 'bin/comis.js');
const runs = Number(process.env.BENCH_RUNS ?? 15);
const home = mkdtempSync(join(tmpdir(), 'comis-bench-'));
const hello = join(home, 'hello.js');
writeFileSync(hello, "console.log('hello');\n");
const env = { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: home, COMIS_HOME: home };

function time(cmd, args) {
  const samples = [];
  for (let i = 0; i < runs + 2; i++) {
    const t = process.hrtime.bigint();
    const r = spawnSync(cmd, args, { env, encoding: 'utf8' });
    const ms = Number(process.hrtime.bigint() - t) / 1e6;
    if (r.status !== 0 || r.stdout !== 'hello\n') throw new Error(`${cmd} ${args.join(' ')}: ${r.status} ${r.stdout} ${r.stderr}`);
    if (i >= 2) samples.push(ms);
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)];
}

const bareBwrap = ['--unshare-all', '--die-with-parent', '--new-session', ...BARE_SYSTEM_TREE, '--tmpfs', '/tmp', '--ro-bind', hello, '/hello.js', process.execPath, '/hello.js'];
const node = time(process.execPath, [hello]);
const bwrap = time('bwrap', bareBwrap);
const comis = time(process.execPath, [bin, 'orchestrate', hello]);
process.stdout.write(`orchestrate hello.js, median of ${runs} runs (ms), node ${process.version}\n`);
process.stdout.write(`node hello.js                 ${node.toFixed(1).padStart(7)}\n`);
process.stdout.write(`bare bwrap + node hello.js    ${bwrap.toFixed(1).padStart(7)}  (${(bwrap / node).toFixed(2)}x node)\n`);
process.stdout.write(`comis orchestrate hello.js    ${comis.toFixed(1).padStart(7)}  (${(comis / node).toFixed(2)}x node, ${(comis / bwrap).toFixed(2)}x bare bwrap)\n`);
process.stdout.write(`target: at most ~150 ms (half of sandbox-runtime's ~300 ms) -> ${comis <= 150 ? 'MET' : 'MISSED'}\n`);

// Where the time goes: COMIS_TIMING=1 makes the command print its phase marks to stderr.
const phases = new Map();
for (let i = 0; i < Math.min(runs, 10); i++) {
  const r = spawnSync(process.execPath, [bin, 'orchestrate', hello], { env: { ...env, COMIS_TIMING: '1' }, encoding: 'utf8' });
  for (const m of r.stderr.matchAll(/^timing (\S+) ([\d.]+)$/gm)) {
    if (!phases.has(m[1])) phases.set(m[1], []);
    phases.get(m[1]).push(Number(m[2]));
  }
}
if (phases.size > 0) {
  process.stdout.write('phase breakdown (median ms, cumulative marks since process start):\n');
  for (const [name, v] of phases) {
    v.sort((a, b) => a - b);
    process.stdout.write(`  ${name.padEnd(22)} ${v[Math.floor(v.length / 2)].toFixed(1).padStart(7)}\n`);
  }
}
rmSync(home, { recursive: true, force: true });
