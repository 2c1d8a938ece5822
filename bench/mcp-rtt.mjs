#!/usr/bin/env node
// MCP tool-call round trip: BENCH_CALLS (default 1000) sequential calls of the edge fixture's
// trivial `ping` tool
//   (a) from INSIDE the jail, as a script makes them: `comis_tools.mcp.edge.ping({})` through the
//       generated SDK, the capability socket, the gate, comis's own MCP client and the result
//       envelope;
//   (b) from an in-process SDK client straight to the same server over stdio (no jail, no gate),
//       in a node process of its own started afresh for each run, as comis is
//       (bench/lib/mcp-client-child.mjs): both sides begin each run with cold code and make the same
//       calls. BENCH_BASELINE=shared keeps the client in this bench process instead (the figure of
//       sessions 5-7: from the second run on, its code is the one the earlier runs optimized).
// Both sides are warmed, then measured in alternating blocks of BENCH_BLOCK calls (default 100)
// in the same run (bench/lib/turns.mjs): block b of (b), then block b of (a), and so on. The figure
// is the median over the blocks of the paired ratio p50(a) / p50(b) (target <= 2x); the pooled
// p50/p99 of each side are printed too. BENCH_RUNS (default 3) repeats the whole with a fresh
// comis run (and a fresh server on each side); the paired ratios of every run are pooled. Also
// the server start cost per run (the first call of a run, which starts the server, minus a warm
// call). And the CPU time per call of each process (the in-process client and its server; the jailed
// script, comis's main thread and the server comis started), medians over the blocks: the work done,
// which the machine's load moves far less than the latency. Run after `npm run build`:  node bench/mcp-rtt.mjs
import { fork } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { startClient, threadCpuUs } from './lib/mcp-client-child.mjs';
import { JAIL_TURNS_SOURCE, median, pct, startTurnedRun } from './lib/turns.mjs';

// BENCH_ROOT: another checkout's build (its bin/comis.js), to compare two trees with the same bench.
const root = process.env.BENCH_ROOT ?? join(dirname(fileURLToPath(import.meta.url)), '..');
const calls = Number(process.env.BENCH_CALLS ?? 1000);
const block = Math.min(calls, Number(process.env.BENCH_BLOCK ?? 100));
const blocks = Math.max(1, Math.round(calls / block));
const runs = Number(process.env.BENCH_RUNS ?? 3);
const warm = 50;
const sharedBaseline = process.env.BENCH_BASELINE === 'shared';
const edge = join(dirname(fileURLToPath(import.meta.url)), '../test/fixtures/mcp/edge-server.mjs');
const home = mkdtempSync(join(tmpdir(), 'comis-mcp-rtt-'));
const workspace = join(home, 'workspaces', 'default');
mkdirSync(workspace, { recursive: true });

const fmt = (ms) => `${(ms * 1000).toFixed(0)} µs`;
// The host pid of the edge server comis started for its run (under its bubblewrap): the edge
// server process that is not the in-process client's own.
const edgeServerPid = (not) => {
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === not) continue;
    try {
      const argv = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0');
      if (argv[0] === process.execPath && argv[1] === edge) return Number(name);
    } catch {
      // gone meanwhile
    }
  }
  return undefined;
};
const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');

writeFileSync(
  join(home, 'config.yaml'),
  `mcp:\n  servers:\n    edge:\n      command: ${JSON.stringify(process.execPath)}\n      args: [${JSON.stringify(edge)}]\nagents:\n  default:\n    autonomy:\n      mcp:\n        allow: [edge.ping]\n`,
);
const script = join(home, 'rtt.mjs');
writeFileSync(
  script,
  `import { comis_tools } from './comis_tools.js';
${JAIL_TURNS_SOURCE}
let t = performance.now();
await comis_tools.mcp.edge.ping({});
const firstMs = performance.now() - t;
for (let i = 0; i < ${warm}; i++) await comis_tools.mcp.edge.ping({});
for (let b = 0; b < ${blocks}; b++) {
  await myTurn(b);
  const lat = [];
  const c0 = process.cpuUsage();
  for (let i = 0; i < ${block}; i++) { t = performance.now(); await comis_tools.mcp.edge.ping({}); lat.push(performance.now() - t); }
  const c = process.cpuUsage(c0);
  const cpu = (c.user + c.system) / ${block};
  endTurn(b, b === 0 ? { lat, cpu, firstMs } : { lat, cpu });
}
`,
);

/**
 * The in-process side of a run: `start()` connects, lists the tools and warms up; `block(n)` makes n
 * timed calls and returns their latencies and CPU per call (the client's, its server's main thread).
 */
