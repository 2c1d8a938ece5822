#!/usr/bin/env node
// The script side of a tool call, without the jail or comis: the generated SDK (dist/sdk/comis_tools.js)
// in a child node process, against a canned-reply server in another process that answers every
// frame with what comis answers (same id; `read` of a small file is an inline data result, so the
// SDK gives it its slicing methods; `mcp.edge.ping` an McpResult). Per kind (BENCH_KINDS, default
// "read,mcp"), BENCH_CALLS (default 20000) sequential calls in blocks of BENCH_BLOCK (default 2000),
// alternated block by block between: a bare socket client (one JSON frame out, one JSON.parse in:
// the floor), this tree's SDK and, with BENCH_BEFORE_ROOT, another tree's SDK (then also the median
// of the two SDKs' paired block differences). For each, the client process's CPU time per call
// (process.cpuUsage: all its threads, user + system) and p50, medians over the blocks: what the SDK
// costs a jailed script per call, which the machine's load moves far less than the latency.
// BENCH_REPLY_DELAY_MS (default 0) holds each reply back that long, as comis and an MCP server do
// (~0.5-1 ms): a process that slept that long runs its next call cold (on this VM the same call
// then costs 3-8x the CPU), so what the SDK touches per call weighs more. BENCH_CLIENT_NODE_ARGS
// (e.g. `--cpu-prof --cpu-prof-dir=/tmp/p`) is passed to the SDK clients' node.
// Run after `npm run build`:  node bench/sdk-call.mjs
import { spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { median, pct } from './lib/turns.mjs';

const here = join(dirname(fileURLToPath(import.meta.url)), '..');
const calls = Number(process.env.BENCH_CALLS ?? 20_000);
const block = Math.min(calls, Number(process.env.BENCH_BLOCK ?? 2000));
const blocks = Math.max(1, Math.round(calls / block));
const kinds = (process.env.BENCH_KINDS ?? 'read,mcp').split(',');
const clientNodeArgs = (process.env.BENCH_CLIENT_NODE_ARGS ?? '').split(' ').filter(Boolean);
const scratch = mkdtempSync(join(tmpdir(), 'comis-sdk-call-'));
const bearer = 'b'.repeat(43);

// What comis answers, as a run in the jail saw it (the envelope's id is per run).
const REPLIES = {
  read: { path: 'small.txt', content: 'hello', offset: 0, lines: 1, totalLines: 1, bytes: 6, truncated: false },
  mcp: {
    type: 'McpResult',
    source: 'mcp:edge.ping',
    isError: false,
    content: [],
    untrusted: true,
    text: '<<<EXTERNAL_UNTRUSTED_CONTENT id=d79095d4e541 source=mcp:edge.ping>>>\npong\n<<<END_EXTERNAL_UNTRUSTED_CONTENT id=d79095d4e541>>>',
  },
};

// The server: one reply per frame, its id read from the frame (the result is the kind's canned one).
const serverSource = `
const kind = process.argv[1];
const delayMs = ${Number(process.env.BENCH_REPLY_DELAY_MS ?? 0)};
const result = JSON.stringify(${JSON.stringify(REPLIES)}[kind]);
require('net').createServer((s) => {
  s.setEncoding('utf8');
  let buf = '';
  s.on('data', (d) => {
    buf += d;
    let i;
    let out = '';
    while ((i = buf.indexOf('\\n')) !== -1) {
      const id = JSON.parse(buf.slice(0, i)).id;
      buf = buf.slice(i + 1);
      out += '{"id":' + id + ',"ok":true,"result":' + result + '}\\n';
    }
    if (out && delayMs) setTimeout(() => s.write(out), delayMs);
    else if (out) s.write(out);
  });
}).listen(process.argv[2], () => process.stdout.write('ready\\n'));
`;

// A client: warms up, then runs one block per line on its stdin and answers each with a JSON line.
const clientSource = `
const [kind, sdk] = process.argv.slice(1);
let rt;
if (sdk) {
  const { comis_tools } = require(sdk);
  rt = kind === 'mcp' ? () => comis_tools.mcp.edge.ping({}) : () => comis_tools.read({ path: 'small.txt' });
} else {
  const sock = require('net').createConnection(process.env.COMIS_ORCH_SOCKET);
  sock.setEncoding('utf8');
  let waiting;
  let buf = '';
  sock.on('data', (d) => { buf += d; let i; while ((i = buf.indexOf('\\n')) !== -1) { const reply = JSON.parse(buf.slice(0, i)); buf = buf.slice(i + 1); waiting(reply.result); } });
  let id = 0;
  const params = kind === 'mcp' ? () => ({ server: 'edge', tool: 'ping', args: {} }) : () => ({ tool: 'read', args: { path: 'small.txt' } });
  rt = () => new Promise((r) => { waiting = r; sock.write(JSON.stringify({ id: ++id, bearer: process.env.COMIS_CAP_LEASE, method: kind === 'mcp' ? 'mcp' : 'tool.invoke', params: params() }) + '\\n'); });
  process.stdin.on('end', () => sock.destroy());
}
(async () => {
  for (let i = 0; i < 500; i++) await rt();
  process.stdout.write('ready\\n');
  process.stdin.setEncoding('utf8');
  for await (const line of require('readline').createInterface({ input: process.stdin })) {
    const n = Number(line);
    const lat = [];
    const c0 = process.cpuUsage();
    for (let i = 0; i < n; i++) { const t = performance.now(); await rt(); lat.push((performance.now() - t) * 1000); }
    const c = process.cpuUsage(c0);
    process.stdout.write(JSON.stringify({ cpu: (c.user + c.system) / n, p50: lat.sort((a, b) => a - b)[n >> 1] }) + '\\n');
  }
})();
`;

function startProcess(args, env) {
  const child = spawn(process.execPath, args, { env, stdio: ['pipe', 'pipe', 'inherit'] });
  child.stdout.setEncoding('utf8');
  const lines = [];
  const waiters = [];
  let buf = '';
  child.stdout.on('data', (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf('\n')) !== -1) {
      lines.push(buf.slice(0, i));
      buf = buf.slice(i + 1);
    }
    while (lines.length && waiters.length) waiters.shift()(lines.shift());
  });
  const next = () => (lines.length ? Promise.resolve(lines.shift()) : new Promise((r) => waiters.push(r)));
  return { child, next };
}

