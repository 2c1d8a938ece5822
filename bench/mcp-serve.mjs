#!/usr/bin/env node
// `comis mcp serve` against `comis orchestrate`: the same trivial read-and-print script run N
// times (default 15; BENCH_RUNS=N) through a warm MCP server (the SDK's own client over stdio)
// and as N separate CLI invocations. Prints medians, min/max and the ratio, plus the server's
// start cost (spawn to the first tools/list answer). Run after `npm run build`: node bench/mcp-serve.mjs
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bin = join(root, 'bin/comis.js');
const runs = Number(process.env.BENCH_RUNS ?? 15);
const home = mkdtempSync(join(tmpdir(), 'comis-bench-mcp-'));
const env = { PATH: process.env.PATH, HOME: home, COMIS_HOME: home };
mkdirSync(join(home, 'workspaces', 'default'), { recursive: true });
writeFileSync(join(home, 'workspaces', 'default', 'notes.md'), 'alpha\nbeta\ngamma\n');
const script = "import { comis_tools } from './comis_tools.js';\nconst r = await comis_tools.read({ path: 'notes.md' });\nconsole.log(r.content.split('\\n')[1]);\n";
const scriptFile = join(home, 'job.ts');
writeFileSync(scriptFile, script);

const stats = (samples) => {
  const s = [...samples].sort((a, b) => a - b);
  return { median: s[Math.floor(s.length / 2)], min: s[0], max: s[s.length - 1] };
};
const now = () => Number(process.hrtime.bigint()) / 1e6;

const cli = [];
for (let i = 0; i < runs + 1; i++) {
  const t = now();
  const res = spawnSync(process.execPath, [bin, 'orchestrate', scriptFile, '--quiet'], { env, encoding: 'utf8' });
  if (res.stdout !== 'beta\n') throw new Error(`orchestrate: ${res.status} ${res.stderr}`);
  if (i > 0) cli.push(now() - t);
}

const starts = [];
const mcp = [];
for (let round = 0; round < 3; round++) {
  const t0 = now();
  const transport = new StdioClientTransport({ command: process.execPath, args: [bin, 'mcp', 'serve'], env, stderr: 'ignore' });
  const client = new Client({ name: 'bench', version: '0' });
  await client.connect(transport);
  await client.listTools();
  starts.push(now() - t0);
  for (let i = 0; i < (round === 0 ? runs + 1 : 0); i++) {
    const t = now();
    const res = await client.callTool({ name: 'orchestrate', arguments: { script, language: 'ts' } });
    if (res.isError || res.content[0].text !== 'beta\n') throw new Error(`mcp: ${JSON.stringify(res)}`);
    if (i > 0) mcp.push(now() - t);
  }
  await client.close();
}
rmSync(home, { recursive: true, force: true });

const c = stats(cli);
const m = stats(mcp);
const s = stats(starts);
const row = (name, x) => `${name.padEnd(44)} median ${x.median.toFixed(1).padStart(7)} ms   min ${x.min.toFixed(1).padStart(7)}   max ${x.max.toFixed(1).padStart(7)}`;
process.stdout.write(
  `${row(`comis orchestrate job.ts (x${cli.length})`, c)}\n${row(`mcp serve: orchestrate call, warm (x${mcp.length})`, m)}\n${row(`mcp serve: start to tools/list (x${starts.length})`, s)}\n` +
    `ratio warm MCP call / CLI run: ${(m.median / c.median).toFixed(2)}\n`,
);
