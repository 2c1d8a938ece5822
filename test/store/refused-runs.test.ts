/**
 * Store migration 6 (refused runs) on a store an older comis wrote, and the
 * write boundary of refusals: only known capabilities and tool-table names
 * are stored, anything else as `<unknown>`. Real SQLite files.
 */
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { MIGRATIONS } from '../../src/lib/store/migrations.js';
import { findRun, sessionRuns } from '../../src/lib/store/obs-queries.js';
import { recordRefusal, recordRun, type RefusalRecord } from '../../src/lib/store/runs.js';
import { openStore, type Database } from '../../src/lib/store/store.js';
import { tempDir } from '../helpers/temp.js';
import { seedRun } from '../obs/seed.js';

const REFUSED_VERSION = 6;
const before = MIGRATIONS.filter((m) => m.version < REFUSED_VERSION);

const refusal = (over: Partial<RefusalRecord> = {}): RefusalRecord => ({
  runId: 'r-000000000001',
  sessionKey: 's-refused',
  agentId: 'default',
  language: 'js',
  startedAt: 1_700_000_000_000,
  endedAt: 1_700_000_000_040,
  code: 'CAPABILITY_DENIED',
  reason: 'explicit_deny',
  capabilities: [],
  tools: ['grep'],
  ...over,
});

function indexes(db: Database): { name: string; sql: string }[] {
  return db.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'runs' AND sql IS NOT NULL ORDER BY name").all() as { name: string; sql: string }[];
}

describe('migration 6: refused runs', () => {
  it('rebuilds runs on an old store: every row and index kept, outcome refused allowed, the CHECKs still hold', () => {
    const path = join(tempDir(), 'old.db');
    const old = openStore({ path, migrations: before });
    expect(old.version).toBe(REFUSED_VERSION - 1);
    // Old rows of every shape, including a legacy lease_absent and a NULL outcome.
    const t0 = 1_700_000_000_000;
    const seeded = (['success', 'timeout', 'deny', 'spawn_fail'] as const).map(
      (kind, i) =>
        seedRun(old.db, kind, { sessionKey: 'sess-old', startedAt: t0 + i, refs: kind === 'success' ? { count: 2, bytes: 4096 } : undefined, savings: kind === 'success' ? { estSavedTokens: 900, savedRatio: 0.5 } : undefined }).run,
    );
    old.db
      .prepare(
        `INSERT INTO runs (run_id, session_key, agent_id, lease_id, language, started_at, outcome, exit_code, failure_class)
         VALUES ('r-legacy000001', 'sess-old', 'default', 'l-legacy', 'py', ?, 'failure', NULL, 'lease_absent'), ('r-legacy000002', 'sess-old', 'default', NULL, 'py', ?, NULL, NULL, NULL)`,
      )
      .run(t0 + 10, t0 + 11);
    expect(() => recordRefusal(old.db, refusal())).toThrow(/refusal_code|no column/);
    const rowsBefore = old.db.prepare('SELECT * FROM runs ORDER BY run_id').all();
    const otherBefore = ['sessions', 'audit_events', 'run_tool_calls'].map((t) => old.db.prepare(`SELECT * FROM ${t} ORDER BY 1, 2`).all());
    const indexesBefore = indexes(old.db);
    old.close();

    const store = openStore({ path });
    expect(store.version).toBe(Math.max(...MIGRATIONS.map((m) => m.version)));
    const db = store.db;
    const rowsAfter = db.prepare('SELECT * FROM runs ORDER BY run_id').all() as Record<string, unknown>[];
    expect(rowsAfter).toEqual(
      // Migration 10 adds the repair columns, NULL on every old run.
      (rowsBefore as Record<string, unknown>[]).map((r) => ({ ...r, refusal_code: null, refusal_reason: null, refusal_capabilities: null, refusal_tools: null, repair_attempted: null, repair_class: null, repair_outcome: null })),
    );
    expect(['sessions', 'audit_events', 'run_tool_calls'].map((t) => db.prepare(`SELECT * FROM ${t} ORDER BY 1, 2`).all())).toEqual(otherBefore);
    // Same indexes by name (runs_window also covers the refusal reason), used by the queries.
    expect(
      indexes(db)
        .map((i) => i.name)
        .filter((n) => n !== 'runs_repair'),
    ).toEqual(indexesBefore.map((i) => i.name));
    expect(indexes(db).find((i) => i.name === 'runs_window')!.sql).toContain('refusal_reason');
    const plan = (sql: string): string => (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all() as { detail: string }[]).map((r) => r.detail).join(' | ');
    expect(plan("SELECT run_id FROM runs WHERE session_key = 'x' ORDER BY started_at DESC")).toContain('runs_session');
    expect(plan("SELECT run_id FROM runs WHERE lease_id = 'x'")).toContain('runs_lease');
    expect(plan("SELECT COUNT(*), SUM(outcome = 'refused'), SUM(refusal_reason = 'explicit_deny') FROM runs WHERE started_at >= 0 AND started_at <= 1")).toContain('COVERING INDEX runs_window');

    // The old runs read back as before, a refusal can now be stored, and it is the newest of the session.
    expect(findRun(db, seeded[0]!.runId)).toMatchObject({ outcome: 'success', resultRefCount: 2, estSavedTokens: 900, refusal: undefined });
    recordRefusal(db, refusal({ sessionKey: 'sess-old', startedAt: t0 + 20, endedAt: t0 + 25 }));
    expect(sessionRuns(db, 'sess-old', 10).at(-1)).toMatchObject({
      runId: 'r-000000000001',
      outcome: 'refused',
      leaseId: null,
      exitCode: null,
      durationMs: 5,
      refusal: { code: 'CAPABILITY_DENIED', reason: 'explicit_deny', capabilities: [], tools: ['grep'] },
    });
    // The CHECKs: an unknown outcome, a refusal without its reason, a reason on a non-refused run.
    const insert = (outcome: string, code: string | null, reason: string | null): unknown =>
      db.prepare("INSERT INTO runs (run_id, session_key, agent_id, language, started_at, outcome, refusal_code, refusal_reason) VALUES (?, 's', 'a', 'js', 0, ?, ?, ?)").run(`r-${Math.random()}`, outcome, code, reason);
    expect(() => insert('bogus', null, null)).toThrow(/CHECK/);
    expect(() => insert('refused', null, null)).toThrow(/CHECK/);
    expect(() => insert('refused', 'CAPABILITY_DENIED', 'made_up')).toThrow(/CHECK/);
    expect(() => insert('failure', 'CAPABILITY_DENIED', 'explicit_deny')).toThrow(/CHECK/);
    expect(() => insert('refused', 'APPROVAL_REFUSED', 'approval_refused')).not.toThrow();
    // recordRun still writes ordinary runs.
    recordRun(db, { ...seeded[0]!, runId: 'r-after0000001' }, []);
    expect(findRun(db, 'r-after0000001')?.outcome).toBe('success');
    store.close();
  });

  it('a fresh store gets the same runs table as a migrated one', () => {
    const fresh = openStore({ path: join(tempDir(), 'fresh.db') });
    const path = join(tempDir(), 'migrated.db');
    openStore({ path, migrations: before }).close();
    const migrated = openStore({ path });
    const shape = (db: Database): unknown => [db.prepare("SELECT * FROM pragma_table_info('runs')").all(), indexes(db)];
    expect(shape(migrated.db)).toEqual(shape(fresh.db));
    fresh.close();
    migrated.close();
  });
});

