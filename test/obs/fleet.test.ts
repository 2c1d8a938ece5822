import { describe, expect, it } from 'vitest';

import { ComisError } from '../../src/lib/errors.js';
import { compareFindings, emptyFleet, fleet, parseSince, type FleetFinding } from '../../src/lib/obs/fleet.js';
import { renderFleetText } from '../../src/lib/obs/render.js';
import { openStore, type Store } from '../../src/lib/store/store.js';
import { tempDir } from '../helpers/temp.js';
import { schemaValidator } from './schema.js';
import { seedRun } from './seed.js';

const NOW = Date.UTC(2025, 5, 1, 0, 0, 0);
const HOUR = 3_600_000;
const validate = schemaValidator('fleet');
const envelope = (result: unknown) => ({ status: 'ok', result, warnings: [] });

function store(): Store {
  return openStore({ home: tempDir() });
}

describe('parseSince', () => {
  it('durations and dates', () => {
    expect(parseSince('24h', NOW)).toBe(NOW - 24 * HOUR);
    expect(parseSince('30d', NOW)).toBe(NOW - 30 * 24 * HOUR);
    expect(parseSince('90m', NOW)).toBe(NOW - 90 * 60_000);
    expect(parseSince('2w', NOW)).toBe(NOW - 14 * 24 * HOUR);
    expect(parseSince('45s', NOW)).toBe(NOW - 45_000);
    expect(parseSince('2025-05-01', NOW)).toBe(Date.UTC(2025, 4, 1));
    expect(parseSince('2025-05-01T10:00:00Z', NOW)).toBe(Date.UTC(2025, 4, 1, 10));
  });

  it('rejects nonsense and the future with a usage error', () => {
    for (const bad of ['yesterday', '24', 'h', '-3d', '2025-13-45', '']) expect(() => parseSince(bad, NOW), bad).toThrow(ComisError);
    expect(() => parseSince('2030-01-01', NOW)).toThrow(/in the future/);
    let caught: unknown;
    try {
      parseSince('soon', NOW);
    } catch (e) {
      caught = e;
    }
    // Asserted outside the catch, so a parseSince that stops throwing fails here.
    expect(caught).toBeInstanceOf(ComisError);
    expect((caught as ComisError).code).toBe('USAGE');
    expect((caught as ComisError).hint).toMatch(/24h/);
  });
});

