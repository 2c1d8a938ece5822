/**
 * Migration 10: a failed run's repair {attempted, class, outcome} is stored
 * as closed enums, read back by explain, counted by fleet; the CHECKs refuse
 * anything else, and a row written by something else reads back folded.
 */
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { explain } from '../../src/lib/obs/explain.js';
import { fleet } from '../../src/lib/obs/fleet.js';
import { findRun } from '../../src/lib/store/obs-queries.js';
import { recordRun, type RunRecord } from '../../src/lib/store/runs.js';
import { openStore } from '../../src/lib/store/store.js';
import { tempDir } from '../helpers/temp.js';

const run = (runId: string, over: Partial<RunRecord> = {}): RunRecord => ({
  runId,
  sessionKey: 's-rep',
  agentId: 'default',
  leaseId: `l-${runId}`,
  language: 'py',
  startedAt: Date.now() - 1000,
  endedAt: Date.now(),
  durationMs: 1000,
  outcome: 'failure',
  exitCode: 1,
  failureClass: 'nonzero_exit',
  stdoutChars: 0,
  toolCalls: [],
  resultRefs: { count: 0, bytes: 0 },
  ...over,
});

describe('the repair record (migration 10)', () => {
  it('is stored, explained and counted; absent on a run without one', () => {
    const store = openStore({ path: join(tempDir(), 'c.db') });
    recordRun(store.db, run('r-a', { outcome: 'success', exitCode: 0, failureClass: undefined, repair: { attempted: true, class: 'bad_import', outcome: 'repaired' } }), []);
    recordRun(store.db, run('r-b', { repair: { attempted: true, class: 'syntax_error', outcome: 'rerun_failed' } }), []);
    recordRun(store.db, run('r-c', { repair: { attempted: false, class: 'type_error', outcome: 'class_off' } }), []);
    recordRun(store.db, run('r-d'), []);
    expect(findRun(store.db, 'r-a')!.repair).toEqual({ attempted: true, class: 'bad_import', outcome: 'repaired' });
    expect(findRun(store.db, 'r-d')!.repair).toBeUndefined();
    const report = explain(store.db, { key: 's-rep' });
    expect(report.orchestrate.map((e) => e.repair?.outcome ?? null)).toEqual(['repaired', 'rerun_failed', 'class_off', null]);
    const eff = fleet(store.db).findings.find((f) => f.code === 'orchestrate_efficiency')!;
    expect(eff.data).toMatchObject({ repairsAttempted: 2, repairsSucceeded: 1 });
    expect(eff.detail).toContain('2 one-shot repairs attempted, 1 succeeded.');
    // The fleet count uses the partial index.
    const plan = (store.db.prepare("EXPLAIN QUERY PLAN SELECT COUNT(*), SUM(repair_outcome = 'repaired') FROM runs WHERE repair_attempted = 1 AND started_at >= 0 AND started_at <= 1").all() as { detail: string }[])
      .map((r) => r.detail)
      .join(' ');
    expect(plan).toContain('runs_repair');
    store.close();
  });

  it('the CHECKs refuse values outside the enums; a foreign row reads back folded', () => {
    const store = openStore({ path: join(tempDir(), 'c.db') });
    const insert = (attempted: unknown, cls: unknown, outcome: unknown): unknown =>
      store.db
        .prepare("INSERT INTO runs (run_id, session_key, agent_id, language, started_at, outcome, repair_attempted, repair_class, repair_outcome) VALUES (?, 's', 'a', 'py', 0, 'failure', ?, ?, ?)")
        .run(`r-${Math.random()}`, attempted, cls, outcome);
    expect(() => insert(2, null, 'repaired')).toThrow(/CHECK/);
    expect(() => insert(1, 'leaked text', 'repaired')).toThrow(/CHECK/);
    expect(() => insert(1, 'bad_import', 'some prose')).toThrow(/CHECK/);
    expect(() => insert(1, 'bad_import', 'repaired')).not.toThrow();
    // attempted follows from the outcome on read, whatever the column says.
    store.db.prepare("INSERT INTO runs (run_id, session_key, agent_id, language, started_at, outcome, repair_attempted, repair_class, repair_outcome) VALUES ('r-f', 's', 'a', 'py', 0, 'failure', 1, NULL, 'class_off')").run();
    expect(findRun(store.db, 'r-f')!.repair).toEqual({ attempted: false, class: null, outcome: 'class_off' });
    store.close();
  });
});
