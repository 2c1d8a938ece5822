#!/usr/bin/env node
// The server side of a tool call, without the jail: where `capsocket-rtt.mjs`'s gap comes from.
// In THIS process: the real capability socket, dispatch gate (lease, tool table, zod params) and
// `read` tool (confined open of a workspace file, as a run's tool context holds it); and, for the
// baseline, a bare unix-socket echo server. The client is the generated SDK (dist/sdk/comis_tools.js)
// in a child node process: N sequential `read` calls, then N calls with 32 in flight; the echo
// client sends the same frames. Between the two, the floor: the same SDK calls against the real
// capability socket with a handler that answers every call with the same read-shaped result (no
// lease, gate or tool), i.e. what the SDK and the socket's framing cost before comis does anything.
// Echo, floor and comis rounds alternate (BENCH_ROUNDS, default 3), and for
// each the server process's CPU time per call (process.cpuUsage) is reported with the round trip:
// the CPU figure is what a change on the server side moves, whatever the machine's load. On a
// 2-core VM the wake-up of a process on the other core can cost more than the call:
// `taskset -c 1 node bench/capsocket-path.mjs` keeps both processes on one core, as a jailed
// script and comis usually are.
// Run after `npm run build`:  node bench/capsocket-path.mjs
import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// BENCH_ROOT: another checkout's build, to compare two trees with the same bench.
const root = process.env.BENCH_ROOT ?? join(dirname(fileURLToPath(import.meta.url)), '..');
const calls = Number(process.env.BENCH_CALLS ?? 10_000);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const { createDispatcher } = await import(join(root, 'dist/lib/orchestrate/dispatch.js'));
const { LeaseRegistry } = await import(join(root, 'dist/lib/capabilities/lease.js'));
const { listenCapSocket } = await import(join(root, 'dist/lib/capsocket/server.js'));
const { createResultStore } = await import(join(root, 'dist/lib/resultref/materialize.js'));
const { readTool } = await import(join(root, 'dist/lib/tools/read.js'));
const confine = await import(join(root, 'dist/lib/confine/index.js'));

const scratch = mkdtempSync(join(tmpdir(), 'comis-cappath-'));
const ws = join(scratch, 'ws');
mkdirSync(ws);
writeFileSync(join(ws, 'small.txt'), 'hello\n');
// The SDK as the jail gets it (CommonJS).
const sdk = join(scratch, 'comis_tools.cjs');
copyFileSync(join(root, 'dist/sdk/comis_tools.js'), sdk);
const resultsDir = join(scratch, 'results');
mkdirSync(resultsDir);
const runEnded = new AbortController();
const budget = { remainingBytes: 64 * 1024 * 1024 };
const ctx = {
  runId: 'r-bench',
  agentId: 'default',
  workspaceReal: ws,
  // A tree without HeldRoot (before it existed) opens the root per call, as its runs did.
  ...(confine.HeldRoot ? { workspaceRoot: new confine.HeldRoot(ws) } : {}),
  jail: { uid: process.getuid(), gid: process.getgid() },
  jailWorkspace: '/workspace',
  writesDir: join(scratch, 'writes'),
  maxReadBytes: 16 * 1024 * 1024,
  budget,
  results: createResultStore(resultsDir, { budget, maxFileBytes: 16 * 1024 * 1024 }),
  runEnded: runEnded.signal,
};
const registry = new LeaseRegistry();
const assembly = registry.mintAssembly('default', ['orch:read'], 3_600_000);
const { bearer } = registry.mintRun(assembly.lease, { runId: 'r-bench', socketId: 'r-bench', ttlMs: 3_600_000 });
let audited = 0;
const handler = createDispatcher({ registry, socketId: 'r-bench', agentId: 'default', surfaces: { write: false }, dropped: new Map(), tools: { read: (args) => readTool(ctx, args) }, audit: () => audited++ });
const capSocket = await listenCapSocket({ dir: join(scratch, 'sock'), handler });
const floorReply = { path: 'small.txt', content: 'hello', offset: 0, lines: 1, totalLines: 1, bytes: 6, truncated: false };
const floorSocket = await listenCapSocket({ dir: join(scratch, 'floor'), handler: async () => floorReply });

const echoPath = join(scratch, 'echo.sock');
const echo = createServer((s) => s.on('data', (d) => s.write(d)));
await new Promise((r) => echo.listen(echoPath, r));

