/**
 * Run records and capability audit events: the content-free facts that
 * `explain` and `fleet` fold. Ids, names, counts, durations and closed enums
 * only — never script text, stdout, arguments, results or bearers.
 */
import type { Database } from './store.js';

/**
 * The closed failure-class enum. Seed 000 also names `lease_absent` (the run
 * reached the jail with no capability lease); locally it cannot occur: the
 * runner mints the run's lease in-process before it builds the jail, a mint
 * failure throws before any spawn, the bearer is handed to the jail at spawn,
 * and the lease outlives the deadline kill (see docs/commands/explain.md).
 * Old stores may hold it (migration 1's CHECK allows it); reads fold it away.
 */
export const FAILURE_CLASSES = ['timeout', 'stdout_cap', 'nonzero_exit', 'spawn_fail'] as const;
export type FailureClass = (typeof FAILURE_CLASSES)[number];

export interface ToolCallTally {
  tool: string;
  capability: string;
  decision: 'allow' | 'deny';
  count: number;
}

export interface RunRecord {
  runId: string;
  sessionKey: string;
  agentId: string;
  leaseId: string | undefined;
  parentRunId?: string | undefined;
  language: string;
  startedAt: number;
  endedAt: number;
  durationMs: number;
  outcome: 'success' | 'failure';
  exitCode: number | null;
  failureClass?: FailureClass | undefined;
  stdoutChars: number;
  toolCalls: ToolCallTally[];
  resultRefs: { count: number; bytes: number };
  savings?: { estSavedTokens: number; savedRatio?: number | undefined } | undefined;
}

export interface AuditRow {
  leaseId: string;
  runId: string;
  tool: string;
  capability: string;
  decision: 'allow' | 'deny';
  reason?: string | undefined;
  at: number;
}

export function touchSession(db: Database, sessionKey: string, agentId: string, at: number): void {
  db.prepare(
    `INSERT INTO sessions (session_key, agent_id, created_at, updated_at) VALUES (?, ?, ?, ?)
     ON CONFLICT(session_key) DO UPDATE SET updated_at = excluded.updated_at`,
  ).run(sessionKey, agentId, at, at);
}

/** Folds audit events into per-run tallies `{tool, capability, decision, count}`, in a stable order. */
export function foldToolCalls(events: readonly AuditRow[]): ToolCallTally[] {
  const tallies = new Map<string, ToolCallTally>();
  for (const e of events) {
    const key = `${e.tool}\u0000${e.capability}\u0000${e.decision}`;
    const t = tallies.get(key);
    if (t) t.count++;
    else tallies.set(key, { tool: e.tool, capability: e.capability, decision: e.decision, count: 1 });
  }
  return [...tallies.values()].sort((a, b) => a.tool.localeCompare(b.tool) || a.decision.localeCompare(b.decision) || a.capability.localeCompare(b.capability));
}

/** Writes a finished run with its audit events and tallies, in one transaction. */
export function recordRun(db: Database, run: RunRecord, audit: readonly AuditRow[]): void {
  const insertRun = db.prepare(
    `INSERT INTO runs (run_id, session_key, agent_id, lease_id, parent_run_id, language, started_at, ended_at, duration_ms,
       outcome, exit_code, failure_class, stdout_chars, result_ref_count, result_ref_bytes, est_saved_tokens, saved_ratio)
     VALUES (@runId, @sessionKey, @agentId, @leaseId, @parentRunId, @language, @startedAt, @endedAt, @durationMs,
       @outcome, @exitCode, @failureClass, @stdoutChars, @refCount, @refBytes, @estSavedTokens, @savedRatio)`,
  );
  const insertAudit = db.prepare(
    'INSERT INTO audit_events (lease_id, run_id, tool, capability, decision, reason, at) VALUES (?, ?, ?, ?, ?, ?, ?)',
  );
  const insertTally = db.prepare('INSERT INTO run_tool_calls (run_id, tool, capability, decision, count) VALUES (?, ?, ?, ?, ?)');
  db.transaction(() => {
    touchSession(db, run.sessionKey, run.agentId, run.endedAt);
    insertRun.run({
      runId: run.runId,
      sessionKey: run.sessionKey,
      agentId: run.agentId,
      leaseId: run.leaseId ?? null,
      parentRunId: run.parentRunId ?? null,
      language: run.language,
      startedAt: run.startedAt,
      endedAt: run.endedAt,
      durationMs: run.durationMs,
      outcome: run.outcome,
      exitCode: run.exitCode,
      failureClass: run.failureClass ?? null,
      stdoutChars: run.stdoutChars,
      refCount: run.resultRefs.count,
      refBytes: run.resultRefs.bytes,
      estSavedTokens: run.savings?.estSavedTokens ?? null,
      savedRatio: run.savings?.savedRatio ?? null,
    });
    for (const e of audit) insertAudit.run(e.leaseId, e.runId, e.tool, e.capability, e.decision, e.reason ?? null, e.at);
    for (const t of run.toolCalls) insertTally.run(run.runId, t.tool, t.capability, t.decision, t.count);
  })();
}
