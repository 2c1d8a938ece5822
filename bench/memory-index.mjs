#!/usr/bin/env node
// memory_search indexing against the comis event loop: a memory/ of BENCH_NOTES Markdown notes
// (default 2000 × ~4 KiB ≈ 8 MiB) is indexed from cold by successive memory_search calls (each
// bounded to 64 files / 4 MiB), then searched warm. Prints the calls needed, the median and max
// duration of an indexing call and of a warm search, and the event loop's longest stall during
// indexing (perf_hooks.monitorEventLoopDelay), which is what the per-call bounds keep short.
// Real files, a real SQLite store. Run after `npm run build`:  node bench/memory-index.mjs
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';

const { memorySearchTool } = await import('../dist/lib/tools/memory.js');

const notes = Number(process.env.BENCH_NOTES ?? 2000);
const base = realpathSync(mkdtempSync(join(tmpdir(), 'comis-membench-')));
const ws = join(base, 'ws');
const home = join(base, 'home');
mkdirSync(join(ws, 'memory', 'daily'), { recursive: true });
mkdirSync(home);
const words = ['deploy', 'runbook', 'incident', 'latency', 'database', 'rollback', 'canary', 'budget', 'review', 'oncall', 'migration', 'alert'];
let bytes = 0;
for (let i = 0; i < notes; i++) {
  const paras = Array.from({ length: 12 }, (_, p) => `${words[(i + p) % words.length]} note ${i} paragraph ${p}: ${'lorem ipsum dolor sit amet '.repeat(10)}`);
  const text = `# Note ${i}\n\n${paras.join('\n\n')}\n`;
  bytes += Buffer.byteLength(text);
  writeFileSync(join(ws, 'memory', 'daily', `n${String(i).padStart(5, '0')}.md`), text);
}
const ctx = { runId: 'r', agentId: 'a', workspaceReal: ws, jail: { uid: process.getuid(), gid: process.getgid() }, jailWorkspace: '/workspace', writesDir: join(base, 'w'), maxReadBytes: 8 << 20, budget: { remainingBytes: 64 << 20 } };
const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const loop = monitorEventLoopDelay({ resolution: 1 });
loop.enable();
const indexCalls = [];
let pending = Infinity;
while (pending > 0) {
  const t = performance.now();
  const r = await memorySearchTool(ctx, { home }, { query: 'runbook rollback' });
  indexCalls.push(performance.now() - t);
  pending = r.pending;
}
loop.disable();
const warm = [];
for (let i = 0; i < 20; i++) {
  const t = performance.now();
  await memorySearchTool(ctx, { home }, { query: words[i % words.length] });
  warm.push(performance.now() - t);
}
console.log(`memory: ${notes} notes, ${(bytes / 1048576).toFixed(1)} MiB`);
console.log(`cold index: ${indexCalls.length} calls, median ${med(indexCalls).toFixed(1)} ms, max ${Math.max(...indexCalls).toFixed(1)} ms per call, total ${indexCalls.reduce((a, b) => a + b, 0).toFixed(0)} ms`);
console.log(`event loop during indexing: longest stall ${(loop.max / 1e6).toFixed(1)} ms, p99 ${(loop.percentile(99) / 1e6).toFixed(1)} ms`);
console.log(`warm search (index current, walk + stat of ${notes} files): median ${med(warm).toFixed(1)} ms, max ${Math.max(...warm).toFixed(1)} ms; ratio warm/cold-call ${(med(warm) / med(indexCalls)).toFixed(2)}`);
rmSync(base, { recursive: true, force: true });