// The client: the generated SDK against the capability socket, or the same frames against the echo.
const clientSource = `
const N = ${calls};
const mode = process.argv[1];
let rt;
if (mode !== 'echo') {
  const { comis_tools } = (await import('node:module')).createRequire(${JSON.stringify(sdk)})(${JSON.stringify(sdk)});
  rt = () => comis_tools.read({ path: 'small.txt' });
} else {
  const net = await import('node:net');
  const sock = net.createConnection(process.env.COMIS_ORCH_SOCKET);
  await new Promise((r) => sock.on('connect', r));
  sock.setEncoding('utf8');
  const waiting = [];
  let buf = '';
  sock.on('data', (d) => { buf += d; let i; while ((i = buf.indexOf('\\n')) !== -1) { buf = buf.slice(i + 1); waiting.shift()(); } });
  let id = 0;
  rt = () => new Promise((r) => { waiting.push(r); sock.write(JSON.stringify({ id: ++id, bearer: process.env.COMIS_CAP_LEASE, method: 'tool.invoke', params: { tool: 'read', args: { path: 'small.txt' } } }) + '\\n'); });
  process.on('beforeExit', () => sock.destroy());
}
for (let i = 0; i < 200; i++) await rt();
process.stdout.write('go\\n');
await new Promise((r) => process.stdin.once('data', r));
const lat = [];
const s0 = process.hrtime.bigint();
const c0 = process.cpuUsage();
for (let i = 0; i < N; i++) { const t = process.hrtime.bigint(); await rt(); lat.push(Number(process.hrtime.bigint() - t) / 1000); }
const seqPerSec = N / (Number(process.hrtime.bigint() - s0) / 1e9);
const c = process.cpuUsage(c0);
const clientCpu = (c.user + c.system) / N;
lat.sort((a, b) => a - b);
let next = 0;
const t0 = process.hrtime.bigint();
await Promise.all(Array.from({ length: 32 }, async () => { while (next < N) { next++; await rt(); } }));
const perSec = N / (Number(process.hrtime.bigint() - t0) / 1e9);
process.stdout.write(JSON.stringify({ p50: lat[Math.floor(N * 0.5)], p99: lat[Math.floor(N * 0.99)], seqPerSec, perSec, clientCpu }) + '\\n');
process.exit(0);
`;

async function round(mode) {
  const child = spawn(process.execPath, ['--input-type=module', '-e', clientSource, mode], {
    env: { PATH: process.env.PATH, COMIS_ORCH_SOCKET: { comis: capSocket.path, floor: floorSocket.path, echo: echoPath }[mode], COMIS_CAP_LEASE: bearer },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.setEncoding('utf8');
  await new Promise((r) =>
    child.stdout.once('data', (d) => {
      out += d;
      r();
    }),
  );
  // Warm-up done: count this process's CPU from here (the server side of 2N calls).
  const cpu0 = process.cpuUsage();
  child.stdin.end('x');
  child.stdout.on('data', (d) => (out += d));
  await new Promise((r) => child.on('exit', r));
  const cpu = process.cpuUsage(cpu0);
  const result = JSON.parse(out.trim().split('\n').pop());
  return { ...result, cpuPerCall: (cpu.user + cpu.system) / (2 * calls) };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const seen = { echo: [], floor: [], comis: [] };
// BENCH_ONLY=comis or echo: one side only (e.g. under strace -c, to count the server's syscalls per call).
const modes = process.env.BENCH_ONLY ? [process.env.BENCH_ONLY] : ['echo', 'floor', 'comis'];
for (let i = 0; i < rounds; i++) for (const mode of modes) seen[mode].push(await round(mode));
runEnded.abort();
ctx.workspaceRoot?.close();
await capSocket.close();
await floorSocket.close();
echo.close();
rmSync(scratch, { recursive: true, force: true });

const m = (mode, k) => median(seen[mode].map((r) => r[k]));
const loadavg = (await import('node:fs')).readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
process.stdout.write(`capability socket server path, no jail: ${calls} sequential calls + ${calls} at 32 in flight per round, ${rounds} rounds alternated, medians (load ${loadavg})\n`);
const labels = { echo: 'bare echo server  ', floor: 'floor (SDK, fixed)', comis: 'comis read (SDK)  ' };
for (const mode of modes) {
  process.stdout.write(
    `${labels[mode]} p50 ${m(mode, 'p50').toFixed(0).padStart(5)} µs  p99 ${m(mode, 'p99').toFixed(0).padStart(6)} µs  ${Math.round(m(mode, 'seqPerSec')).toLocaleString('en')} calls/s (1 in flight)  ${Math.round(m(mode, 'perSec')).toLocaleString('en')} calls/s (32 in flight)  server CPU ${m(mode, 'cpuPerCall').toFixed(1)} µs/call, client CPU ${m(mode, 'clientCpu').toFixed(1)} µs/call (1 in flight)\n`,
  );
}
const ratio = (mode) => `p50 ${(m(mode, 'p50') / m('echo', 'p50')).toFixed(2)}x, p99 ${(m(mode, 'p99') / m('echo', 'p99')).toFixed(2)}x; server CPU per call ${(m(mode, 'cpuPerCall') / m('echo', 'cpuPerCall')).toFixed(2)}x the echo's`;
if (!process.env.BENCH_ONLY) process.stdout.write(`ratio ${ratio('comis')} (${audited} calls audited); the floor alone: ${ratio('floor')}\n`);
