// The in-process baseline of bench/mcp-rtt.mjs, in a process of its own: an SDK Client over the
// SDK's StdioClientTransport to the fixture server, started fresh for each run of the bench as
// comis is (so both sides start with cold code: a client kept in the bench process would run
// its later runs on code optimized by the earlier ones). The bench asks for a block of calls over
// IPC ({block: n}) between the timed sections and gets back {lat, cpu: {client, server}}.
import { readFileSync } from 'node:fs';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const [edge, warm] = [process.argv[2], Number(process.argv[3])];
// CPU time of a process's main thread, in µs (/proc/<pid>/schedstat: ns on the CPU; 0 where absent).
const threadCpuUs = (pid) => {
  try {
    return Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1000;
  } catch {
    return 0;
  }
};

const client = new Client({ name: 'bench', version: '0' });
const t0 = performance.now();
const transport = new StdioClientTransport({ command: process.execPath, args: [edge], stderr: 'ignore' });
await client.connect(transport);
await client.listTools();
const startMs = performance.now() - t0;
for (let i = 0; i < warm; i++) await client.callTool({ name: 'ping', arguments: {} });
process.send({ ready: true, startMs, serverPid: transport.pid });

process.on('message', async (m) => {
  if (m.close) {
    await client.close();
    process.disconnect();
    return;
  }
  const lat = [];
  const c0 = process.cpuUsage();
  const s0 = threadCpuUs(transport.pid);
  for (let i = 0; i < m.block; i++) {
    const t = performance.now();
    await client.callTool({ name: 'ping', arguments: {} });
    lat.push(performance.now() - t);
  }
  const c = process.cpuUsage(c0);
  process.send({ lat, cpu: { client: (c.user + c.system) / m.block, server: (threadCpuUs(transport.pid) - s0) / m.block } });
});
