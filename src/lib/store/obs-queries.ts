/**
 * The read side of the store for `explain` and `fleet`: bounded, indexed
 * queries over the content-free tables (`sessions`, `runs`, `audit_events`,
 * `run_tool_calls`). Every query is keyed by an index and capped by a LIMIT
 * or an aggregate, so the cost stays flat as the store grows (see
 * bench/obs-scale.mjs: 100,000 runs, 1,000,000 audit events).
 *
 * Security property: these functions select ids, names, counts, durations,
 * timestamps and closed enums only. Names read back are checked against a
 * conservative pattern, and anything else is folded to a fixed label, so
 * even a store written by something other than comis cannot smuggle text
 * into a report.
 */
import type { DenySums, RunSums } from './fleet-rollup.js';
import type { Database } from './store.js';
import {
  FAILURE_CLASSES,
  REFUSAL_CODES,
  REPAIR_CLASSES,
  REPAIR_OUTCOMES,
  ATTEMPTED_REPAIR_OUTCOMES,
  REFUSAL_REASONS,
  UNKNOWN_NAME,
  isKnownCapability,
  isKnownTool,
  type FailureClass,
  type RefusalCode,
  type RefusalReason,
  type RepairClass,
  type RepairOutcome,
  type RepairRecord,
  type ToolCallTally,
} from './runs.js';

/** Why a call was denied: the closed set the dispatcher records. */
export const DENY_REASONS = ['capability_missing', 'denied_by_origin', 'unknown_tool', 'surface_disabled', 'explicit_deny', 'not_in_profile', 'role_coordinator', 'host_denied'] as const;
export type DenyReason = (typeof DENY_REASONS)[number] | 'other';
/** The deny reasons that come from the agent's tool policy or role, not from a capability. */
export const POLICY_DENY_REASONS: readonly DenyReason[] = ['explicit_deny', 'not_in_profile', 'role_coordinator'];
export function isPolicyDeny(reason: DenyReason): boolean {
  return POLICY_DENY_REASONS.includes(reason);
}

const NAME_PATTERN = /^[A-Za-z0-9_.:*<>-]{1,96}$/;
// Session keys are chosen by the caller (`--session`), so any printable text up to 200 characters.
const ID_PATTERN = /^[^\u0000-\u001f\u007f]{1,200}$/;

/** A tool, capability or agent name as stored, or a fixed label when it does not look like one. */
export function safeName(value: unknown): string {
  return typeof value === 'string' && NAME_PATTERN.test(value) ? value : '<invalid>';
}

/** A session key, run id or lease id as stored, or a fixed label. */
export function safeId(value: unknown): string {
  return typeof value === 'string' && ID_PATTERN.test(value) ? value : '<invalid>';
}

function safeReason(value: unknown): DenyReason {
  return (DENY_REASONS as readonly unknown[]).includes(value) ? (value as DenyReason) : 'other';
}

function safeFailureClass(value: unknown): FailureClass | undefined {
  return (FAILURE_CLASSES as readonly unknown[]).includes(value) ? (value as FailureClass) : undefined;
}

/** Code-unit order: deterministic whatever the process locale is. */
export function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export interface SessionRow {
  sessionKey: string;
  agentId: string;
  createdAt: number;
  updatedAt: number;
}

export interface RunRow {
  runId: string;
  sessionKey: string;
  agentId: string;
  leaseId: string | null;
  startedAt: number;
  durationMs: number | null;
  outcome: 'success' | 'failure' | 'refused' | null;
  exitCode: number | null;
  failureClass: FailureClass | undefined;
  /** Only for a run refused before it started (outcome `refused`). */
  refusal: RunRefusal | undefined;
  resultRefCount: number;
  resultRefBytes: number;
  estSavedTokens: number | null;
  savedRatio: number | null;
  /** Only for a run whose first attempt failed: what the one-shot repair did. */
  repair: RepairRecord | undefined;
}

/** Why a run was refused before it started: closed enums and names of the tool table only. */
export interface RunRefusal {
  code: RefusalCode;
  reason: RefusalReason;
  capabilities: string[];
  tools: string[];
}

/** A denied tally with the reason the dispatcher gave. */
export interface DenyTally {
  tool: string;
  capability: string;
  reason: DenyReason;
  count: number;
}

