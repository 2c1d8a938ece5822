#!/usr/bin/env node
// The `read` tool alone, in process: the latency of one small read (the time until its promise
// settles, which is when the capability socket writes the reply), BENCH_CALLS (default 5000) calls
// a round, one event-loop turn between calls (as between two frames of a script), BENCH_ROUNDS
// (default 8) rounds. With BENCH_BASE=<another tree> (its build), that tree's `read` runs in
// alternate rounds and each round's pair is printed: an A/B that needs neither the jail nor a quiet
// machine. The file read is 'hello\n', or BENCH_LINES (default 1) lines of 26 bytes: a small text
// file of many lines costs what its decoding costs. Run after `npm run build`:  node bench/read-latency.mjs
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { median } from './lib/turns.mjs';

const here = join(dirname(fileURLToPath(import.meta.url)), '..');
const trees = [...(process.env.BENCH_BASE ? [process.env.BENCH_BASE] : []), here];
const calls = Number(process.env.BENCH_CALLS ?? 5000);
const rounds = Number(process.env.BENCH_ROUNDS ?? 8);
const lines = Number(process.env.BENCH_LINES ?? 1);
const text = lines === 1 ? 'hello\n' : Array.from({ length: lines }, (_, i) => `line ${String(i).padStart(5, '0')} of a text file\n`).join('');
const scratch = mkdtempSync(join(tmpdir(), 'comis-read-latency-'));
const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(' ');

const subjects = [];
for (const [n, root] of trees.entries()) {
  const { createResultStore } = await import(join(root, 'dist/lib/resultref/materialize.js'));
  const { readTool } = await import(join(root, 'dist/lib/tools/read.js'));
  const { HeldRoot } = await import(join(root, 'dist/lib/confine/index.js'));
  const ws = join(scratch, `ws${n}`);
  mkdirSync(ws);
  writeFileSync(join(ws, 'small.txt'), text);
  const resultsDir = join(scratch, `results${n}`);
  mkdirSync(resultsDir);
  const budget = { remainingBytes: 64 << 20 };
  // As a run's tool context holds it; a jail uid other than ours, so the permission checks run.
  const ctx = {
    runId: 'r-bench',
    agentId: 'default',
    workspaceReal: ws,
    workspaceRoot: new HeldRoot(ws),
    jail: { uid: 64_000, gid: 64_000 },
    jailWorkspace: '/workspace',
    writesDir: join(scratch, `writes${n}`),
    maxReadBytes: 16 << 20,
    budget,
    results: createResultStore(resultsDir, { budget, maxFileBytes: 16 << 20 }),
    runEnded: new AbortController().signal,
  };
  subjects.push({ root, read: () => readTool(ctx, { path: 'small.txt' }), p50s: [] });
}

const nextTurn = () => new Promise((r) => setImmediate(r));
try {
  const loadBefore = load();
  for (const s of subjects) for (let i = 0; i < 500; i++) await s.read();
  for (let r = 0; r < rounds; r++) {
    for (const s of subjects) {
      const lat = [];
      for (let i = 0; i < calls; i++) {
        const t = process.hrtime.bigint();
        await s.read();
        lat.push(Number(process.hrtime.bigint() - t) / 1000);
        await nextTurn();
      }
      lat.sort((a, b) => a - b);
      s.p50s.push(lat[lat.length >> 1]);
    }
  }
  process.stdout.write(`read tool latency (µs, p50 of ${calls} calls a round, ${rounds} rounds alternated; a ${text.length}-byte file of ${lines} line${lines === 1 ? '' : 's'}), load ${loadBefore} -> ${load()}\n`);
  for (const s of subjects) process.stdout.write(`  ${s.root}: rounds ${s.p50s.map((x) => x.toFixed(1)).join(' ')}; median ${median(s.p50s).toFixed(1)}\n`);
  if (subjects.length === 2) {
    const [base, head] = subjects;
    const lower = head.p50s.filter((x, i) => x < base.p50s[i]).length;
    process.stdout.write(`  this tree / base: ${(median(head.p50s) / median(base.p50s)).toFixed(3)}x (lower in ${lower} of ${rounds} rounds)\n`);
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
