#!/usr/bin/env node
// Jail start benchmark: how long one `node -e 0` takes when started through
// spawnJail (the full hardened jail: prlimit, setpriv when root, stage binds
// when needed, bwrap with seccomp, synthetic /etc, rlimits), through a bare
// bwrap with minimal flags, and as a plain child process. Median of N runs
// each (default 25; BENCH_RUNS=N) after two warm-up runs, every child with a
// clean environment (no NODE_OPTIONS, no NODE_EXTRA_CA_CERTS).
// Run after `npm run build:fast`:  node bench/jail-start.mjs
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { BARE_SYSTEM_TREE } from './lib/bare-jail.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const jail = await import(join(root, 'dist/lib/jail/spawn.js'));
const runs = Math.max(20, Number(process.env.BENCH_RUNS ?? 25));

const t0 = process.hrtime.bigint();
const provider = jail.detectSandboxProvider();
const detectMs = Number(process.hrtime.bigint() - t0) / 1e6;
if (provider.provider !== 'bwrap' || provider.problem) {
  process.stderr.write(`no working jail: ${provider.problem?.message ?? provider.provider}\n`);
  process.exit(1);
}
const node = jail.resolveInterpreter('node');
// Two workspaces: one the jail uid can reach, and (as root) one under a 0700
// directory like /root/.comis, whose bind must be staged in a private mount namespace.
const base = mkdtempSync(join(tmpdir(), 'comis-bench-'));
const open = join(base, 'open');
const locked = join(base, 'locked');
mkdirSync(join(open, 'ws'), { recursive: true });
mkdirSync(join(locked, 'ws'), { recursive: true });
chmodSync(base, 0o711);
chmodSync(open, 0o711);
chmodSync(locked, 0o700);
const workspaces = {};
for (const [name, dir] of [
  ['open', join(open, 'ws')],
  ['staged', join(locked, 'ws')],
]) {
  const hostUid = process.getuid() === 0 ? jail.deriveJailUid(dir) : process.getuid();
  jail.prepareWritableDir(dir, hostUid);
  workspaces[name] = { dir, hostUid };
}

function child(file, args) {
  return new Promise((resolve, reject) => {
    const p = spawn(file, args, { env: {}, stdio: 'ignore' });
    p.on('error', reject);
    p.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${file} exited ${code}`))));
  });
}

async function jailed(ws) {
  const p = jail.spawnJail({
    command: [node.jailPath, ...node.args, '-e', '0'],
    mounts: [...node.mounts, { kind: 'rw', source: ws.dir, target: '/workspace' }],
    cwd: '/workspace',
    env: { PATH: '/usr/bin:/bin' },
    limits: jail.DEFAULT_JAIL_LIMITS,
    hostUid: ws.hostUid,
  });
  p.stdout.resume();
  p.stderr.resume();
  const exit = await p.exited;
  if (exit.code !== 0) throw new Error(`jailed node exited ${exit.code}`);
}

const bareBwrap = () => child(provider.binary, ['--unshare-all', '--die-with-parent', ...BARE_SYSTEM_TREE, node.jailPath, '-e', '0']);
const plain = () => child(node.hostPath, ['-e', '0']);

async function time(fn) {
  const samples = [];
  for (let i = 0; i < runs + 2; i++) {
    const start = process.hrtime.bigint();
    await fn();
    if (i >= 2) samples.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  samples.sort((a, b) => a - b);
  return { median: samples[Math.floor(samples.length / 2)], min: samples[0], max: samples[samples.length - 1] };
}

try {
  const cases = [
    ['node -e 0', await time(plain)],
    ['bare bwrap + node -e 0', await time(bareBwrap)],
    ['spawnJail node -e 0', await time(() => jailed(workspaces.open))],
    ...(process.getuid() === 0 ? [['  same, staged workspace', await time(() => jailed(workspaces.staged))]] : []),
  ];
  const basis = cases[0][1].median;
  process.stdout.write(`Jail start, median of ${runs} runs (ms), node ${process.version}, ${process.getuid() === 0 ? 'root (setpriv to an unprivileged uid)' : 'unprivileged'}\n`);
  process.stdout.write(`provider detection incl. smoke test (once per process): ${detectMs.toFixed(1)} ms\n`);
  for (const [name, r] of cases) {
    process.stdout.write(`${name.padEnd(26)} median ${r.median.toFixed(1).padStart(7)}  min ${r.min.toFixed(1).padStart(7)}  max ${r.max.toFixed(1).padStart(7)}  ratio ${(r.median / basis).toFixed(2)}x\n`);
  }
  const [, bare, full] = cases.map((c) => c[1].median);
  process.stdout.write(`spawnJail vs bare bwrap: ${(full / bare).toFixed(2)}x (+${(full - bare).toFixed(1)} ms for seccomp, rlimits, uid drop, synthetic /etc, binds)\n`);
} finally {
  rmSync(base, { recursive: true, force: true });
}
