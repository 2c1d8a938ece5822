// The in-process baseline of bench/mcp-rtt.mjs: an SDK Client over the SDK's StdioClientTransport to
// the fixture server. `startClient()` runs it in the calling process; run as a script
// (`node mcp-client-child.mjs <server> <warm>`, forked with IPC) it is the same client in a
// process of its own, which bench/mcp-rtt.mjs starts fresh for each run as comis is (so both sides
// start with cold code: a client kept in the bench process would run its later runs on code
// optimized by the earlier ones). The bench asks for a block of calls over IPC ({block: n})
// between the timed sections and gets back {lat, cpu: {client, server}}.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

/** CPU time of a process's main thread, in µs (/proc/<pid>/schedstat: ns on the CPU; 0 where absent). */
export const threadCpuUs = (pid) => {
  try {
    return Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1000;
  } catch {
    return 0;
  }
};

/**
 * Connects, lists the tools and makes `warm` calls; then `block(n)` makes n timed calls of `ping`
 * and returns their latencies and the CPU per call of this process and of the server's main thread.
 */
export async function startClient(server, warm) {
  const client = new Client({ name: 'bench', version: '0' });
  const t0 = performance.now();
  const transport = new StdioClientTransport({ command: process.execPath, args: [server], stderr: 'ignore' });
  await client.connect(transport);
  await client.listTools();
  const startMs = performance.now() - t0;
  for (let i = 0; i < warm; i++) await client.callTool({ name: 'ping', arguments: {} });
  return {
    startMs,
    serverPid: transport.pid,
    async block(n) {
      const lat = [];
      const c0 = process.cpuUsage();
      const s0 = threadCpuUs(transport.pid);
      for (let i = 0; i < n; i++) {
        const t = performance.now();
        await client.callTool({ name: 'ping', arguments: {} });
        lat.push(performance.now() - t);
      }
      const c = process.cpuUsage(c0);
      return { lat, cpu: { client: (c.user + c.system) / n, server: (threadCpuUs(transport.pid) - s0) / n } };
    },
    close: () => client.close(),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const client = await startClient(process.argv[2], Number(process.argv[3]));
  process.send({ ready: true, startMs: client.startMs, serverPid: client.serverPid });
  process.on('message', async (m) => {
    if (m.close) {
      await client.close();
      process.disconnect();
      return;
    }
    process.send(await client.block(m.block));
  });
}