export interface RunAudit {
  toolCalls: ToolCallTally[];
  denies: DenyTally[];
}

const RUN_COLUMNS = `run_id, session_key, agent_id, lease_id, started_at, duration_ms, outcome, exit_code, failure_class,
  result_ref_count, result_ref_bytes, est_saved_tokens, saved_ratio, refusal_code, refusal_reason, refusal_capabilities, refusal_tools,
  repair_attempted, repair_class, repair_outcome`;

interface RawRun {
  run_id: string;
  session_key: string;
  agent_id: string;
  lease_id: string | null;
  started_at: number;
  duration_ms: number | null;
  outcome: string | null;
  exit_code: number | null;
  failure_class: string | null;
  result_ref_count: number;
  result_ref_bytes: number;
  est_saved_tokens: number | null;
  saved_ratio: number | null;
  refusal_code: string | null;
  refusal_reason: string | null;
  refusal_capabilities: string | null;
  refusal_tools: string | null;
  repair_attempted: number | null;
  repair_class: string | null;
  repair_outcome: string | null;
}

/** A stored repair read back: closed enums only; attempted follows from the outcome, whatever the store says. */
function toRepair(r: RawRun): RepairRecord | undefined {
  if (!(REPAIR_OUTCOMES as readonly unknown[]).includes(r.repair_outcome)) return undefined;
  const outcome = r.repair_outcome as RepairOutcome;
  const cls = (REPAIR_CLASSES as readonly unknown[]).includes(r.repair_class) ? (r.repair_class as RepairClass) : null;
  return { attempted: ATTEMPTED_REPAIR_OUTCOMES.includes(outcome), class: cls, outcome };
}

/** A stored name list read back: names of the table (or `<unknown>`) only, whatever wrote the store. */
function refusalList(text: string | null, known: (name: string) => boolean): string[] {
  if (typeof text !== 'string' || text === '') return [];
  return [
    ...new Set(
      text
        .split(',')
        .slice(0, 16)
        .map((n) => (known(n) ? n : UNKNOWN_NAME)),
    ),
  ];
}

function toRefusal(r: RawRun): RunRefusal | undefined {
  if (r.outcome !== 'refused') return undefined;
  return {
    code: (REFUSAL_CODES as readonly unknown[]).includes(r.refusal_code) ? (r.refusal_code as RefusalCode) : 'CAPABILITY_DENIED',
    reason: (REFUSAL_REASONS as readonly unknown[]).includes(r.refusal_reason) ? (r.refusal_reason as RefusalReason) : 'capability_missing',
    capabilities: refusalList(r.refusal_capabilities, isKnownCapability),
    tools: refusalList(r.refusal_tools, isKnownTool),
  };
}

function toRunRow(r: RawRun): RunRow {
  return {
    runId: safeId(r.run_id),
    sessionKey: safeId(r.session_key),
    agentId: safeName(r.agent_id),
    leaseId: r.lease_id === null ? null : safeId(r.lease_id),
    startedAt: Number(r.started_at),
    durationMs: r.duration_ms === null ? null : Number(r.duration_ms),
    outcome: r.outcome === 'success' || r.outcome === 'failure' || r.outcome === 'refused' ? r.outcome : null,
    exitCode: r.exit_code === null ? null : Number(r.exit_code),
    failureClass: safeFailureClass(r.failure_class),
    refusal: toRefusal(r),
    resultRefCount: Number(r.result_ref_count) || 0,
    resultRefBytes: Number(r.result_ref_bytes) || 0,
    estSavedTokens: r.est_saved_tokens === null ? null : Number(r.est_saved_tokens),
    savedRatio: r.saved_ratio === null ? null : Number(r.saved_ratio),
    repair: toRepair(r),
  };
}

interface RawSession {
  session_key: string;
  agent_id: string;
  created_at: number;
  updated_at: number;
}

function toSessionRow(r: RawSession): SessionRow {
  return { sessionKey: safeId(r.session_key), agentId: safeName(r.agent_id), createdAt: Number(r.created_at), updatedAt: Number(r.updated_at) };
}

