#!/usr/bin/env node
// ResultRef slicers from INSIDE a jailed script, on a 200 MB JSONL (1M rows), side by side with
// the same work done by plain tools outside comis: `.sql` vs DuckDB called directly (in-process),
// `.jq` vs plain `jq -c`, `.grep` vs plain `grep -n -E`. Median of N (BENCH_RUNS, default 5).
// Also the comis process's peak RSS (it must not load the payload). Run after `npm run build`.
import { spawnSync } from 'node:child_process';
import { createWriteStream, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const runs = Number(process.env.BENCH_RUNS ?? 5);
const rowsN = Number(process.env.BENCH_ROWS ?? 1_000_000);
const home = mkdtempSync(join(tmpdir(), 'comis-slicers-'));
const ws = join(home, 'workspaces', 'default');
mkdirSync(ws, { recursive: true });
const data = join(ws, 'data.jsonl');

await new Promise((resolve) => {
  const out = createWriteStream(data);
  let i = 0;
  const pad = 'x'.repeat(120);
  function write() {
    let ok = true;
    while (i < rowsN && ok) {
      ok = out.write(`{"id":${i},"name":"item-${i}","price":${((i * 7919) % 100000) / 100},"tags":["a","b"],"note":"${pad}"}\n`);
      i++;
    }
    if (i < rowsN) out.once('drain', write);
    else out.end(resolve);
  }
  write();
});
writeFileSync(join(home, 'config.yaml'), 'agents:\n  default:\n    autonomy:\n      limits:\n        resultFileMb: 512\n        resultRunMb: 1024\n        timeoutMs: 600000\n');

const SQL = "SELECT id, price FROM read_json_auto('REF') WHERE price > 990 ORDER BY price DESC LIMIT 5";
const JQ = 'select(.price > 999.5) | .id';
const GREP = '"price":999\\.9[0-9]';
const script = join(home, 'bench.mjs');
writeFileSync(
  script,
  `import { comis_tools } from './comis_tools.js';
const ref = await comis_tools.read({ path: 'data.jsonl' });
const t = async (f) => { const s = process.hrtime.bigint(); await f(); return Number(process.hrtime.bigint() - s) / 1e6; };
const med = (a) => a.sort((x, y) => x - y)[Math.floor(a.length / 2)];
const out = { sql: [], jq: [], grep: [] };
for (let i = 0; i < ${runs}; i++) {
  out.sql.push(await t(() => ref.sql(${JSON.stringify(SQL)}.replace('REF', ref.ref))));
  out.jq.push(await t(() => ref.jq(${JSON.stringify(JQ)})));
  out.grep.push(await t(() => ref.grep(${JSON.stringify(GREP)})));
}
console.log(JSON.stringify({ bytes: ref.bytes, sql: med(out.sql), jq: med(out.jq), grep: med(out.grep) }));
`,
);
const env = { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: home, COMIS_HOME: home, COMIS_TIMING: '1' };
const r = spawnSync(process.execPath, [join(root, 'bin/comis.js'), 'orchestrate', script, '--timeout-ms', '600000'], { env, encoding: 'utf8' });
if (r.status !== 0) throw new Error(`orchestrate failed: ${r.stdout}\n${r.stderr}`);
const inJail = JSON.parse(r.stdout);
const rss = /timing maxrss-kb (\d+)/.exec(r.stderr)?.[1];

function timeCmd(cmd, args) {
  const a = [];
  for (let i = 0; i < runs; i++) {
    const s = process.hrtime.bigint();
    const p = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 << 20 });
    if (p.status !== 0 && !(cmd === 'grep' && p.status === 1)) throw new Error(`${cmd}: ${p.stderr}`);
    a.push(Number(process.hrtime.bigint() - s) / 1e6);
  }
  return a.sort((x, y) => x - y)[Math.floor(a.length / 2)];
}
const plainJq = timeCmd('jq', ['-c', JQ, data]);
const plainGrep = timeCmd('grep', ['-n', '-E', '-e', GREP, data]);
let direct;
try {
  const { DuckDBInstance } = await import('@duckdb/node-api');
  const db = await DuckDBInstance.create(':memory:');
  const c = await db.connect();
  const a = [];
  for (let i = 0; i < runs; i++) {
    const s = process.hrtime.bigint();
    await c.runAndReadAll(SQL.replace('REF', data));
    a.push(Number(process.hrtime.bigint() - s) / 1e6);
  }
  direct = a.sort((x, y) => x - y)[Math.floor(a.length / 2)];
} catch {
  direct = undefined;
}
const fmt = (x) => (x === undefined ? '   n/a' : x.toFixed(1).padStart(8));
process.stdout.write(`ResultRef slicers on ${(inJail.bytes / 1e6).toFixed(1)} MB JSONL (${rowsN} rows), median of ${runs} (ms)\n`);
process.stdout.write(`.sql  from the jail ${fmt(inJail.sql)}   DuckDB direct ${fmt(direct)}   ratio ${direct ? (inJail.sql / direct).toFixed(2) : 'n/a'}x (target <= 1.3x)\n`);
process.stdout.write(`.jq   from the jail ${fmt(inJail.jq)}   plain jq      ${fmt(plainJq)}   ratio ${(inJail.jq / plainJq).toFixed(2)}x (target <= 1.2x)\n`);
process.stdout.write(`.grep from the jail ${fmt(inJail.grep)}   plain grep    ${fmt(plainGrep)}   ratio ${(inJail.grep / plainGrep).toFixed(2)}x (target <= 1.2x)\n`);
process.stdout.write(`comis process peak RSS: ${rss ? `${(Number(rss) / 1024).toFixed(1)} MiB` : 'n/a'} (the payload is ${(inJail.bytes / 1048576).toFixed(0)} MiB)\n`);
rmSync(home, { recursive: true, force: true });
