/**
 * Attack: reading the engine's internals through its catalog views, which need no parentheses
 * (`FROM pg_settings`, `FROM pragma_database_list`, `FROM duckdb_databases`,
 * `information_schema.schemata`). The deny list refused `duckdb_*()`, `pragma_*()` and
 * `current_setting()` as calls only, so these answered with the child's settings and catalog
 * (nothing of the host: the jail's paths and locked settings). Now the query child refuses a
 * table reference to them in DuckDB's own parse.
 *
 * Control: the script reaches its attack line and a query on its own ResultRef still answers;
 * test/security/duckdb-prefilter.test.ts "catalog views read as tables" shows a bare DuckDB
 * answering each of these queries with rows.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { loadConfig, resolveAgent } from '../../src/lib/config/load.js';
import { runOrchestrate } from '../../src/lib/orchestrate/runner.js';
import { requireDuckDbInCi, skipWithoutDuckDb } from '../helpers/duckdb.js';
import { tempDir } from '../helpers/temp.js';

requireDuckDbInCi();

const VIEWS = [
  'SELECT name, setting FROM pg_settings',
  'SELECT * FROM pragma_database_list',
  'SELECT database_name, path FROM duckdb_databases',
  'SELECT schema_name FROM information_schema.schemata',
  'SELECT proname FROM pg_catalog.pg_proc',
  'SELECT count(*) AS n FROM main.duckdb_logs',
];

describe.skipIf(skipWithoutDuckDb)('.sql(): the engine catalog views', () => {
  it('are refused from a jailed script; a query of its own ResultRef still answers (control)', async () => {
    const home = tempDir('comis-sqlv-');
    const agent = resolveAgent(await loadConfig({ home }));
    mkdirSync(agent.workspace, { recursive: true });
    writeFileSync(join(agent.workspace, 'data.jsonl'), Array.from({ length: 2000 }, (_, i) => JSON.stringify({ id: i })).join('\n') + '\n');
    const source = `import { comis_tools } from './comis_tools.js';
const page = await comis_tools.read({ path: 'data.jsonl' });
console.log('ATTACK-LINE');
for (const q of ${JSON.stringify(VIEWS)}) {
  try { console.log('ANSWERED', JSON.stringify(await page.sql(q))); } catch (e) { console.log(e.code); }
}
console.log('control', JSON.stringify(await page.sql('SELECT count(*) AS n FROM read_json_auto(' + JSON.stringify(page.ref) + ')')));`;
    const run = await runOrchestrate({ source, displayName: 's.mjs', language: 'js', agent, home, sessionKey: 's', timeoutMs: 120_000 });
    expect(run.public.stdout).toBe(`ATTACK-LINE\n${'sql_refused\n'.repeat(VIEWS.length)}control [{"n":2000}]\n`);
  }, 180_000);
});
