#!/usr/bin/env node
// Tool-call round trip over the capability socket, measured from INSIDE the jail:
// p50/p99 of N sequential `read` calls of a small file (BENCH_CALLS, default 10000) and
// throughput with 32 calls in flight; compared with a bare unix-socket echo in node
// (no jail, no lease, no gate), measured in the same run (one after the other, not interleaved:
// the jailed side is one orchestrate run). Also the gate alone, labelled: N calls of resume() in a
// run without durability (allowed by the gate, answered durability_off with no I/O). Run after `npm run build`:  node bench/capsocket-rtt.mjs
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const calls = Number(process.env.BENCH_CALLS ?? 10_000);
const home = mkdtempSync(join(tmpdir(), 'comis-rtt-'));

function pct(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}

// 1. Bare echo baseline: a node echo server in its own process, as the capability
// socket's client (the jailed script) is in its own process.
async function echoBaseline() {
  const path = join(home, 'echo.sock');
  const server = spawn(process.execPath, ['-e', `require('net').createServer((s) => s.on('data', (d) => s.write(d))).listen(${JSON.stringify(path)}, () => console.log('ready'))`], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise((r) => server.stdout.once('data', r));
  const sock = createConnection(path);
  await new Promise((r) => sock.on('connect', r));
  let pending = null;
  let buf = '';
  sock.setEncoding('utf8');
  sock.on('data', (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf('\n')) !== -1) {
      buf = buf.slice(i + 1);
      pending();
    }
  });
  const rt = () =>
    new Promise((r) => {
      pending = r;
      sock.write('{"id":1,"method":"echo"}\n');
    });
  const lat = [];
  const s0 = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) {
    const t = process.hrtime.bigint();
    await rt();
    lat.push(Number(process.hrtime.bigint() - t) / 1000);
  }
  const seqPerSec = calls / (Number(process.hrtime.bigint() - s0) / 1e9);
  lat.sort((a, b) => a - b);
  // throughput with 64 in flight
  let done = 0;
  const total = calls * 5;
  const t0 = process.hrtime.bigint();
  await new Promise((resolve) => {
    let sent = 0;
    pending = () => {
      done++;
      if (sent < total) {
        sent++;
        sock.write('{"id":1}\n');
      }
      if (done === total) resolve();
    };
    for (; sent < 64; sent++) sock.write('{"id":1}\n');
  });
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  sock.destroy();
  server.kill();
  return { p50: pct(lat, 0.5), p99: pct(lat, 0.99), perSec: total / secs, seqPerSec };
}

// 2. Through comis, from inside the jail.
function jailed() {
  const ws = join(home, 'workspaces', 'default');
  mkdirSync(ws, { recursive: true });
  writeFileSync(join(ws, 'small.txt'), 'hello\n');
  const script = join(home, 'rtt.mjs');
  writeFileSync(
    script,
    `import { comis_tools } from './comis_tools.js';
const N = ${calls};
await comis_tools.read({ path: 'small.txt' });
const lat = [];
const s0 = process.hrtime.bigint();
for (let i = 0; i < N; i++) {
  const t = process.hrtime.bigint();
  await comis_tools.read({ path: 'small.txt' });
  lat.push(Number(process.hrtime.bigint() - t) / 1000);
}
const seqPerSec = N / (Number(process.hrtime.bigint() - s0) / 1e9);
lat.sort((a, b) => a - b);
const total = N;
const t0 = process.hrtime.bigint();
let next = 0;
async function worker() { while (next < total) { next++; await comis_tools.read({ path: 'small.txt' }); } }
await Promise.all(Array.from({ length: 32 }, worker));
const secs = Number(process.hrtime.bigint() - t0) / 1e9;
// The gate alone: resume() in a run without durability is allowed by the gate (lease, tool table,
// capability, params) and answered durability_off by its tool at once, with no I/O.
const gate = [];
for (let i = 0; i < N; i++) {
  const t = process.hrtime.bigint();
  try { await comis_tools.resume(); } catch (err) { if (err.code !== 'durability_off') throw err; }
  gate.push(Number(process.hrtime.bigint() - t) / 1000);
}
gate.sort((a, b) => a - b);
console.log(JSON.stringify({ p50: lat[Math.floor(N * 0.5)], p99: lat[Math.floor(N * 0.99)], perSec: total / secs, seqPerSec, gateP50: gate[Math.floor(N * 0.5)], gateP99: gate[Math.floor(N * 0.99)] }));
`,
  );
  const r = spawnSync(process.execPath, [join(root, 'bin/comis.js'), 'orchestrate', script, '--timeout-ms', '600000'], {
    env: { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: home, COMIS_HOME: home },
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`orchestrate failed: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

const echo = await echoBaseline();
const jail = jailed();
process.stdout.write(`capability socket round trip, ${calls} sequential calls (µs), node ${process.version}\n`);
process.stdout.write(
  `bare unix-socket echo      p50 ${echo.p50.toFixed(0).padStart(6)}  p99 ${echo.p99.toFixed(0).padStart(6)}  ${Math.round(echo.perSec).toLocaleString('en')} calls/s (64 in flight), ${Math.round(echo.seqPerSec).toLocaleString('en')} calls/s (1 in flight)\n`,
);
process.stdout.write(
  `comis read, from the jail  p50 ${jail.p50.toFixed(0).padStart(6)}  p99 ${jail.p99.toFixed(0).padStart(6)}  ${Math.round(jail.perSec).toLocaleString('en')} calls/s (32 in flight), ${Math.round(jail.seqPerSec).toLocaleString('en')} calls/s (1 in flight)\n`,
);
process.stdout.write(
  `gate alone, from the jail  p50 ${jail.gateP50.toFixed(0).padStart(6)}  p99 ${jail.gateP99.toFixed(0).padStart(6)}  (resume() with durability off: gate + socket, no tool I/O; ratio p50 ${(jail.gateP50 / echo.p50).toFixed(2)}x, p99 ${(jail.gateP99 / echo.p99).toFixed(2)}x)\n`,
);
process.stdout.write(
  `ratio p50 ${(jail.p50 / echo.p50).toFixed(2)}x (target <= 2x) -> ${jail.p50 / echo.p50 <= 2 ? 'MET' : 'MISSED'}; p99 ${(jail.p99 / echo.p99).toFixed(2)}x (target <= 3x) -> ${jail.p99 / echo.p99 <= 3 ? 'MET' : 'MISSED'}\n`,
);
rmSync(home, { recursive: true, force: true });
