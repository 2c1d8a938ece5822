/**
 * Content-freedom of the observability surface. A canary string is planted
 * in a script's text, in its tool arguments (including a made-up tool name),
 * in its stdout and stderr, and in a file large enough to come back as a
 * ResultRef; the run's lease bearer is captured too. After real
 * `comis orchestrate` runs, neither the canary nor the bearer may appear in
 * `explain` or `fleet` output (pretty and --json), in any row of any table of
 * the store, in the store's files, or in the logs.
 */
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';

import { parseJson } from '../helpers/cli.js';
import { runComisAsync } from '../helpers/fake-search.js';
import { startFakeModel } from '../helpers/fake-model.js';
import { makeHome } from '../helpers/orchestrate.js';

const CANARY = 'CANARY-obs-9c41e7d2';

function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

/** Two real runs in one session with the canary planted everywhere; returns what they left. */
function plantCanary(): { h: ReturnType<typeof makeHome>; session: string; okBody: any; needles: string[] } {
  const h = makeHome();
  const ws = h.workspace();
  // Over the 15,000-byte ResultRef threshold: read materializes it as a ref.
  writeFileSync(join(ws, 'big.txt'), `${CANARY} in a file\n`.repeat(2_000));
  writeFileSync(join(ws, 'small.txt'), `${CANARY}-small-file\n`);
  const session = 'canary-session';
  const good = h.script(
    'canary.mjs',
    `// ${CANARY}-script-comment
import { writeFileSync } from 'node:fs';
import { comis_tools } from './comis_tools.js';
const planted = '${CANARY}-script-literal';
writeFileSync('bearer.txt', process.env.COMIS_CAP_LEASE ?? '');
await comis_tools.grep({ pattern: '${CANARY}-args' });
await comis_tools.read({ path: 'small.txt' });
const big = await comis_tools.read({ path: 'big.txt' });
try { await comis_tools.read({ path: '${CANARY}-missing.txt' }); } catch {}
try { await comis_tools.invoke('${CANARY}_tool', { q: '${CANARY}-invoke-args' }); } catch {}
try { await comis_tools['wr' + 'ite']({ path: '${CANARY}-path', content: '${CANARY}-content' }); } catch {}
console.log(planted, '${CANARY}-stdout', JSON.stringify(big).slice(0, 200));
console.error('${CANARY}-stderr');
`,
  );
  const ok = h.run(['orchestrate', good, '--session', session, '--json']);
  const okBody = parseJson(ok.stdout);
  expect(okBody.status, ok.stdout + ok.stderr).toBe('ok');
  // The canary did reach the script's stdout: the one place it may go.
  expect(okBody.result.stdout).toContain(`${CANARY}-stdout`);
  const bad = h.script('canary-fail.mjs', `console.log('${CANARY}-fail-stdout');\nconsole.error('${CANARY}-fail-stderr ' + process.env.COMIS_CAP_LEASE);\nprocess.exit(4);\n`);
  const failed = h.run(['orchestrate', bad, '--session', session, '--json']);
  expect(parseJson(failed.stdout).result.failureClass).toBe('nonzero_exit');

  const bearer = readFileSync(join(ws, 'bearer.txt'), 'utf8');
  expect(bearer.length).toBeGreaterThanOrEqual(32);
  return { h, session, okBody, needles: [CANARY, bearer] };
}