/** The session with this key; synthesized from its runs when only runs carry it. */
export function findSession(db: Database, sessionKey: string): SessionRow | undefined {
  const row = db.prepare('SELECT session_key, agent_id, created_at, updated_at FROM sessions WHERE session_key = ?').get(sessionKey) as RawSession | undefined;
  if (row) return toSessionRow(row);
  const agg = db.prepare('SELECT MIN(agent_id) AS agent_id, MIN(started_at) AS created_at, MAX(COALESCE(ended_at, started_at)) AS updated_at FROM runs WHERE session_key = ?').get(sessionKey) as {
    agent_id: string | null;
    created_at: number | null;
    updated_at: number | null;
  };
  if (agg.created_at === null) return undefined;
  return toSessionRow({ session_key: sessionKey, agent_id: agg.agent_id ?? '', created_at: agg.created_at, updated_at: agg.updated_at ?? agg.created_at });
}

/** The most recently updated sessions, newest first (index `sessions_updated`). */
export function newestSessions(db: Database, limit: number): SessionRow[] {
  const rows = db.prepare('SELECT session_key, agent_id, created_at, updated_at FROM sessions ORDER BY updated_at DESC, session_key DESC LIMIT ?').all(limit) as RawSession[];
  return rows.map(toSessionRow);
}

export function findRun(db: Database, runId: string): RunRow | undefined {
  const row = db.prepare(`SELECT ${RUN_COLUMNS} FROM runs WHERE run_id = ?`).get(runId) as RawRun | undefined;
  return row ? toRunRow(row) : undefined;
}

export function countSessionRuns(db: Database, sessionKey: string): number {
  return (db.prepare('SELECT COUNT(*) AS n FROM runs WHERE session_key = ?').get(sessionKey) as { n: number }).n;
}

/** The newest `limit` runs of a session, returned oldest first (index `runs_session`). */
export function sessionRuns(db: Database, sessionKey: string, limit: number): RunRow[] {
  const rows = db.prepare(`SELECT ${RUN_COLUMNS} FROM runs WHERE session_key = ? ORDER BY started_at DESC, run_id DESC LIMIT ?`).all(sessionKey, limit) as RawRun[];
  return rows.map(toRunRow).reverse();
}

function sortTallies<T extends { tool: string; capability: string; decision?: string }>(list: T[]): T[] {
  return list.sort((a, b) => compareText(a.tool, b.tool) || compareText(a.decision ?? '', b.decision ?? '') || compareText(a.capability, b.capability));
}

const IN_CHUNK = 500;

/**
 * Folds the `capability:audited` events of each run's lease into
 * `{tool, capability, decision, count}` tallies (and the deny reasons), in
 * one grouped query per 500 leases (index `audit_lease`). A run whose lease
 * has no audit events falls back to the tallies `recordRun` stored (reason
 * `other`: tallies do not keep it).
 */