describe('recordRefusal: content-free by construction', () => {
  it('stores only known capabilities and tool-table names; any other name (one a script typed) as <unknown>', () => {
    const store = openStore({ path: join(tempDir(), 'x.db') });
    recordRefusal(
      store.db,
      refusal({
        reason: 'capability_missing',
        capabilities: ['orch:read', 'CANARY-cap', 'orch:read'],
        tools: ['grep', 'CANARY_tool', 'read', 'mcp', 'x,y', ...Array.from({ length: 40 }, (_, i) => `t${i}`)],
      }),
    );
    const row = store.db.prepare('SELECT refusal_capabilities, refusal_tools FROM runs').get() as { refusal_capabilities: string; refusal_tools: string };
    expect(row).toEqual({ refusal_capabilities: '<unknown>,orch:read', refusal_tools: '<unknown>,grep,read' });
    expect(JSON.stringify(store.db.prepare('SELECT * FROM runs').all())).not.toContain('CANARY');
    // A closed code and reason, or nothing is written.
    expect(() => recordRefusal(store.db, refusal({ runId: 'r-2', reason: 'CANARY' as never }))).toThrow(/not a refusal/);
    expect(() => recordRefusal(store.db, refusal({ runId: 'r-3', code: 'USAGE' as never }))).toThrow(/not a refusal/);
    expect((store.db.prepare('SELECT COUNT(*) AS n FROM runs').get() as { n: number }).n).toBe(1);
    store.close();
  });

  it('reads fold a forged store the same way: names off the table read as <unknown>', () => {
    const store = openStore({ path: join(tempDir(), 'x.db') });
    store.db
      .prepare(
        "INSERT INTO runs (run_id, session_key, agent_id, language, started_at, outcome, refusal_code, refusal_reason, refusal_capabilities, refusal_tools) VALUES ('r-f', 's', 'a', 'js', 0, 'refused', 'APPROVAL_REFUSED', 'approval_refused', 'orch:web,CANARY', 'CANARY script text,write')",
      )
      .run();
    expect(findRun(store.db, 'r-f')?.refusal).toEqual({ code: 'APPROVAL_REFUSED', reason: 'approval_refused', capabilities: ['orch:web', '<unknown>'], tools: ['<unknown>', 'write'] });
    store.close();
  });
});
