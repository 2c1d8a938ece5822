/**
 * Run records and capability audit events: the content-free facts that
 * `explain` and `fleet` fold. Ids, names, counts, durations and closed enums
 * only — never script text, stdout, arguments, results or bearers.
 */
import { CAPABILITIES } from '../capabilities/capabilities.js';
import { findToolEntry } from '../capabilities/tool-table.js';
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

/** The recoverable classes of the one-shot repair (orchestrate/repair-class.ts), as stored (migration 10). */
export const REPAIR_CLASSES = ['bad_import', 'comis_tools_misuse', 'syntax_error', 'type_error'] as const;
export type RepairClass = (typeof REPAIR_CLASSES)[number];

/**
 * What became of a failed run's repair (orchestrate/repair.ts), as stored. Attempted
 * (the model was asked): repaired, rerun_failed, refused, model_error, no_fix. Not
 * attempted: not_recoverable, class_off, no_model, disabled.
 */
export const REPAIR_OUTCOMES = ['repaired', 'rerun_failed', 'refused', 'model_error', 'no_fix', 'not_recoverable', 'class_off', 'no_model', 'disabled'] as const;
export type RepairOutcome = (typeof REPAIR_OUTCOMES)[number];
export const ATTEMPTED_REPAIR_OUTCOMES: readonly RepairOutcome[] = ['repaired', 'rerun_failed', 'refused', 'model_error', 'no_fix'];

/** A failed run's repair, content-free: present only when the first attempt failed. */
export interface RepairRecord {
  attempted: boolean;
  /** The recoverable class (null: not recoverable). */
  class: RepairClass | null;
  outcome: RepairOutcome;
}

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
  /** Only when the first attempt failed: what the one-shot repair did. */
  repair?: RepairRecord | undefined;
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
  // The repair columns (migration 10) are written only for a run that has a repair record.
  const repairCols = run.repair ? ',\n       repair_attempted, repair_class, repair_outcome' : '';
  const repairVals = run.repair ? ',\n       @repairAttempted, @repairClass, @repairOutcome' : '';
  const insertRun = db.prepare(
    `INSERT INTO runs (run_id, session_key, agent_id, lease_id, parent_run_id, language, started_at, ended_at, duration_ms,
       outcome, exit_code, failure_class, stdout_chars, result_ref_count, result_ref_bytes, est_saved_tokens, saved_ratio${repairCols})
     VALUES (@runId, @sessionKey, @agentId, @leaseId, @parentRunId, @language, @startedAt, @endedAt, @durationMs,
       @outcome, @exitCode, @failureClass, @stdoutChars, @refCount, @refBytes, @estSavedTokens, @savedRatio${repairVals})`,
  );
  const insertAudit = db.prepare('INSERT INTO audit_events (lease_id, run_id, tool, capability, decision, reason, at) VALUES (?, ?, ?, ?, ?, ?, ?)');
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
      ...(run.repair ? { repairAttempted: run.repair.attempted ? 1 : 0, repairClass: run.repair.class, repairOutcome: run.repair.outcome } : {}),
    });
    for (const e of audit) insertAudit.run(e.leaseId, e.runId, e.tool, e.capability, e.decision, e.reason ?? null, e.at);
    for (const t of run.toolCalls) insertTally.run(run.runId, t.tool, t.capability, t.decision, t.count);
  })();
}

/** The errors a run is refused with before it starts (exit 4), as stored (migration 6). */
export const REFUSAL_CODES = ['CAPABILITY_DENIED', 'APPROVAL_REQUIRED', 'APPROVAL_REFUSED'] as const;
export type RefusalCode = (typeof REFUSAL_CODES)[number];

/** Why a run was refused: a closed enum, one per pre-flight step that refuses. */
export const REFUSAL_REASONS = ['profile_no_orchestrate', 'capability_missing', 'surface_disabled', 'explicit_deny', 'not_in_profile', 'role_coordinator', 'approval_required', 'approval_refused'] as const;
export type RefusalReason = (typeof REFUSAL_REASONS)[number];

/** How many capabilities and tools one refusal keeps (the table has fewer; a bound all the same). */
export const MAX_REFUSAL_NAMES = 16;
/** What a name that is not a known capability or a tool of the table is stored as. */
export const UNKNOWN_NAME = '<unknown>';

/** A run refused before it started: no lease, no exit code, nothing ran. */
export interface RefusalRecord {
  runId: string;
  sessionKey: string;
  agentId: string;
  parentRunId?: string | undefined;
  language: string;
  startedAt: number;
  endedAt: number;
  code: RefusalCode;
  reason: RefusalReason;
  /** The capabilities the refusal names (e.g. the missing ones). */
  capabilities: readonly string[];
  /** The tools the refusal names (e.g. the ones the tool policy denies). */
  tools: readonly string[];
}

/**
 * Names as stored for a refusal: each one a known capability (resp. a tool of
 * the tool table) or {@link UNKNOWN_NAME}, deduplicated, sorted, bounded. The
 * check sits here, at the one place refusals are written, so whatever a
 * caller passes (a name a script typed), only the table's names reach the store.
 */
export function refusalNames(names: readonly string[], known: (name: string) => boolean): string[] {
  const kept = new Set(names.map((n) => (typeof n === 'string' && known(n) ? n : UNKNOWN_NAME)));
  return [...kept].sort().slice(0, MAX_REFUSAL_NAMES);
}

export const isKnownCapability = (name: string): boolean => (CAPABILITIES as readonly string[]).includes(name);
export const isKnownTool = (name: string): boolean => findToolEntry(name) !== undefined;

/** Writes a refused run (outcome `refused`, no lease, no exit code) and touches its session. */
export function recordRefusal(db: Database, run: RefusalRecord): void {
  if (!(REFUSAL_CODES as readonly string[]).includes(run.code) || !(REFUSAL_REASONS as readonly string[]).includes(run.reason)) {
    throw new Error(`not a refusal: ${String(run.code).slice(0, 40)}/${String(run.reason).slice(0, 40)}`);
  }
  const insert = db.prepare(
    `INSERT INTO runs (run_id, session_key, agent_id, lease_id, parent_run_id, language, started_at, ended_at, duration_ms,
       outcome, exit_code, failure_class, refusal_code, refusal_reason, refusal_capabilities, refusal_tools)
     VALUES (?, ?, ?, NULL, ?, ?, ?, ?, ?, 'refused', NULL, NULL, ?, ?, ?, ?)`,
  );
  db.transaction(() => {
    touchSession(db, run.sessionKey, run.agentId, run.endedAt);
    insert.run(
      run.runId,
      run.sessionKey,
      run.agentId,
      run.parentRunId ?? null,
      run.language,
      run.startedAt,
      run.endedAt,
      Math.max(0, run.endedAt - run.startedAt),
      run.code,
      run.reason,
      refusalNames(run.capabilities, isKnownCapability).join(','),
      refusalNames(run.tools, isKnownTool).join(','),
    );
  })();
}