export function auditByRun(db: Database, runs: readonly RunRow[]): Map<string, RunAudit> {
  const tallies = new Map<string, Map<string, ToolCallTally>>();
  const denies = new Map<string, Map<string, DenyTally>>();
  const add = (runId: string, rawTool: unknown, rawCapability: unknown, rawDecision: unknown, n: number, rawReason: unknown): void => {
    const tool = safeName(rawTool);
    const capability = safeName(rawCapability);
    const decision = rawDecision === 'allow' ? 'allow' : 'deny';
    const perRun = tallies.get(runId) ?? new Map<string, ToolCallTally>();
    tallies.set(runId, perRun);
    const key = `${tool}\u0000${capability}\u0000${decision}`;
    const t = perRun.get(key);
    if (t) t.count += n;
    else perRun.set(key, { tool, capability, decision, count: n });
    if (decision === 'allow') return;
    const reason = safeReason(rawReason);
    const perRunDenies = denies.get(runId) ?? new Map<string, DenyTally>();
    denies.set(runId, perRunDenies);
    const dkey = `${key}\u0000${reason}`;
    const d = perRunDenies.get(dkey);
    if (d) d.count += n;
    else perRunDenies.set(dkey, { tool, capability, reason, count: n });
  };

  const runsOfLease = new Map<string, string[]>();
  for (const run of runs) {
    if (run.leaseId === null) continue;
    runsOfLease.set(run.leaseId, [...(runsOfLease.get(run.leaseId) ?? []), run.runId]);
  }
  const leases = [...runsOfLease.keys()];
  for (let i = 0; i < leases.length; i += IN_CHUNK) {
    const chunk = leases.slice(i, i + IN_CHUNK);
    const rows = db
      .prepare(
        `SELECT lease_id, tool, capability, decision, reason, COUNT(*) AS n FROM audit_events
         WHERE lease_id IN (${chunk.map(() => '?').join(',')})
         GROUP BY lease_id, tool, capability, decision, reason`,
      )
      .all(...chunk) as { lease_id: string; tool: string; capability: string; decision: string; reason: string | null; n: number }[];
    for (const r of rows) for (const runId of runsOfLease.get(r.lease_id) ?? []) add(runId, r.tool, r.capability, r.decision, r.n, r.reason);
  }

  const missing = runs.filter((r) => !tallies.has(r.runId)).map((r) => r.runId);
  for (let i = 0; i < missing.length; i += IN_CHUNK) {
    const chunk = missing.slice(i, i + IN_CHUNK);
    const rows = db.prepare(`SELECT run_id, tool, capability, decision, count FROM run_tool_calls WHERE run_id IN (${chunk.map(() => '?').join(',')})`).all(...chunk) as {
      run_id: string;
      tool: string;
      capability: string;
      decision: string;
      count: number;
    }[];
    for (const r of rows) add(r.run_id, r.tool, r.capability, r.decision, Number(r.count), 'other');
  }

  const out = new Map<string, RunAudit>();
  for (const run of runs) {
    out.set(run.runId, {
      toolCalls: sortTallies([...(tallies.get(run.runId)?.values() ?? [])]),
      denies: [...(denies.get(run.runId)?.values() ?? [])].sort((a, b) => b.count - a.count || compareText(a.capability, b.capability) || compareText(a.tool, b.tool) || compareText(a.reason, b.reason)),
    });
  }
  return out;
}

// ---------------------------------------------------------------- fleet

export interface WindowRunStats {
  runs: number;
  failures: number;
  runsWithResultRefs: number;
  resultRefCount: number;
  resultRefBytes: number;
  estSavedTokens: number;
  /** Failed runs by class (classes with no runs are left out). */
  failureClasses: { failureClass: FailureClass; count: number }[];
  /** Runs refused before they started (outcome `refused`). */
  refused: number;
  /** Refused runs by reason (reasons with no runs are left out). */
  refusalReasons: { reason: RefusalReason; count: number }[];
  /** One-shot repairs: attempted (the model was asked) and succeeded (the repaired script ran clean). */
  repairs: { attempted: number; succeeded: number };
}

/**
 * One-shot repairs of the runs started in [since, until]: attempted (the model
 * was asked) and succeeded. Read live (partial index runs_repair, migration 10:
 * only runs whose repair was attempted), not from the fleet rollup.
 */
export function windowRepairs(db: Database, since: number, until: number): { attempted: number; succeeded: number } {
  const row = db
    .prepare(
      `SELECT COUNT(*) AS attempted, COALESCE(SUM(repair_outcome = 'repaired'), 0) AS succeeded
       FROM runs WHERE repair_attempted = 1 AND started_at >= ? AND started_at <= ?`,
    )
    .get(since, until) as { attempted: number; succeeded: number };
  return { attempted: row.attempted ?? 0, succeeded: row.succeeded ?? 0 };
}

/**
 * Run count, failures by class, ResultRef and savings totals of a window,
 * from its run sums (fleet-rollup.ts: one pass over the window, or the
 * cached days plus the partial ones).
 */
export function windowRunStats(sums: RunSums, repairs: { attempted: number; succeeded: number }): WindowRunStats {
  const at = (i: number): number => sums[i] ?? 0;
  const classes = 7;
  const reasons = classes + FAILURE_CLASSES.length;
  return {
    runs: at(0),
    failures: at(1),
    runsWithResultRefs: at(2),
    resultRefCount: at(3),
    resultRefBytes: at(4),
    estSavedTokens: Math.round(at(5)),
    failureClasses: FAILURE_CLASSES.map((failureClass, i) => ({ failureClass, count: at(classes + i) })).filter((c) => c.count > 0),
    refused: at(6),
    refusalReasons: REFUSAL_REASONS.map((reason, i) => ({ reason, count: at(reasons + i) })).filter((r) => r.count > 0),
    repairs,
  };
}

