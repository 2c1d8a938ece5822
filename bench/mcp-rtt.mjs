#!/usr/bin/env node
// MCP tool-call round trip: BENCH_CALLS (default 1000) sequential calls of the edge fixture's
// trivial `ping` tool
//   (a) from INSIDE the jail, through the capability socket, the gate and comis's own MCP client;
//   (b) from an in-process SDK client straight to the same server over stdio (no jail, no gate).
// Prints p50/p99 of each, the p50 ratio (target <= 2x), and the server start cost per run
// (the first call of a run, which starts the server, minus a warm call). Run after `npm run build`:
//   node bench/mcp-rtt.mjs
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const calls = Number(process.env.BENCH_CALLS ?? 1000);
const runs = Number(process.env.BENCH_RUNS ?? 5);
const edge = join(root, 'test/fixtures/mcp/edge-server.mjs');
const home = mkdtempSync(join(tmpdir(), 'comis-mcp-rtt-'));

const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (ms) => `${(ms * 1000).toFixed(0)} µs`;

// (b) in-process SDK client
async function inProcess() {
  const client = new Client({ name: 'bench', version: '0' });
  const t0 = performance.now();
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [edge], stderr: 'ignore' }));
  await client.listTools();
  const start = performance.now() - t0;
  for (let i = 0; i < 50; i++) await client.callTool({ name: 'ping', arguments: {} });
  const lat = [];
  for (let i = 0; i < calls; i++) {
    const t = performance.now();
    await client.callTool({ name: 'ping', arguments: {} });
    lat.push(performance.now() - t);
  }
  await client.close();
  return { lat: lat.sort((a, b) => a - b), start };
}

// (a) from inside the jail
writeFileSync(
  join(home, 'config.yaml'),
  `mcp:\n  servers:\n    edge:\n      command: ${JSON.stringify(process.execPath)}\n      args: [${JSON.stringify(edge)}]\nagents:\n  default:\n    autonomy:\n      mcp:\n        allow: [edge.ping]\n`,
);
const script = join(home, 'rtt.mjs');
writeFileSync(
  script,
  `import net from 'node:net';
const s = net.createConnection(process.env.COMIS_ORCH_SOCKET);
await new Promise((r) => s.on('connect', r));
let buf = '', pending;
s.on('data', (d) => { buf += d; let i; while ((i = buf.indexOf('\\n')) !== -1) { const line = buf.slice(0, i); buf = buf.slice(i + 1); pending(JSON.parse(line)); } });
let id = 0;
const call = () => new Promise((r) => { pending = r; s.write(JSON.stringify({ id: ++id, bearer: process.env.COMIS_CAP_LEASE, method: 'mcp', params: { server: 'edge', tool: 'ping', args: {} } }) + '\\n'); });
let t = performance.now();
const first = await call();
if (!first.ok) throw new Error(JSON.stringify(first));
const firstMs = performance.now() - t;
for (let i = 0; i < 50; i++) await call();
const lat = [];
for (let i = 0; i < ${calls}; i++) { t = performance.now(); await call(); lat.push(performance.now() - t); }
s.destroy();
console.log(JSON.stringify({ firstMs, lat }));`,
);
function jailed() {
  const res = spawnSync(process.execPath, [join(root, 'bin/comis.js'), 'orchestrate', script, '--quiet', '--timeout-ms', '600000'], { env: { ...process.env, COMIS_HOME: home }, encoding: 'utf8', maxBuffer: 64 << 20 });
  if (res.status !== 0) throw new Error(`orchestrate failed: ${res.stderr}`);
  const out = JSON.parse(res.stdout);
  return { lat: out.lat.sort((a, b) => a - b), firstMs: out.firstMs };
}

try {
  const inproc = [];
  const jail = [];
  for (let r = 0; r < runs; r++) {
    inproc.push(await inProcess());
    jail.push(jailed());
  }
  const p50In = median(inproc.map((x) => pct(x.lat, 0.5)));
  const p99In = median(inproc.map((x) => pct(x.lat, 0.99)));
  const p50Jail = median(jail.map((x) => pct(x.lat, 0.5)));
  const p99Jail = median(jail.map((x) => pct(x.lat, 0.99)));
  const startIn = median(inproc.map((x) => x.start));
  const startRun = median(jail.map((x) => x.firstMs - pct(x.lat, 0.5)));
  process.stdout.write(`MCP ping, ${calls} sequential calls, median of ${runs} runs\n`);
  process.stdout.write(`  in-process SDK client : p50 ${fmt(p50In)}  p99 ${fmt(p99In)}\n`);
  process.stdout.write(`  jail → socket → comis : p50 ${fmt(p50Jail)}  p99 ${fmt(p99Jail)}\n`);
  process.stdout.write(`  p50 ratio (jail / in-process): ${(p50Jail / p50In).toFixed(2)}x (target <= 2x)\n`);
  process.stdout.write(`  server start per run (first call minus a warm one): ${startRun.toFixed(1)} ms  (in-process connect + listTools: ${startIn.toFixed(1)} ms)\n`);
} finally {
  rmSync(home, { recursive: true, force: true });
}
