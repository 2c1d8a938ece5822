import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { ComisError } from '../../src/lib/errors.js';
import { explain } from '../../src/lib/obs/explain.js';
import { renderExplainText } from '../../src/lib/obs/render.js';
import { openStore, type Store } from '../../src/lib/store/store.js';
import { repoRoot } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp.js';
import { schemaValidator } from './schema.js';
import { seedRun, type RunKind } from './seed.js';

const T0 = Date.UTC(2025, 0, 15, 12, 0, 0);
const validate = schemaValidator('explain');
const envelope = (result: unknown) => ({ status: 'ok', result, warnings: [] });

function store(): Store {
  return openStore({ home: tempDir() });
}

describe('explain', () => {
  it.each([
    ['success', undefined, 0, 'none'],
    ['timeout', 'timeout', 137, 'timeout'],
    ['stdout_cap', 'stdout_cap', 137, 'stdout_cap'],
    ['nonzero_exit', 'nonzero_exit', 3, 'nonzero_exit'],
    ['deny', 'nonzero_exit', 1, 'deny'],
    ['spawn_fail', 'spawn_fail', null, 'spawn_fail'],
  ] as const)('a %s run: the seed-000 entry and its verdict', (kind, failureClass, exitCode, signal) => {
    const s = store();
    const { run } = seedRun(s.db, kind as RunKind, { sessionKey: 'sess', startedAt: T0 });
    const report = explain(s.db, { key: 'sess' });
    validate(envelope(report));
    expect(report).toMatchObject({ scope: 'session', sessionKey: 'sess', agentId: 'default', runCount: 1, truncated: false });
    const entry = report.orchestrate[0]!;
    expect(entry).toEqual({
      runId: run.runId,
      leaseId: run.leaseId ?? null,
      startedAt: new Date(T0).toISOString(),
      outcome: failureClass ? 'failure' : 'success',
      durationMs: run.durationMs,
      exitCode,
      ...(failureClass ? { failureClass } : {}),
      toolCalls: run.toolCalls,
    });
    expect(report.likelyRootCause.signal).toBe(signal);
    expect(report.likelyRootCause.code).toBe(signal === 'none' ? 'none' : 'orchestrate_failed');
    if (signal !== 'none') expect(report.likelyRootCause.runId).toBe(run.runId);
    if (kind === 'deny') {
      expect(entry.toolCalls).toEqual([{ tool: 'write', capability: 'orch:write', decision: 'deny', count: 1 }]);
      expect(report.likelyRootCause).toMatchObject({ capability: 'orch:write', reason: 'surface_disabled' });
    }
    s.close();
  });

  it('resultRefs and savings appear only when the run materialized refs', () => {
    const s = store();
    seedRun(s.db, 'success', { sessionKey: 'k', startedAt: T0, runId: 'r-000000000001' });
    seedRun(s.db, 'success', { sessionKey: 'k', startedAt: T0 + 1, runId: 'r-000000000002', refs: { count: 3, bytes: 122_880 }, savings: { estSavedTokens: 30_208, savedRatio: 0.98 } });
    seedRun(s.db, 'success', { sessionKey: 'k', startedAt: T0 + 2, runId: 'r-000000000003', refs: { count: 1, bytes: 20_000 } });
    seedRun(s.db, 'success', { sessionKey: 'k', startedAt: T0 + 3, runId: 'r-000000000004', refs: { count: 0, bytes: 0 }, savings: { estSavedTokens: 5 } });
    const [a, b, c, d] = explain(s.db, { key: 'k' }).orchestrate;
    expect(a).not.toHaveProperty('resultRefs');
    expect(a).not.toHaveProperty('savings');
    expect(b).toMatchObject({ resultRefs: { count: 3, bytes: 122_880 }, savings: { estSavedTokens: 30_208, savedRatio: 0.98 } });
    expect(c).toMatchObject({ resultRefs: { count: 1, bytes: 20_000 } });
    expect(c).not.toHaveProperty('savings');
    expect(d).not.toHaveProperty('resultRefs');
    expect(d).not.toHaveProperty('savings');
    s.close();
  });

  it("tool calls are folded from the audit events of the run's own lease", () => {
    const s = store();
    const { run } = seedRun(s.db, 'success', { sessionKey: 'k', startedAt: T0 });
    // Events of another lease (e.g. the agent's assembly lease) never attribute to this run.
    s.db.prepare('INSERT INTO audit_events (lease_id, run_id, tool, capability, decision, reason, at) VALUES (?, ?, ?, ?, ?, ?, ?)').run('l-other', run.runId, 'web_fetch', 'orch:web', 'deny', 'capability_missing', T0);
    // A later event on this lease counts, even though recordRun's tallies do not have it.
    s.db.prepare('INSERT INTO audit_events (lease_id, run_id, tool, capability, decision, reason, at) VALUES (?, ?, ?, ?, ?, ?, ?)').run(run.leaseId, run.runId, 'grep', 'orch:read', 'allow', null, T0);
    const entry = explain(s.db, { key: 'k' }).orchestrate[0]!;
    expect(entry.toolCalls).toEqual([
      { tool: 'grep', capability: 'orch:read', decision: 'allow', count: 2 },
      { tool: 'read', capability: 'orch:read', decision: 'allow', count: 2 },
    ]);
    s.close();
  });

  it("falls back to the stored tallies when a run's audit events are gone", () => {
    const s = store();
    const { run } = seedRun(s.db, 'deny', { sessionKey: 'k', startedAt: T0 });
    s.db.prepare('DELETE FROM audit_events').run();
    const report = explain(s.db, { key: 'k' });
    expect(report.orchestrate[0]!.toolCalls).toEqual(run.toolCalls);
    expect(report.likelyRootCause).toMatchObject({ signal: 'deny', capability: 'orch:write', reason: 'other' });
    s.close();
  });

  it('a session of several runs: chronological entries, verdict by precedence, identical across calls', () => {
    const s = store();
    const ids = (['success', 'nonzero_exit', 'deny', 'timeout', 'success'] as const).map((kind, i) => seedRun(s.db, kind, { sessionKey: 'multi', startedAt: T0 + i * 1000 }).run.runId);
    const report = explain(s.db, { key: 'multi' });
    expect(report.orchestrate.map((e) => e.runId)).toEqual(ids);
    expect(report.likelyRootCause).toMatchObject({ signal: 'timeout', runId: ids[3], affectedRuns: 3 });
    for (let i = 0; i < 3; i++) expect(explain(s.db, { key: 'multi' })).toEqual(report);
    validate(envelope(report));
    s.close();
  });

  it('a run id explains that run alone, within its session', () => {
    const s = store();
    seedRun(s.db, 'timeout', { sessionKey: 'k', startedAt: T0 });
    const { run } = seedRun(s.db, 'success', { sessionKey: 'k', startedAt: T0 + 10 });
    const report = explain(s.db, { key: run.runId });
    expect(report).toMatchObject({ scope: 'run', sessionKey: 'k', runCount: 1, likelyRootCause: { code: 'none' } });
    expect(report.orchestrate.map((e) => e.runId)).toEqual([run.runId]);
    validate(envelope(report));
    s.close();
  });

  it('--last explains the most recently updated session', () => {
    const s = store();
    seedRun(s.db, 'success', { sessionKey: 'old', startedAt: T0 });
    seedRun(s.db, 'timeout', { sessionKey: 'new', startedAt: T0 + 60_000 });
    seedRun(s.db, 'success', { sessionKey: 'middle', startedAt: T0 + 30_000 });
    expect(explain(s.db, { last: true }).sessionKey).toBe('new');
    s.close();
  });

  it('an unknown key is NOT_FOUND listing the newest session keys', () => {
    const s = store();
    expect(() => explain(s.db, { last: true })).toThrow(/No sessions are recorded/);
    for (let i = 0; i < 7; i++) seedRun(s.db, 'success', { sessionKey: `s-${i}`, startedAt: T0 + i });
    let err: ComisError | undefined;
    try {
      explain(s.db, { key: 'nope' });
    } catch (e) {
      err = e as ComisError;
    }
    expect(err).toBeInstanceOf(ComisError);
    expect(err!.code).toBe('NOT_FOUND');
    expect(err!.exitCode).toBe(2);
    expect(err!.message).toBe('No session or run "nope" in the store.');
    expect(err!.hint).toBe('Newest sessions: s-6, s-5, s-4, s-3, s-2. `comis explain --last` explains the newest.');
    expect(err!.details).toEqual({ newestSessions: ['s-6', 's-5', 's-4', 's-3', 's-2'] });
    s.close();
  });

  it('is bounded: the newest --limit runs, truncated flagged', () => {
    const s = store();
    const ids: string[] = [];
    const insert = s.db.transaction(() => {
      for (let i = 0; i < 30; i++) ids.push(seedRun(s.db, i === 3 ? 'timeout' : 'success', { sessionKey: 'big', startedAt: T0 + i }).run.runId);
    });
    insert();
    const report = explain(s.db, { key: 'big' }, { limit: 10 });
    expect(report).toMatchObject({ runCount: 30, truncated: true });
    expect(report.orchestrate.map((e) => e.runId)).toEqual(ids.slice(20));
    // The verdict covers the runs shown: the old timeout is outside the window.
    expect(report.likelyRootCause.code).toBe('none');
    expect(explain(s.db, { key: 'big' }).likelyRootCause.signal).toBe('timeout');
    s.close();
  });

  it('names read from a foreign store are folded to a fixed label, never echoed', () => {
    const s = store();
    const { run } = seedRun(s.db, 'success', { sessionKey: 'k', startedAt: T0, calls: [] });
    s.db
      .prepare('INSERT INTO audit_events (lease_id, run_id, tool, capability, decision, reason, at) VALUES (?, ?, ?, ?, ?, ?, ?)')
      .run(run.leaseId, run.runId, 'read {"path":"secret plan.txt"}', 'orch:read', 'deny', 'because I said so', T0);
    const report = explain(s.db, { key: 'k' });
    expect(report.orchestrate[0]!.toolCalls).toEqual([{ tool: '<invalid>', capability: 'orch:read', decision: 'deny', count: 1 }]);
    expect(report.likelyRootCause.reason).toBe('other');
    expect(JSON.stringify(report) + renderExplainText(report)).not.toMatch(/secret plan|said so/);
    s.close();
  });

  it('pretty output: verdict first, then a table with durations', () => {
    const s = store();
    seedRun(s.db, 'success', { sessionKey: 'k', startedAt: T0, runId: 'r-00000000000a', refs: { count: 3, bytes: 122_880 }, savings: { estSavedTokens: 30_208, savedRatio: 0.98 } });
    seedRun(s.db, 'deny', { sessionKey: 'k', startedAt: T0 + 5, runId: 'r-00000000000b', durationMs: 8140 });
    const text = renderExplainText(explain(s.db, { key: 'k' }));
    const lines = text.split('\n');
    expect(lines[0]).toBe('Verdict: orchestrate_failed [deny]: Run r-00000000000b was denied orch:write on write (surface_disabled), 1 denied call, then exited with code 1.');
    expect(lines[1]).toMatch(/^ {2}next: The write surface of agent "default" is off/);
    expect(text).toContain('Session k (agent default): 2 runs, updated 2025-01-15T12:00:08.145Z');
    expect(text).toMatch(/RUN +OUTCOME +CLASS +EXIT +DURATION +RESULTREFS +TOOL CALLS/);
    expect(text).toMatch(/r-00000000000a +success +- +0 +420 ms +3 \(120\.0 KiB, ~30208 tok saved \(98%\)\) +grep×1, read×2/);
    expect(text).toMatch(/r-00000000000b +failure +nonzero_exit +1 +8\.1 s +- +write×1 DENIED orch:write/);
    s.close();
  });

  it('the published schema is not vacuous: it rejects what the contract forbids', () => {
    const s = store();
    seedRun(s.db, 'success', { sessionKey: 'k', startedAt: T0, refs: { count: 1, bytes: 20_000 }, savings: { estSavedTokens: 4_000, savedRatio: 0.5 } });
    const good = explain(s.db, { key: 'k' });
    validate(envelope(good));
    const mutate = (f: (r: any) => void): unknown => {
      const copy = structuredClone(good) as any;
      f(copy);
      return envelope(copy);
    };
    expect(() => validate(mutate((r) => (r.orchestrate[0].failureClass = 'timeout')))).toThrow(/failureClass|false schema/);
    expect(() => validate(mutate((r) => (r.orchestrate[0].failureClass = 'oops')))).toThrow();
    expect(() => validate(mutate((r) => (r.orchestrate[0].stdout = 'content')))).toThrow(/additional/);
    expect(() => validate(mutate((r) => delete r.orchestrate[0].resultRefs))).toThrow(/resultRefs/);
    expect(() => validate(mutate((r) => (r.orchestrate[0].toolCalls = [{ tool: 'read', capability: 'orch:read', decision: 'maybe', count: 1 }])))).toThrow();
    expect(() => validate(mutate((r) => (r.likelyRootCause.code = 'broken')))).toThrow();
    expect(() => validate(mutate((r) => delete r.likelyRootCause))).toThrow(/likelyRootCause/);
    s.close();
  });

  it('the example in docs/commands/explain.md is valid against the schema', () => {
    const doc = readFileSync(join(repoRoot, 'docs/commands/explain.md'), 'utf8');
    const example = /```json\n([\s\S]*?)\n```/.exec(doc)![1]!;
    validate(envelope(JSON.parse(example)));
  });
});

describe('a store written before lease_absent was dropped', () => {
  it('an old lease_absent row explains as a plain failure, never an unknown class', () => {
    const s = openStore({ home: tempDir() });
    const { run } = seedRun(s.db, 'spawn_fail', { sessionKey: 'old', startedAt: T0 });
    // Migration 1's CHECK still allows the value an older comis may have written.
    s.db.prepare("UPDATE runs SET failure_class = 'lease_absent' WHERE run_id = ?").run(run.runId);
    const report = explain(s.db, { key: 'old' });
    validate(envelope(report));
    expect(report.orchestrate[0]).not.toHaveProperty('failureClass');
    expect(report.likelyRootCause).toMatchObject({ signal: 'failure', runId: run.runId });
    s.close();
  });
});