describe('explain, fleet, the store and the logs are content-free', () => {
  it('a canary in script, arguments, stdout, stderr and a ResultRef, and the bearer, appear nowhere', () => {
    const { h, session, okBody, needles } = plantCanary();

    const outputs = [
      h.run(['explain', session]),
      h.run(['explain', session, '--json']),
      h.run(['explain', '--last', '--json']),
      h.run(['explain', okBody.result.runId]),
      h.run(['fleet']),
      h.run(['fleet', '--since', '30d', '--json']),
      h.run(['explain', `${CANARY}-unknown`]),
    ];
    expect(outputs.slice(0, 6).map((o) => o.status)).toEqual([0, 0, 0, 0, 0, 0]);
    const explained = parseJson(outputs[1]!.stdout).result;
    expect(explained.orchestrate).toHaveLength(2);
    expect(explained.likelyRootCause.signal).toBe('deny');
    for (const [i, o] of outputs.slice(0, 6).entries()) {
      for (const needle of needles) {
        expect(o.stdout, `output ${i}`).not.toContain(needle);
        expect(o.stderr, `output ${i}`).not.toContain(needle);
      }
    }
    // The unknown-key error echoes what the user typed, and nothing from the store.
    expect(outputs[6]!.stderr).toContain(`${CANARY}-unknown`);
    expect(outputs[6]!.stderr.split(CANARY).length - 1).toBe(1);

    // Every row of every table of the store.
    const db = new Database(join(h.home, 'comis.db'), { readonly: true });
    const tables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map((t) => t.name);
    expect(tables).toEqual(expect.arrayContaining(['sessions', 'runs', 'audit_events', 'run_tool_calls']));
    for (const table of tables) {
      const dump = JSON.stringify(db.prepare(`SELECT * FROM "${table}"`).all());
      for (const needle of needles) expect(dump, table).not.toContain(needle);
    }
    const audit = db.prepare('SELECT DISTINCT tool FROM audit_events ORDER BY tool').all();
    expect(audit).toEqual(expect.arrayContaining([{ tool: '<unknown>' }, { tool: 'write' }]));
    db.close();

    // The store's files and the logs, byte for byte.
    // fleet --since 30d keeps its per-day rollup under cache/ (counts, enums, names, run ids): it is checked too.
    expect(existsSync(join(h.home, 'cache', 'fleet-rollup.json'))).toBe(true);
    const files = [...['comis.db', 'comis.db-wal', 'comis.db-shm'].map((f) => join(h.home, f)).filter(existsSync), ...filesUnder(join(h.home, 'logs')), ...filesUnder(join(h.home, 'cache'))];
    for (const file of files) {
      const bytes = readFileSync(file);
      for (const needle of needles) expect(bytes.includes(needle), file).toBe(false);
    }
  });

  it('the canary run materialized its big read as a ResultRef, so the ResultRef path is covered', () => {
    const { h, session, needles } = plantCanary();
    const explained = parseJson(h.run(['explain', session, '--json']).stdout).result;
    const entry = explained.orchestrate[0];
    expect(entry.resultRefs?.count ?? 0, 'read of a 36 KB file should come back as a ResultRef (threshold 15,000 bytes)').toBeGreaterThanOrEqual(1);
    expect(entry.savings).toBeDefined();
    for (const needle of needles) expect(JSON.stringify(explained)).not.toContain(needle);
  });

  it('a refused run (exit 4): a canary in its script text and its made-up tool names appears nowhere; the refusal itself is recorded', () => {
    const h = makeHome();
    // A made-up tool name the static scan sees (an identifier: the canary with underscores).
    const tool = `${CANARY.replace(/-/g, '_')}_tool`;
    const needles = [CANARY, tool];
    const script = h.script(
      'refused.mjs',
      `// ${CANARY}-refused-comment
import { comis_tools } from './comis_tools.js';
const planted = '${CANARY}-refused-literal';
await comis_tools.${tool}({ q: planted });
await comis_tools.write({ path: '${CANARY}-path', content: planted });
`,
    );
    expect(readFileSync(script, 'utf8')).toContain(CANARY);
    const res = h.run(['orchestrate', script, '--session', 'refused-canary']);
    // It reached pre-flight and was refused there (the write surface is off): nothing ran.
    expect(res.status).toBe(4);
    expect(res.stderr).toMatch(/^Error \[CAPABILITY_DENIED\]: The script calls comis_tools\.write/);
    for (const needle of needles) expect(res.stdout + res.stderr).not.toContain(needle);
    const outputs = [h.run(['explain', '--last']), h.run(['explain', '--last', '--json']), h.run(['fleet']), h.run(['fleet', '--json'])];
    expect(outputs.map((o) => o.status)).toEqual([0, 0, 0, 0]);
    for (const o of outputs) for (const needle of needles) expect(o.stdout + o.stderr).not.toContain(needle);
    const db = new Database(join(h.home, 'comis.db'), { readonly: true });
    for (const { name } of db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]) {
      for (const needle of needles) expect(JSON.stringify(db.prepare(`SELECT * FROM "${name}"`).all()), name).not.toContain(needle);
    }
    db.close();
    const files = [...['comis.db', 'comis.db-wal'].map((f) => join(h.home, f)).filter(existsSync), ...filesUnder(join(h.home, 'logs'))];
    for (const file of files) for (const needle of needles) expect(readFileSync(file).includes(needle), file).toBe(false);
    // Positive controls: the refused run is recorded, with the names of the tool table only,
    // and the byte scan does see what the store holds (the refused run's id).
    const report = parseJson(outputs[1]!.stdout).result;
    expect(report.orchestrate).toEqual([expect.objectContaining({ outcome: 'refused' })]);
    expect(report.orchestrate[0].refusal).toEqual({ code: 'CAPABILITY_DENIED', reason: 'surface_disabled', capabilities: ['orch:write'], tools: ['write'] });
    expect(files.some((f) => readFileSync(f).includes(report.orchestrate[0].runId))).toBe(true);
  });

  it('the model key (model.apiKeyEnv) reaches the model and nothing else: no output, log, table or request body carries it', async () => {
    const key = 'sk-model-CANARY-4f0e9b7d2c1a8e36';
    // A hostile endpoint: a 401 whose error message echoes the whole Authorization header.
    const fake = await startFakeModel({ answer: () => '```python\nimport os, comis_tools\nprint(sorted(os.environ))\n```' });
    const h = makeHome(`agents:\n  default:\n    model:\n      baseUrl: ${fake.baseUrl}\n      name: tiny\n      class: small\n      apiKeyEnv: COMIS_TEST_MODEL_KEY\n`);
    h.workspace();
    const bad = h.script('bad.py', "import sys\nsys.stderr.write('key? ' + str(__import__('os').environ.get('COMIS_TEST_MODEL_KEY')) + '\\n')\nimport comis_tool\n");
    const env = { COMIS_TEST_MODEL_KEY: key };
    const runs = [await runComisAsync(['orchestrate', bad, '--session', 'key-canary', '--json', '--verbose'], { home: h.home, env }), await runComisAsync(['orchestrate', bad, '--session', 'key-canary', '--verbose'], { home: h.home, env })];
    fake.queue({ kind: 'raw', status: 401, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ error: { message: `Incorrect API key provided: ${key}`, type: 'invalid_request_error', code: 'invalid_api_key' } }) });
    runs.push(await runComisAsync(['orchestrate', bad, '--session', 'key-canary', '--json', '--verbose'], { home: h.home, env }));
    // Positive controls: the key reached the model (and only as the bearer), the repair ran, and the 401 did echo it.
    expect(fake.requests.map((r) => r.headers.authorization)).toEqual([`Bearer ${key}`, `Bearer ${key}`, `Bearer ${key}`]);
    const first = parseJson(runs[0]!.stdout).result;
    expect(first).toMatchObject({ outcome: 'success', repair: { outcome: 'repaired' } });
    expect(first.stdout).toContain('COMIS_CAP_LEASE'); // the repaired script listed its environment
    expect(parseJson(runs[2]!.stdout).result).toMatchObject({ outcome: 'failure', repair: { outcome: 'model_error' } });
    for (const r of fake.requests) expect(r.body).not.toContain(key);
    const outputs = [
      ...runs,
      await runComisAsync(['explain', 'key-canary'], { home: h.home }),
      await runComisAsync(['explain', 'key-canary', '--json'], { home: h.home }),
      await runComisAsync(['fleet', '--json'], { home: h.home }),
      await runComisAsync(['fleet'], { home: h.home }),
    ];
    for (const [i, o] of outputs.entries()) {
      expect(o.stdout, `output ${i}`).not.toContain(key);
      expect(o.stderr, `output ${i}`).not.toContain(key);
    }
    const db = new Database(join(h.home, 'comis.db'), { readonly: true });
    for (const { name } of db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]) {
      expect(JSON.stringify(db.prepare(`SELECT * FROM "${name}"`).all()), name).not.toContain(key);
    }
    db.close();
    const files = [...['comis.db', 'comis.db-wal', 'comis.db-shm'].map((f) => join(h.home, f)).filter(existsSync), ...filesUnder(join(h.home, 'logs')), ...filesUnder(join(h.home, 'cache'))];
    // Control: the byte scan sees what the log holds (the model error of the third run).
    expect(files.some((f) => readFileSync(f).includes('model_error'))).toBe(true);
    for (const file of files) expect(readFileSync(file).includes(key), file).toBe(false);
  }, 240_000);
});
