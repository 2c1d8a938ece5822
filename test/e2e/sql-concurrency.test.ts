/**
 * `.sql()` under load from the script's own side: several queries at once, and a script holding
 * processes of its own. A query child runs as the run's uid, like the script's jail, and
 * RLIMIT_NPROC counts every task of a uid: each child used to get a limit of 32 + its threads,
 * so two queries at once, or one after the script started 20 processes, left the next child
 * unable to start its threads (it died with SIGSEGV, exit 139, or hung until its 10 s deadline),
 * an `internal` error for a query that was fine. Now a run's queries take turns and a child's
 * limit leaves room for the script's maxProcesses and the run's other children.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { loadConfig, resolveAgent } from '../../src/lib/config/load.js';
import { runOrchestrate } from '../../src/lib/orchestrate/runner.js';
import { requireDuckDbInCi, skipWithoutDuckDb } from '../helpers/duckdb.js';
import { tempDir } from '../helpers/temp.js';

requireDuckDbInCi();

async function run(source: string): Promise<string> {
  const home = tempDir('comis-sqlc-');
  const agent = resolveAgent(await loadConfig({ home }));
  mkdirSync(agent.workspace, { recursive: true });
  // Over the 15,000-byte threshold, so `read` returns a ResultRef to query.
  writeFileSync(join(agent.workspace, 'data.jsonl'), Array.from({ length: 2000 }, (_, i) => JSON.stringify({ id: i, name: `row-${i}` })).join('\n') + '\n');
  const r = await runOrchestrate({ source, displayName: 's.mjs', language: 'js', agent, home, sessionKey: 's', timeoutMs: 120_000 });
  expect(r.public.outcome, r.public.stdout + (r.public.stderrTail ?? '')).toBe('success');
  return r.public.stdout;
}

describe.skipIf(skipWithoutDuckDb)('.sql() with other queries and processes of the run', () => {
  it('eight queries at once all answer, in the order they were asked', async () => {
    const out = await run(`import { comis_tools } from './comis_tools.js';
const page = await comis_tools.read({ path: 'data.jsonl' });
const got = await Promise.allSettled(Array.from({ length: 8 }, (_, i) => page.sql('SELECT ' + i + ' AS k, count(*) AS n FROM read_json_auto(' + JSON.stringify(page.ref) + ')')));
console.log(JSON.stringify(got.map((g) => g.status === 'fulfilled' ? g.value[0] : g.reason.code + ': ' + g.reason.message)));`);
    expect(JSON.parse(out.trim())).toEqual(Array.from({ length: 8 }, (_, k) => ({ k, n: 2000 })));
  }, 180_000);

  it('a query after the script started 20 processes of its own answers (control: they were running)', async () => {
    const out = await run(`import { comis_tools } from './comis_tools.js';
import { spawn } from 'node:child_process';
const page = await comis_tools.read({ path: 'data.jsonl' });
const q = 'SELECT count(*) AS n FROM read_json_auto(' + JSON.stringify(page.ref) + ')';
console.log('before', JSON.stringify(await page.sql(q)));
const kids = Array.from({ length: 20 }, () => spawn('sleep', ['30'], { stdio: 'ignore' }));
await new Promise((r) => setTimeout(r, 300));
console.log('running', kids.filter((k) => k.exitCode === null && k.pid).length);
try { console.log('after', JSON.stringify(await page.sql(q))); } catch (e) { console.log('after', e.code, e.message); }
for (const k of kids) k.kill();`);
    expect(out).toBe('before [{"n":2000}]\nrunning 20\nafter [{"n":2000}]\n');
  }, 180_000);
});
