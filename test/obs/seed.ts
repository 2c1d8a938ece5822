/**
 * Builds stores the way the runner fills them: `recordRun` with a run record
 * and the `capability:audited` rows of the run's own lease. One helper per
 * kind of run the issue names, so explain/fleet tests read like the spec.
 */
import { randomBytes } from 'node:crypto';

import { recordRun, foldToolCalls, type AuditRow, type FailureClass, type RunRecord } from '../../src/lib/store/runs.js';
import type { Database } from '../../src/lib/store/store.js';

export type RunKind = 'success' | 'timeout' | 'stdout_cap' | 'nonzero_exit' | 'deny' | 'spawn_fail';

export type Call = [tool: string, capability: string, decision: 'allow' | 'deny', reason?: AuditRow['reason']];

export interface SeedOptions {
  sessionKey: string;
  startedAt: number;
  runId?: string;
  agentId?: string;
  durationMs?: number;
  calls?: Call[];
  refs?: { count: number; bytes: number };
  savings?: { estSavedTokens: number; savedRatio?: number };
}

const KINDS: Record<RunKind, { exitCode: number | null; failureClass?: FailureClass; calls: Call[]; lease: boolean }> = {
  success: {
    exitCode: 0,
    calls: [
      ['read', 'orch:read', 'allow'],
      ['grep', 'orch:read', 'allow'],
      ['read', 'orch:read', 'allow'],
    ],
    lease: true,
  },
  timeout: { exitCode: 137, failureClass: 'timeout', calls: [['read', 'orch:read', 'allow']], lease: true },
  stdout_cap: { exitCode: 137, failureClass: 'stdout_cap', calls: [], lease: true },
  nonzero_exit: { exitCode: 3, failureClass: 'nonzero_exit', calls: [], lease: true },
  // A default agent calling write: denied at the socket (surface off); the script throws on it.
  deny: { exitCode: 1, failureClass: 'nonzero_exit', calls: [['write', 'orch:write', 'deny', 'surface_disabled']], lease: true },
  spawn_fail: { exitCode: null, failureClass: 'spawn_fail', calls: [], lease: true },
};

export const newRunId = (): string => `r-${randomBytes(6).toString('hex')}`;

/** Records one run of `kind`; returns its record and audit rows. */
export function seedRun(db: Database, kind: RunKind, options: SeedOptions): { run: RunRecord; audit: AuditRow[] } {
  const k = KINDS[kind];
  const runId = options.runId ?? newRunId();
  const leaseId = k.lease ? `l-${runId.slice(2)}` : undefined;
  const durationMs = options.durationMs ?? (kind === 'timeout' ? 1500 : 420);
  const calls = options.calls ?? k.calls;
  const audit: AuditRow[] = calls.map(([tool, capability, decision, reason], i) => ({
    leaseId: leaseId ?? 'none',
    runId,
    tool,
    capability,
    decision,
    reason,
    at: options.startedAt + 10 + i,
  }));
  const run: RunRecord = {
    runId,
    sessionKey: options.sessionKey,
    agentId: options.agentId ?? 'default',
    leaseId,
    language: 'js',
    startedAt: options.startedAt,
    endedAt: options.startedAt + durationMs,
    durationMs,
    outcome: k.failureClass ? 'failure' : 'success',
    exitCode: k.exitCode,
    failureClass: k.failureClass,
    stdoutChars: 12,
    toolCalls: foldToolCalls(audit),
    resultRefs: options.refs ?? { count: 0, bytes: 0 },
    savings: options.savings,
  };
  recordRun(db, run, leaseId ? audit : []);
  return { run, audit };
}
