#!/usr/bin/env node
// `npm run bench`: every bench/*.mjs in turn (this file excepted), each in its own process, with
// the environment it is given (BENCH_RUNS etc.). Not part of CI: on a shared 2-core machine a full
// pass takes many minutes and the absolute figures move with the load; read the ratios, which
// each bench measures paired in one run. Run after `npm run build`.
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const only = process.argv.slice(2);
const files = readdirSync(here)
  .filter((f) => f.endsWith('.mjs') && f !== 'run-all.mjs')
  .filter((f) => only.length === 0 || only.some((o) => f.includes(o)))
  .sort();
let failed = 0;
for (const f of files) {
  process.stdout.write(`\n=== bench/${f} ===\n`);
  const r = spawnSync(process.execPath, [join(here, f)], { stdio: 'inherit', env: process.env });
  if (r.status !== 0) {
    failed++;
    process.stdout.write(`bench/${f} exited ${r.status ?? r.signal}\n`);
  }
}
process.exitCode = failed > 0 ? 1 : 0;
