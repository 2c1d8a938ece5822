#!/usr/bin/env node
// Where an MCP call's time goes on the comis side, without the jail: BENCH_CALLS (default 2000)
// sequential calls of the edge fixture's `ping`, each layer of the path measured in the same process,
// in rounds (BENCH_ROUNDS, default 3; medians), so load slows every layer alike:
//   direct    the SDK's own Client over its StdioClientTransport (the in-process baseline)
//   clients   comis's client manager (reaped stdio transport under bwrap, call timeout)
//   surface   + the result made data (envelope, sanitizer, ResultRef threshold)
//   dispatch  + the capability-socket dispatcher and the mcp gate (lease, allowlist, tool list, audit)
//   socket    + a real capability socket and a client on it (framing, JSON, one unix-socket hop)
// p50 and CPU time of this process per call (which counts the socket client's side too), and of
// the server's processes per call (their main threads, /proc/<pid>/schedstat).
// bench/mcp-rtt.mjs measures the whole path from inside a jail. Run after `npm run build`.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { createRunMcp } = await import(join(root, 'dist/lib/mcp/run-surface.js'));
const { createDispatcher } = await import(join(root, 'dist/lib/orchestrate/dispatch.js'));
const { LeaseRegistry } = await import(join(root, 'dist/lib/capabilities/lease.js'));
const { listenCapSocket } = await import(join(root, 'dist/lib/capsocket/server.js'));
const { createResultStore } = await import(join(root, 'dist/lib/resultref/materialize.js'));

const calls = Number(process.env.BENCH_CALLS ?? 2000);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const edge = join(root, 'test/fixtures/mcp/edge-server.mjs');
const scratch = mkdtempSync(join(tmpdir(), 'comis-mcp-path-'));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// CPU time of the main threads of some processes, in µs (/proc/<pid>/schedstat: ns on the CPU; 0 where absent).
const threadsCpuUs = (pids) =>
  pids.reduce((sum, pid) => {
    try {
      return sum + Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1000;
    } catch {
      return sum;
    }
  }, 0);

async function time(fn, serverPids) {
  for (let i = 0; i < 200; i++) await fn();
  const lat = [];
  const cpu0 = process.cpuUsage();
  const server0 = threadsCpuUs(serverPids);
  for (let i = 0; i < calls; i++) {
    const t = performance.now();
    await fn();
    lat.push(performance.now() - t);
  }
  const cpu = process.cpuUsage(cpu0);
  return { p50: median(lat) * 1000, cpu: (cpu.user + cpu.system) / calls, serverCpu: (threadsCpuUs(serverPids) - server0) / calls };
}

const direct = new Client({ name: 'bench', version: '0' });
await direct.connect(new StdioClientTransport({ command: process.execPath, args: [edge], stderr: 'ignore' }));
await direct.listTools();

const runEnded = new AbortController();
const results = createResultStore(join(scratch, 'results'), { budget: { remainingBytes: 1e9 }, maxFileBytes: 1e8 });
const mcp = createRunMcp({ servers: { edge: { command: process.execPath, args: [edge], startupTimeoutMs: 30_000, callTimeoutMs: 60_000 } }, allow: ['edge.ping'], home: scratch, results, runEnded: runEnded.signal });
const registry = new LeaseRegistry();
const assembly = registry.mintAssembly('default', ['orch:read', 'orch:mcp'], 3_600_000);
const { bearer } = registry.mintRun(assembly.lease, { runId: 'r-bench', socketId: 'r-bench', ttlMs: 3_600_000 });
let audited = 0;
const handler = createDispatcher({ registry, socketId: 'r-bench', agentId: 'default', surfaces: { write: false }, dropped: new Map(), mcp: mcp.surface, tools: {}, audit: () => audited++ });
await mcp.surface.call('edge', 'ping', {});
const clients = mcp.clients();
const socket = await listenCapSocket({ dir: join(scratch, 'sock'), handler });
const conn = createConnection(socket.path);
await new Promise((resolve) => conn.on('connect', resolve));
let buffered = '';
let pending;
let id = 0;
conn.on('data', (d) => {
  buffered += d;
  let i;
  while ((i = buffered.indexOf('\n')) !== -1) {
    const line = buffered.slice(0, i);
    buffered = buffered.slice(i + 1);
    pending(JSON.parse(line));
  }
});
const frame = () => JSON.stringify({ id: ++id, bearer, method: 'mcp', params: { server: 'edge', tool: 'ping', args: {} } }) + '\n';
const layers = {
  direct: () => direct.callTool({ name: 'ping', arguments: {} }),
  clients: () => clients.callTool('edge', 'ping', {}),
  surface: () => mcp.surface.call('edge', 'ping', {}),
  dispatch: () => handler({ id: 1, bearer, method: 'mcp', params: { server: 'edge', tool: 'ping', args: {} } }),
  socket: () =>
    new Promise((resolve) => {
      pending = resolve;
      conn.write(frame());
    }),
};

try {
  const seen = Object.fromEntries(Object.keys(layers).map((k) => [k, []]));
  const load = [readFileSync('/proc/loadavg', 'utf8').split(' ')[0]];
  // The server's processes: the SDK transport's child for `direct`, comis's (bubblewrap and the server in its pid namespace) for the rest.
  const serverPids = (name) => (name === 'direct' ? [direct.transport.pid] : clients.serverPids('edge'));
  for (let r = 0; r < rounds; r++) for (const [name, fn] of Object.entries(layers)) seen[name].push(await time(fn, serverPids(name)));
  load.push(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]);
  process.stdout.write(`MCP ping through each layer, ${calls} sequential calls, median of ${rounds} rounds (load average ${load.join(' → ')})\n`);
  const base = median(seen.direct.map((x) => x.p50));
  for (const [name, xs] of Object.entries(seen)) {
    const p50 = median(xs.map((x) => x.p50));
    process.stdout.write(
      `  ${name.padEnd(9)} p50 ${p50.toFixed(0).padStart(5)} µs  (${(p50 / base).toFixed(2)}x direct)  cpu/call ${median(xs.map((x) => x.cpu))
        .toFixed(0)
        .padStart(4)} µs  server cpu/call ${median(xs.map((x) => x.serverCpu))
        .toFixed(0)
        .padStart(4)} µs\n`,
    );
  }
} finally {
  conn.destroy();
  await socket.close();
  await direct.close();
  runEnded.abort();
  await mcp.close();
  rmSync(scratch, { recursive: true, force: true });
}