// The SDK as the jail gets it (CommonJS), copied out of each tree's build.
const sides = [{ name: 'bare socket client', sdk: '' }];
for (const [name, root] of [
  ['SDK, this tree', here],
  ['SDK, BENCH_BEFORE_ROOT', process.env.BENCH_BEFORE_ROOT],
]) {
  if (!root) continue;
  const sdk = join(scratch, `comis_tools-${sides.length}.cjs`);
  copyFileSync(join(root, 'dist/sdk/comis_tools.js'), sdk);
  sides.push({ name, sdk });
}

const load = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
process.stdout.write(
  `SDK client per call, no jail: ${blocks * block} sequential calls a side in ${blocks} alternating blocks of ${block}, replies held ${Number(process.env.BENCH_REPLY_DELAY_MS ?? 0)} ms, node ${process.version} (load ${load()})\n`,
);
try {
  for (const kind of kinds) {
    const socketPath = join(scratch, `${kind}.sock`);
    const server = startProcess(['-e', serverSource, kind, socketPath], { PATH: process.env.PATH });
    await server.next();
    const env = { PATH: process.env.PATH, COMIS_ORCH_SOCKET: socketPath, COMIS_CAP_LEASE: bearer, COMIS_WORKSPACE: scratch };
    const clients = [];
    for (const side of sides) {
      const client = startProcess([...(side.sdk ? clientNodeArgs : []), '-e', clientSource, kind, side.sdk], env);
      await client.next();
      clients.push({ ...client, side, seen: [] });
    }
    for (let b = 0; b < blocks; b++) {
      // Every other round in reverse order, so no side always runs right after the same one.
      for (const client of b % 2 ? [...clients].reverse() : clients) {
        client.child.stdin.write(`${block}\n`);
        client.seen.push(JSON.parse(await client.next()));
      }
    }
    process.stdout.write(`  ${kind === 'mcp' ? 'comis_tools.mcp.edge.ping({})' : "comis_tools.read({ path: 'small.txt' })"} (load ${load()}):\n`);
    for (const client of clients) {
      client.child.stdin.end();
      const cpus = client.seen.map((s) => s.cpu).sort((a, b) => a - b);
      process.stdout.write(
        `    ${client.side.name.padEnd(24)} CPU ${median(cpus).toFixed(1).padStart(5)} µs/call (blocks ${pct(cpus, 0).toFixed(1)}–${cpus[cpus.length - 1].toFixed(1)})  p50 ${median(client.seen.map((s) => s.p50))
          .toFixed(1)
          .padStart(5)} µs\n`,
      );
      await new Promise((r) => client.child.on('exit', r));
    }
    if (clients.length === 3) {
      // The two SDKs' blocks of one round ran next to each other: their difference is what the load moves least.
      const diffs = clients[1].seen.map((s, b) => s.cpu - clients[2].seen[b].cpu);
      process.stdout.write(`    this tree − BENCH_BEFORE_ROOT, median of the ${blocks} paired blocks: ${median(diffs).toFixed(2)} µs/call CPU\n`);
    }
    server.child.kill();
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