async function inProcessClient() {
  if (sharedBaseline) return startClient(edge, warm);
  const child = fork(join(dirname(fileURLToPath(import.meta.url)), 'lib/mcp-client-child.mjs'), [edge, String(warm)], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
  // One request at a time: the reply to it, or the child's exit while it is pending.
  let waiting;
  child.on('message', (m) => waiting?.resolve(m));
  child.on('exit', (code) => waiting?.reject(new Error(`the in-process client exited ${code}`)));
  const next = () => new Promise((resolve, reject) => (waiting = { resolve, reject }));
  const ready = await next();
  return {
    startMs: ready.startMs,
    serverPid: ready.serverPid,
    block(n) {
      const reply = next();
      child.send({ block: n });
      return reply;
    },
    async close() {
      const gone = new Promise((resolve) => child.once('exit', resolve));
      child.send({ close: true });
      await gone;
    },
  };
}

/** One run: a comis run in the jail and an in-process client, their blocks alternated. */
async function oneRun() {
  // The previous run's turn files (the workspace keeps whatever else comis put there).
  for (const f of readdirSync(workspace)) if (/^(go-\d+|done-\d+\.json)$/.test(f)) unlinkSync(join(workspace, f));
  const client = await inProcessClient();
  const startIn = client.startMs;

  const { child, exited, stderr, turn } = startTurnedRun(root, script, workspace, { ...process.env, COMIS_HOME: home });

  const pairs = [];
  let firstMs;
  const inServer = client.serverPid;
  let runServer;
  for (let b = 0; b < blocks; b++) {
    const mine = await client.block(block);
    const inLat = mine.lat;
    const inCpu = mine.cpu;
    // comis starts its server on the script's first call, before block 0: known from block 1 on.
    runServer ??= b > 0 ? edgeServerPid(inServer) : undefined;
    const comis0 = threadCpuUs(child.pid);
    const server0 = threadCpuUs(runServer);
    const jail = await turn(b);
    const jailCpu = { script: jail.cpu, comis: (threadCpuUs(child.pid) - comis0) / block, server: runServer ? (threadCpuUs(runServer) - server0) / block : undefined };
    if (jail.firstMs !== undefined) firstMs = jail.firstMs;
    pairs.push({ inLat: inLat.sort((x, y) => x - y), jailLat: jail.lat.sort((x, y) => x - y), inCpu, jailCpu });
  }
  await client.close();
  const code = await exited;
  if (code !== 0) throw new Error(`orchestrate exited ${code}: ${stderr()}`);
  return { pairs, startIn, firstMs };
}

try {
  const all = [];
  const starts = [];
  for (let r = 0; r < runs; r++) {
    const run = await oneRun();
    all.push(...run.pairs);
    starts.push({ startIn: run.startIn, startRun: run.firstMs - pct(run.pairs[0].jailLat, 0.5) });
  }
  const ratios = all.map((p) => pct(p.jailLat, 0.5) / pct(p.inLat, 0.5));
  const inAll = all.flatMap((p) => p.inLat).sort((a, b) => a - b);
  const jailAll = all.flatMap((p) => p.jailLat).sort((a, b) => a - b);
  const ratio = median(ratios);
  process.stdout.write(`MCP ping, ${blocks * block} sequential calls a side per run in ${blocks} alternating blocks of ${block}, ${runs} run(s) (load ${load()})\n`);
  process.stdout.write(`  in-process SDK client                  : p50 ${fmt(pct(inAll, 0.5))}  p99 ${fmt(pct(inAll, 0.99))}\n`);
  process.stdout.write(`  jail: comis_tools.mcp.edge.ping → comis : p50 ${fmt(pct(jailAll, 0.5))}  p99 ${fmt(pct(jailAll, 0.99))}\n`);
  const cpu = (side, who) => {
    const xs = all.map((p) => p[side][who]).filter((x) => x !== undefined);
    return xs.length ? median(xs).toFixed(0).padStart(4) : '   ?';
  };
  process.stdout.write(
    `  CPU per call, µs (median of the blocks): in-process client ${cpu('inCpu', 'client')}, its server ${cpu('inCpu', 'server')}; jailed script ${cpu('jailCpu', 'script')}, comis main thread ${cpu('jailCpu', 'comis')}, comis's server ${cpu('jailCpu', 'server')}\n`,
  );
  process.stdout.write(`  paired block ratios p50 (jail / in-process): min ${Math.min(...ratios).toFixed(2)}x, median ${ratio.toFixed(2)}x, max ${Math.max(...ratios).toFixed(2)}x over ${ratios.length} pairs\n`);
  process.stdout.write(`  p50 ratio, median of the paired blocks: ${ratio.toFixed(2)}x (target <= 2x) -> ${ratio <= 2 ? 'MET' : 'MISSED'}\n`);
  process.stdout.write(`  server start per run (first call minus a warm one): ${median(starts.map((s) => s.startRun)).toFixed(1)} ms  (in-process connect + listTools: ${median(starts.map((s) => s.startIn)).toFixed(1)} ms)\n`);
} finally {
  rmSync(home, { recursive: true, force: true });
}
