#!/usr/bin/env node
// The jailed script alone: `node hello.js` started through spawnJail with the mounts an
// orchestrate run has (rw workspace, read-only results and SDK dirs, the capability socket; as
// root under a 0700 home, so they are staged) and its deadline supervisor, against a bare
// bwrap + node on the same script. Wall time per spawn (spawn to `exited`) and CPU per spawn
// (user + sys of every reaped descendant, from /proc/self/stat), interleaved, medians; for the
// jailed subjects also this process's own CPU per spawn (the comis side: plan, pipes, spawn, reaping)
// and the median time the synchronous spawnJail() call holds the event loop.
// A/B against another build: BENCH_BASE_DIST=/path/to/other/dist adds it as a third subject.
// Run after `npm run build`:  node bench/jail-chain.mjs   (BENCH_RUNS=N, default 25)
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { BARE_SYSTEM_TREE } from './lib/bare-jail.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const runs = Number(process.env.BENCH_RUNS ?? 25);
const dists = [['this build', join(root, 'dist')], ...(process.env.BENCH_BASE_DIST ? [['base build', process.env.BENCH_BASE_DIST]] : [])];
const jails = [];
for (const [name, dist] of dists) jails.push([name, await import(join(dist, 'lib/jail/spawn.js'))]);
const jail = jails[0][1];
const provider = jail.detectSandboxProvider();
if (provider.provider !== 'bwrap' || provider.problem) throw new Error(`no working jail: ${provider.problem?.message ?? provider.provider}`);
const node = jail.resolveInterpreter('node');

// A home like ~/.comis: 0700, the run's directories inside it.
const base = mkdtempSync(join(tmpdir(), 'comis-bench-chain-'));
const home = join(base, 'home');
const ws = join(home, 'ws');
const results = join(home, 'run', 'results');
const sdk = join(home, 'run', 'sdk');
for (const d of [ws, results, sdk, join(home, 'sock')]) mkdirSync(d, { recursive: true });
chmodSync(home, 0o700);
writeFileSync(join(sdk, 'hello.js'), "console.log('hello');\n");
chmodSync(base, 0o711);
const sock = join(home, 'sock', 'cap.sock');
const server = createServer((c) => c.destroy());
await new Promise((r) => server.listen(sock, r));
const hostUid = process.getuid() === 0 ? jail.deriveJailUid(ws) : process.getuid();
jail.prepareWritableDir(ws, hostUid);
const bareHello = join(base, 'hello.js');
writeFileSync(bareHello, "console.log('hello');\n");

/** user + sys of reaped children so far, ms (fields 16 and 17 of /proc/self/stat, clock ticks of 10 ms). */
function childCpuMs() {
  const f = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
  return (Number(f[13]) + Number(f[14])) * 10;
}

const syncMs = new Map();
async function jailed(api) {
  const s0 = performance.now();
  const p = api.spawnJail({
    command: [node.jailPath, ...node.args, '/run/comis/hello.js'],
    mounts: [
      ...node.mounts,
      { kind: 'rw', source: ws, target: '/workspace' },
      { kind: 'ro', source: results, target: '/workspace/results' },
      { kind: 'ro', source: sdk, target: '/run/comis' },
      { kind: 'socket', source: sock, target: '/run/comis-cap/cap.sock' },
    ],
    cwd: '/workspace',
    env: { PATH: '/usr/bin:/bin', HOME: '/tmp' },
    limits: jail.DEFAULT_JAIL_LIMITS,
    hostUid,
    stdin: 'ignore',
    deadlineMs: 60_000,
  });
  if (!syncMs.has(api)) syncMs.set(api, []);
  syncMs.get(api).push(performance.now() - s0);
  let out = '';
  p.stdout.on('data', (d) => (out += d));
  p.stderr.resume();
  const exit = await p.exited;
  if (exit.code !== 0 || out !== 'hello\n') throw new Error(`jailed node exited ${exit.code}: ${out}`);
}

function bare() {
  return new Promise((resolve, reject) => {
    // --as-pid-1 (as the jail has it): without it bubblewrap's own init in the pid namespace is reaped by
    // nobody we wait for, and the script's CPU would not show in ours.
    const args = ['--unshare-all', '--die-with-parent', '--new-session', '--as-pid-1', ...BARE_SYSTEM_TREE, '--tmpfs', '/tmp', '--ro-bind', bareHello, '/hello.js', node.jailPath, '/hello.js'];
    const p = spawn(provider.binary, args, { env: {}, stdio: 'ignore' });
    p.on('error', reject);
    p.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`bare bwrap exited ${code}`))));
  });
}

const subjects = [['bare bwrap + node', bare], ...jails.map(([name, api]) => [`spawnJail (${name})`, () => jailed(api)])];
const wall = subjects.map(() => []);
const cpu = subjects.map(() => 0);
const ownCpu = subjects.map(() => 0);
try {
  for (let i = 0; i < runs + 2; i++) {
    for (const [j, [, fn]] of subjects.entries()) {
      const c0 = childCpuMs();
      const o0 = process.cpuUsage();
      const t0 = process.hrtime.bigint();
      await fn();
      if (i < 2) continue;
      wall[j].push(Number(process.hrtime.bigint() - t0) / 1e6);
      cpu[j] += childCpuMs() - c0;
      const o = process.cpuUsage(o0);
      ownCpu[j] += (o.user + o.system) / 1000;
    }
  }
} finally {
  server.close();
  rmSync(base, { recursive: true, force: true });
}
const median = (s) => [...s].sort((a, b) => a - b)[Math.floor(s.length / 2)];
const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
process.stdout.write(`jailed node hello.js, ${runs} interleaved rounds, ${process.getuid() === 0 ? 'root' : 'unprivileged'}, node ${process.version}, load ${load}\n`);
const w0 = median(wall[0]);
for (const [j, [name]] of subjects.entries()) {
  const w = median(wall[j]);
  const api = j === 0 ? undefined : jails[j - 1][1];
  const own = j === 0 ? '' : `  comis cpu ${(ownCpu[j] / runs).toFixed(1).padStart(5)} ms/spawn  spawnJail() sync median ${median(syncMs.get(api).slice(2)).toFixed(1)} ms`;
  process.stdout.write(`${name.padEnd(28)} wall median ${w.toFixed(1).padStart(7)} ms (${(w / w0).toFixed(2)}x bare)  cpu ${(cpu[j] / runs).toFixed(1).padStart(6)} ms/spawn${own}\n`);
}