export interface DeniedCapability {
  capability: string;
  events: number;
  runs: number;
  /** The most frequent reason, ties broken by name. */
  topReason: DenyReason;
  /** The most frequent tool, ties broken by name. */
  topTool: string;
}

/**
 * Capabilities most often denied in the window: deny events and distinct
 * runs per capability, the top `limit` by events (the sums come from the
 * partial index `audit_deny_at`, migration 3, which holds only denies).
 */
export function deniedCapabilities(denies: DenySums, limit: number): { list: DeniedCapability[]; total: number } {
  return deniedBy(denies, limit, 'capability');
}

/**
 * Tools most often denied by tool policy or role in the window (reasons
 * explicit_deny, not_in_profile, role_coordinator), the same shape keyed by
 * tool (`capability` holds the tool name).
 */
export function deniedByPolicy(denies: DenySums, limit: number): { list: DeniedCapability[]; total: number } {
  return deniedBy(denies, limit, 'policy');
}

/**
 * The subject of a deny row: for a capability deny its capability, or, when
 * no capability was involved (`none`: the control plane, an unknown tool),
 * the tool, else the reason class; for a policy deny the tool.
 */
function denySubject(kind: 'capability' | 'policy', capability: string, tool: string, reason: DenyReason): string {
  if (kind === 'policy') return tool;
  if (capability !== 'none') return capability;
  return tool !== '<unknown>' && tool !== '<invalid>' ? tool : reason;
}

function deniedBy(denies: DenySums, limit: number, kind: 'capability' | 'policy'): { list: DeniedCapability[]; total: number } {
  // Distinct runs: per capability for capability subjects; per tool for the rest, whose
  // rows all carry capability "none" (policy denies, the control plane, unknown tools).
  const bySubject = new Map<string, { events: number; runs: number; reasons: Map<string, number>; tools: Map<string, number> }>();
  for (const [key, n] of denies.tallies) {
    const [capability = '', tool = '', rawReason = ''] = key.split('\u0000');
    const reason = safeReason(rawReason);
    if (isPolicyDeny(reason) !== (kind === 'policy')) continue;
    const subject = denySubject(kind, capability, tool, reason);
    const entry = bySubject.get(subject) ?? { events: 0, runs: 0, reasons: new Map(), tools: new Map() };
    if (!bySubject.has(subject)) {
      bySubject.set(subject, entry);
      entry.runs = capability !== 'none' ? (denies.capRuns.get(capability)?.size ?? 0) : 0;
    }
    if (capability === 'none') entry.runs = Math.max(entry.runs, denies.noneToolRuns.get(tool)?.size ?? 0);
    entry.events += n;
    entry.reasons.set(reason, (entry.reasons.get(reason) ?? 0) + n);
    entry.tools.set(tool, (entry.tools.get(tool) ?? 0) + n);
  }
  const top = (m: Map<string, number>): string => [...m].sort((a, b) => b[1] - a[1] || compareText(a[0], b[0]))[0]?.[0] ?? 'other';
  const list = [...bySubject]
    .map(([capability, e]) => ({ capability, events: e.events, runs: e.runs, topReason: top(e.reasons) as DenyReason, topTool: top(e.tools) }))
    .sort((a, b) => b.events - a.events || compareText(a.capability, b.capability));
  return { list: list.slice(0, limit), total: list.length };
}

/**
 * Durable-run states, read only when the durability layer created its table.
 * Returns undefined when there is no such data (no table, or not the expected
 * columns): fleet then reports nothing rather than a misleading zero.
 *
 * Expected shape (the durability issue owns it): a table `resumable_runs`
 * with a `status` column holding `resumable` or `orphaned`.
 */
export function durableRunCounts(db: Database): { resumable: number; orphaned: number } | undefined {
  const table = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'resumable_runs'").get();
  if (!table) return undefined;
  const columns = (db.prepare("SELECT name FROM pragma_table_info('resumable_runs')").all() as { name: string }[]).map((c) => c.name);
  if (!columns.includes('status')) return undefined;
  const rows = db.prepare("SELECT status, COUNT(*) AS n FROM resumable_runs WHERE status IN ('resumable', 'orphaned') GROUP BY status").all() as {
    status: string;
    n: number;
  }[];
  const counts = { resumable: 0, orphaned: 0 };
  for (const r of rows) counts[r.status as 'resumable' | 'orphaned'] = r.n;
  return counts;
}
