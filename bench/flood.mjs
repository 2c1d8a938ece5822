#!/usr/bin/env node
// Request floods from a jailed script against the comis process (issue 10, hole 3):
//   1. flood:  10,000 pipelined `read` requests (each reply ~14 KB, under the inline threshold) on one
//              connection that never reads its replies; the comis process's RSS is sampled every 50 ms.
//   0. idle:   a script that only waits: the comis process's own working set, for comparison.
//   2. starve: 120 pipelined `read({limit: 1})` of an 8 MiB file with --timeout-ms 2000; when does the
//              run end, and with which failure class?
// Medians of BENCH_RUNS runs (default 3). Compare builds with --repo (default: this checkout), e.g.
//   node bench/flood.mjs --repo /work/main     (the old code)      node bench/flood.mjs   (this one)
// Run after `npm run build` in the repo measured.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const argRepo = process.argv.indexOf('--repo');
const repo = argRepo !== -1 ? process.argv[argRepo + 1] : join(dirname(fileURLToPath(import.meta.url)), '..');
const bin = join(repo, 'bin/comis.js');
const runs = Number(process.env.BENCH_RUNS ?? 3);

const FLOOD = `import net from 'node:net';
const s = net.createConnection(process.env.COMIS_ORCH_SOCKET);
s.on('error', () => undefined);
s.on('connect', () => {
  s.pause(); // never read a reply
  const frame = (i) => JSON.stringify({ id: i, bearer: process.env.COMIS_CAP_LEASE, method: 'tool.invoke', params: { tool: 'read', args: { path: 'reply.txt' } } }) + '\\n';
  let i = 0;
  const pump = () => { while (i < 10000) { if (!s.write(frame(i++))) return s.once('drain', pump); } console.log('SENT-ALL'); };
  pump();
});
setInterval(() => undefined, 1000);`;

const STARVE = `import net from 'node:net';
const s = net.createConnection(process.env.COMIS_ORCH_SOCKET);
s.on('error', () => undefined);
s.on('data', () => undefined);
s.on('connect', () => {
  for (let i = 0; i < 120; i++) s.write(JSON.stringify({ id: i, bearer: process.env.COMIS_CAP_LEASE, method: 'tool.invoke', params: { tool: 'read', args: { path: 'big.txt', limit: 1 } } }) + '\\n');
});
setInterval(() => undefined, 1000);`;

function rssMb(pid) {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

function once(script, timeoutMs, setup) {
  const home = mkdtempSync(join(tmpdir(), 'comis-bench-flood-'));
  const ws = join(home, 'workspaces', 'default');
  mkdirSync(ws, { recursive: true });
  setup(ws);
  const file = join(home, 'script.mjs');
  writeFileSync(file, script);
  const env = { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: home, COMIS_HOME: home };
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(process.execPath, [bin, 'orchestrate', file, '--json', '--timeout-ms', String(timeoutMs)], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', () => undefined);
    let first;
    let peak = 0;
    const sampler = setInterval(() => {
      const v = rssMb(child.pid);
      if (v === undefined) return;
      first ??= v;
      peak = Math.max(peak, v);
    }, 50);
    child.on('close', () => {
      clearInterval(sampler);
      rmSync(home, { recursive: true, force: true });
      let result = {};
      try {
        result = JSON.parse(out).result ?? {};
      } catch {
        /* no JSON: leave it empty */
      }
      resolve({ wallMs: Date.now() - started, durationMs: result.durationMs, failureClass: result.failureClass, firstRss: first, peakRss: peak });
    });
  });
}

const median = (xs) => {
  const v = xs.filter((x) => typeof x === 'number').sort((a, b) => a - b);
  return v.length ? v[Math.floor(v.length / 2)] : NaN;
};

const IDLE = `setInterval(() => undefined, 1000);`;
const idle = [];
for (let i = 0; i < runs; i++) idle.push(await once(IDLE, 6000, () => undefined));
const flood = [];
for (let i = 0; i < runs; i++) flood.push(await once(FLOOD, 6000, (ws) => writeFileSync(join(ws, 'reply.txt'), 'r'.repeat(13_999) + '\n')));
const starve = [];
for (let i = 0; i < runs; i++) starve.push(await once(STARVE, 2000, (ws) => writeFileSync(join(ws, 'big.txt'), Buffer.alloc(8 * 1024 * 1024, 'abcdefghijklmnopqrstuvwxyz0123456789\n'))));

process.stdout.write(`comis at ${repo}, median of ${runs} runs, node ${process.version}\n`);
process.stdout.write(`idle script (baseline, --timeout-ms 6000): comis RSS peak ${median(idle.map((r) => r.peakRss)).toFixed(0)} MB\n`);
process.stdout.write(`flood (10,000 requests, replies never read, --timeout-ms 6000):\n`);
process.stdout.write(
  `  comis RSS at start ${median(flood.map((r) => r.firstRss)).toFixed(0)} MB, peak ${median(flood.map((r) => r.peakRss)).toFixed(0)} MB; run ended after ${(median(flood.map((r) => r.wallMs)) / 1000).toFixed(1)} s (${flood.map((r) => r.failureClass).join(', ')})\n`,
);
process.stdout.write(`starve (120 pipelined read limit:1 of an 8 MiB file, --timeout-ms 2000):\n`);
process.stdout.write(
  `  run ended after ${(median(starve.map((r) => r.durationMs)) / 1000).toFixed(1)} s (durationMs), process after ${(median(starve.map((r) => r.wallMs)) / 1000).toFixed(1)} s; failure class ${starve.map((r) => r.failureClass).join(', ')}; comis RSS peak ${median(starve.map((r) => r.peakRss)).toFixed(0)} MB\n`,
);