describe('fleet', () => {
  it('an empty store: one orchestrate_efficiency finding with zero counts', () => {
    const s = store();
    const report = fleet(s.db, { since: '24h', now: NOW });
    expect(report).toEqual(emptyFleet({ since: '24h', now: NOW }));
    expect(report.runCount).toBe(0);
    expect(report.findings).toHaveLength(1);
    expect(report.findings[0]).toMatchObject({ code: 'orchestrate_efficiency', severity: 'info', count: 0, data: { runs: 0, estSavedTokens: 0 } });
    validate(envelope(report));
    validate(envelope(emptyFleet({ now: NOW })));
    s.close();
  });

  it('failure classes by count, most denied capabilities, efficiency; ordered by severity then count', () => {
    const s = store();
    const t = NOW - HOUR;
    s.db.transaction(() => {
      for (let i = 0; i < 3; i++) seedRun(s.db, 'timeout', { sessionKey: 'a', startedAt: t + i });
      seedRun(s.db, 'nonzero_exit', { sessionKey: 'a', startedAt: t + 10 });
      seedRun(s.db, 'spawn_fail', { sessionKey: 'b', startedAt: t + 11 });
      seedRun(s.db, 'deny', { sessionKey: 'b', startedAt: t + 12 });
      seedRun(s.db, 'deny', { sessionKey: 'b', startedAt: t + 13 });
      seedRun(s.db, 'success', {
        sessionKey: 'c',
        startedAt: t + 14,
        calls: [
          ['web_fetch', 'orch:web', 'deny', 'capability_missing'],
          ['web_fetch', 'orch:web', 'deny', 'capability_missing'],
          ['web_search', 'orch:web', 'deny', 'capability_missing'],
          ['read', 'orch:read', 'allow'],
        ],
      });
      seedRun(s.db, 'success', { sessionKey: 'c', startedAt: t + 15, refs: { count: 3, bytes: 122_880 }, savings: { estSavedTokens: 30_208, savedRatio: 0.98 } });
      seedRun(s.db, 'success', { sessionKey: 'c', startedAt: t + 16, refs: { count: 1, bytes: 40_000 }, savings: { estSavedTokens: 9_000, savedRatio: 0.9 } });
      // Outside the window: counted by neither finding.
      seedRun(s.db, 'timeout', { sessionKey: 'old', startedAt: NOW - 48 * HOUR, refs: { count: 1, bytes: 99 }, savings: { estSavedTokens: 1_000_000 } });
    })();
    const report = fleet(s.db, { since: '24h', now: NOW });
    validate(envelope(report));
    expect(report.runCount).toBe(10);
    const brief = report.findings.map((f) => [f.code, f.subject ?? null, f.count]);
    expect(brief).toEqual([
      ['orchestrate_failed', 'nonzero_exit', 3],
      ['orchestrate_failed', 'timeout', 3],
      ['orchestrate_failed', 'spawn_fail', 1],
      ['capability_denied', 'orch:web', 3],
      ['capability_denied', 'orch:write', 2],
      ['orchestrate_efficiency', null, 10],
    ]);
    const web = report.findings.find((f) => f.subject === 'orch:web')!;
    expect(web).toMatchObject({ severity: 'warning', data: { events: 3, runs: 1 } });
    expect(web.detail).toBe('orch:web denied 3 times in 1 run, mostly on web_fetch (capability_missing).');
    expect(report.findings.find((f) => f.subject === 'orch:write')!.hint).toMatch(/surface that is off/);
    const eff = report.findings.at(-1)!;
    expect(eff.data).toEqual({ repairsAttempted: 0, repairsSucceeded: 0, runs: 10, failedRuns: 7, refusedRuns: 0, runsWithResultRefs: 2, resultRefCount: 4, resultRefBytes: 162_880, estSavedTokens: 39_208 });
    expect(eff.detail).toContain('an estimated 39208 tokens');
    // Same store, same window: same report.
    expect(fleet(s.db, { since: '24h', now: NOW })).toEqual(report);
    // A wider window takes the old run in.
    expect(fleet(s.db, { since: '7d', now: NOW }).findings.find((f) => f.subject === 'timeout')!.count).toBe(4);
    s.close();
  });

  it('lists the top five denied capabilities and says how many more there are', () => {
    const s = store();
    const caps = ['orch:a', 'orch:b', 'orch:c', 'orch:d', 'orch:e', 'orch:f', 'orch:g'];
    caps.forEach((cap, i) => seedRun(s.db, 'success', { sessionKey: 'k', startedAt: NOW - HOUR + i, calls: Array.from({ length: i + 1 }, () => ['t', cap, 'deny', 'capability_missing'] as const) as never }));
    const denied = fleet(s.db, { now: NOW }).findings.filter((f) => f.code === 'capability_denied');
    expect(denied.map((f) => f.subject)).toEqual(['orch:g', 'orch:f', 'orch:e', 'orch:d', 'orch:c']);
    expect(denied.at(-1)!.detail).toMatch(/2 more capabilities not listed/);
    s.close();
  });

  it('a deny that needed no capability names the tool or the reason class, never "none"; policy denies are counted apart', () => {
    const s = store();
    seedRun(s.db, 'success', {
      sessionKey: 'k',
      startedAt: NOW - HOUR,
      calls: [
        ['gateway', 'none', 'deny', 'denied_by_origin'],
        ['<unknown>', 'none', 'deny', 'unknown_tool'],
        ['<unknown>', 'none', 'deny', 'unknown_tool'],
      ],
    });
    seedRun(s.db, 'success', {
      sessionKey: 'k',
      startedAt: NOW - HOUR + 1,
      calls: [
        ['grep', 'none', 'deny', 'explicit_deny'],
        ['grep', 'none', 'deny', 'explicit_deny'],
        ['write', 'none', 'deny', 'role_coordinator'],
      ],
    });
    seedRun(s.db, 'success', { sessionKey: 'k', startedAt: NOW - HOUR + 2, calls: [['grep', 'none', 'deny', 'explicit_deny']] });
    const report = fleet(s.db, { now: NOW });
    validate(envelope(report));
    const brief = report.findings.filter((f) => f.code !== 'orchestrate_efficiency').map((f) => [f.code, f.subject, f.count, f.data?.runs]);
    expect(brief).toEqual([
      ['policy_denied', 'grep', 3, 2],
      ['capability_denied', 'unknown_tool', 2, 1],
      ['capability_denied', 'gateway', 1, 1],
      ['policy_denied', 'write', 1, 1],
    ]);
    expect(report.findings.find((f) => f.subject === 'grep')!.detail).toBe('grep denied by tool policy 3 times in 2 runs (mostly explicit_deny).');
    expect(report.findings.find((f) => f.subject === 'write')!.hint).toMatch(/coordinator/);
    expect(report.findings.some((f) => f.subject === 'none')).toBe(false);
    s.close();
  });

  it('resumable and orphaned runs are reported only when durability records them', () => {
    const s = store();
    seedRun(s.db, 'success', { sessionKey: 'k', startedAt: NOW - HOUR });
    expect(fleet(s.db, { now: NOW }).findings.map((f) => f.code)).not.toContain('runs_resumable');
    // The table of migration 9, with rows in four states (only resumable and orphaned count).
    s.db.exec(
      'INSERT INTO resumable_runs (run_id, kind, agent_id, session_key, status, reason, created_at, updated_at, expires_at) VALUES ' +
        "('r-1','orchestrate','a','k','resumable',NULL,1,1,9e15),('r-2','orchestrate','a','k','orphaned','checkpoint_missing',1,1,9e15)," +
        "('r-3','orchestrate','a','k','orphaned','script_missing',1,1,9e15),('r-4','orchestrate','a','k','resumed',NULL,1,1,9e15);",
    );
    const report = fleet(s.db, { now: NOW });
    validate(envelope(report));
    expect(report.findings.filter((f) => f.code.startsWith('runs_')).map((f) => [f.code, f.count])).toEqual([
      ['runs_orphaned', 2],
      ['runs_resumable', 1],
    ]);
    s.close();
  });

  it('findings sort by severity, then count, then code and subject', () => {
    const f = (severity: FleetFinding['severity'], count: number, code: FleetFinding['code'], subject?: string): FleetFinding => ({ code, severity, count, detail: '', hint: '', ...(subject ? { subject } : {}) });
    const list = [
      f('info', 100, 'orchestrate_efficiency'),
      f('warning', 5, 'capability_denied', 'b'),
      f('error', 1, 'orchestrate_failed', 'timeout'),
      f('warning', 5, 'capability_denied', 'a'),
      f('error', 2, 'orchestrate_failed', 'spawn_fail'),
    ];
    expect(list.sort(compareFindings).map((x) => `${x.severity}:${x.count}:${x.subject ?? ''}`)).toEqual(['error:2:spawn_fail', 'error:1:timeout', 'warning:5:a', 'warning:5:b', 'info:100:']);
  });

  it('pretty output: a findings table, then the next steps of what is not informational', () => {
    const s = store();
    seedRun(s.db, 'timeout', { sessionKey: 'k', startedAt: NOW - HOUR });
    const text = renderFleetText(fleet(s.db, { since: '24h', now: NOW }));
    const lines = text.split('\n');
    expect(lines[0]).toBe('Fleet since 2025-05-31T00:00:00.000Z (--since 24h): 1 run');
    expect(lines[2]).toMatch(/^SEVERITY +CODE +SUBJECT +COUNT +DETAIL$/);
    expect(lines[3]).toMatch(/^error +orchestrate_failed +timeout +1 +1 run ran past the wall-clock timeout \(timeout\)\.$/);
    expect(lines[4]).toMatch(/^info +orchestrate_efficiency +- +1 +1 orchestrate run \(1 failed\)/);
    expect(text).toContain('Next steps:\n  orchestrate_failed (timeout): Raise --timeout-ms');
    s.close();
  });

  it('the window queries use the covering indexes of migration 3', () => {
    const s = store();
    const plan = s.db.prepare("EXPLAIN QUERY PLAN SELECT capability, tool, reason, COUNT(*) FROM audit_events WHERE decision = 'deny' AND at >= ? AND at <= ? GROUP BY capability, tool, reason").all(0, 1) as { detail: string }[];
    expect(plan.map((p) => p.detail).join(' ')).toMatch(/COVERING INDEX audit_deny_at/);
    const runs = s.db.prepare("EXPLAIN QUERY PLAN SELECT COUNT(*), SUM(outcome = 'failure'), SUM(result_ref_bytes), SUM(est_saved_tokens), SUM(failure_class = 'timeout') FROM runs WHERE started_at >= ? AND started_at <= ?").all(0, 1) as {
      detail: string;
    }[];
    expect(runs.map((p) => p.detail).join(' ')).toMatch(/COVERING INDEX runs_window/);
    s.close();
  });

  it('the published schema is not vacuous', () => {
    const s = store();
    seedRun(s.db, 'timeout', { sessionKey: 'k', startedAt: NOW - HOUR });
    const good = fleet(s.db, { now: NOW });
    validate(envelope(good));
    const mutate = (f: (r: any) => void): unknown => {
      const copy = structuredClone(good) as any;
      f(copy);
      return envelope(copy);
    };
    expect(() => validate(mutate((r) => (r.findings[0].code = 'made_up')))).toThrow();
    expect(() => validate(mutate((r) => (r.findings[0].subject = 'made_up')))).toThrow();
    expect(() => validate(mutate((r) => delete r.findings[0].hint))).toThrow(/hint/);
    expect(() => validate(mutate((r) => (r.findings.at(-1).data.estSavedTokens = -1)))).toThrow();
    expect(() => validate(mutate((r) => (r.findings = [])))).toThrow();
    s.close();
  });
});
