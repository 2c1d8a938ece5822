/**
 * `comis explain`: the content-free report of one session (or one run).
 * Its `orchestrate` section has one entry per run, shaped as seed 000 shows,
 * with tool calls folded from the audit events of that run's own lease, and
 * a deterministic `likelyRootCause` (./root-cause.ts).
 *
 * Bounded: a report covers the newest `limit` runs of a session (default
 * 200, at most 1000), read through indexes; the verdict is computed over
 * the runs it shows. Security property: ids, names, counts, durations and
 * closed enums only; no script text, stdout, arguments, results or bearers
 * are stored, so none can be reported.
 */
import { getDurableRun, listDurableRuns, type DurableStatus, type OrphanReason } from '../store/durable-runs.js';
import { ComisError } from '../errors.js';
import { auditByRun, countSessionRuns, findRun, findSession, newestSessions, isPolicyDeny, sessionRuns, type DenyReason, type DenyTally, type RunRefusal, type RunRow, type SessionRow } from '../store/obs-queries.js';
import type { FailureClass, RepairRecord, ToolCallTally } from '../store/runs.js';
import type { Database } from '../store/store.js';
import { likelyRootCause, type LikelyRootCause } from './root-cause.js';

export const DEFAULT_EXPLAIN_LIMIT = 200;
export const MAX_EXPLAIN_LIMIT = 1000;
/** How many session keys an unknown-key error lists. */
export const SUGGESTED_SESSIONS = 5;

/** One entry of the `orchestrate` section (seed 000's run record). */
export interface ExplainRunEntry {
  runId: string;
  leaseId: string | null;
  startedAt: string;
  /** `refused`: refused before it started (comis exited 4); nothing ran, so no lease and no exit code. */
  outcome: 'success' | 'failure' | 'refused';
  durationMs: number | null;
  exitCode: number | null;
  failureClass?: FailureClass;
  /** Only on a refused run: the error code, the closed reason, and the capabilities and tools it named. */
  refusal?: RunRefusal;
  toolCalls: ToolCallTally[];
  /**
   * Calls the agent's tool policy or role denied (the capability was held),
   * apart from capability denies; present only when there were any.
   */
  policyDenies?: { tool: string; reason: DenyReason; count: number }[];
  /** Present only when the run materialized ResultRefs. */
  resultRefs?: { count: number; bytes: number };
  /** Present only when the run materialized ResultRefs and recorded an estimate. */
  savings?: { estSavedTokens: number; savedRatio?: number };
  /** Present only when the run's first attempt failed: what the one-shot repair did (content-free). */
  repair?: RepairRecord;
}

/** One child of a coordinator plan run (`comis run`): ids, states, counts and sizes only. */
export interface ExplainPlanChild {
  childId: string;
  agentId: string;
  runId: string | null;
  state: string;
  durationMs: number | null;
  steps: number;
  summaryChars: number;
  resultBytes: number | null;
  grantedCaps: string[];
  deniedCaps: string[];
}

/** A coordinator plan run of the session, with its children. */
export interface ExplainPlanRun {
  planRunId: string;
  leadAgentId: string;
  status: string;
  startedAt: string;
  durationMs: number | null;
  /** Size of the lead's recorded context (Σ summaries + drill-in lines). */
  leadContextChars: number;
  children: ExplainPlanChild[];
}

export interface ExplainReport {
  scope: 'session' | 'run';
  sessionKey: string;
  agentId: string;
  createdAt: string;
  updatedAt: string;
  /** Runs recorded in the session (1 for a run report). */
  runCount: number;
  /** True when older runs were left out (see `limit`). */
  truncated: boolean;
  likelyRootCause: LikelyRootCause;
  orchestrate: ExplainRunEntry[];
  /** Present only when the session ran coordinator plans (`comis run`). */
  coordinator?: ExplainPlanRun[];
  /** Present only when the session had durable runs: their state (resumable, orphaned with a reason, …). */
  durable?: ExplainDurableRun[];
}

/** A durable run's state, content-free (store/durable-runs.ts). */
export interface ExplainDurableRun {
  runId: string;
  kind: 'orchestrate' | 'plan';
  status: DurableStatus;
  reason?: OrphanReason;
  resumedFrom?: string;
  resumedBy?: string;
  expiresAt: string;
}

function durableEntries(db: Database, sessionKey: string): ExplainDurableRun[] {
  return listDurableRuns(db, { sessionKey, statuses: ['running', 'resumable', 'orphaned', 'resumed', 'completed'] }).map((d) => ({
    runId: d.runId,
    kind: d.kind,
    status: d.status,
    ...(d.reason ? { reason: d.reason } : {}),
    ...(d.resumedFrom ? { resumedFrom: d.resumedFrom } : {}),
    ...(d.resumedBy ? { resumedBy: d.resumedBy } : {}),
    expiresAt: iso(d.expiresAt),
  }));
}

export type ExplainTarget = { key: string } | { last: true };

export interface ExplainOptions {
  /** Newest runs to report, 1..1000 (default 200). */
  limit?: number;
}

function iso(ms: number): string {
  return Number.isFinite(ms) ? new Date(ms).toISOString() : new Date(0).toISOString();
}

function toEntry(run: RunRow, toolCalls: ToolCallTally[], denies: readonly DenyTally[]): ExplainRunEntry {
  const outcome = run.outcome ?? (run.exitCode === 0 && !run.failureClass ? 'success' : 'failure');
  const entry: ExplainRunEntry = {
    runId: run.runId,
    leaseId: run.leaseId,
    startedAt: iso(run.startedAt),
    outcome,
    durationMs: run.durationMs,
    exitCode: run.exitCode,
    toolCalls,
  };
  if (outcome === 'failure' && run.failureClass) entry.failureClass = run.failureClass;
  if (outcome === 'refused' && run.refusal) entry.refusal = run.refusal;
  if (run.repair) entry.repair = run.repair;
  const policy = denies.filter((d) => isPolicyDeny(d.reason)).map(({ tool, reason, count }) => ({ tool, reason, count }));
  if (policy.length > 0) entry.policyDenies = policy;
  if (run.resultRefCount > 0) {
    entry.resultRefs = { count: run.resultRefCount, bytes: run.resultRefBytes };
    if (run.estSavedTokens !== null) {
      entry.savings = { estSavedTokens: Math.max(0, Math.round(run.estSavedTokens)) };
      if (run.savedRatio !== null && Number.isFinite(run.savedRatio)) entry.savings.savedRatio = Math.min(1, Math.max(0, run.savedRatio));
    }
  }
  return entry;
}

function notFound(db: Database, key: string | undefined): ComisError {
  const newest = newestSessions(db, SUGGESTED_SESSIONS).map((s) => s.sessionKey);
  const shown = key !== undefined && key.length > 120 ? `${key.slice(0, 120)}…` : key;
  const message = key === undefined ? 'No sessions are recorded in the store yet.' : `No session or run "${shown}" in the store.`;
  const hint = newest.length === 0 ? 'Runs are recorded by `comis orchestrate`; run a script first.' : `Newest sessions: ${newest.join(', ')}. \`comis explain --last\` explains the newest.`;
  return new ComisError('NOT_FOUND', message, { hint, details: { newestSessions: newest } });
}

const MAX_PLANS = 50;

/** The session's coordinator plan runs, newest first; empty on stores without the plan tables. */
function planRuns(db: Database, sessionKey: string): ExplainPlanRun[] {
  const hasTables = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'plan_runs'").get();
  if (!hasTables) return [];
  const plans = db
    .prepare(
      `SELECT plan_run_id AS planRunId, lead_agent_id AS leadAgentId, status, started_at AS startedAt, ended_at AS endedAt,
              lead_context_chars AS leadContextChars
         FROM plan_runs WHERE session_key = ? ORDER BY started_at DESC LIMIT ?`,
    )
    .all(sessionKey, MAX_PLANS) as { planRunId: string; leadAgentId: string; status: string; startedAt: number; endedAt: number | null; leadContextChars: number }[];
  const children = db.prepare(
    `SELECT child_id AS childId, agent_id AS agentId, run_id AS runId, state, duration_ms AS durationMs, steps,
            summary_chars AS summaryChars, result_bytes AS resultBytes, granted_caps AS granted, denied_caps AS denied
       FROM plan_children WHERE plan_run_id = ? ORDER BY child_id`,
  );
  const caps = (text: string): string[] => (text ? text.split(',').filter(Boolean) : []);
  return plans.map((p) => ({
    planRunId: p.planRunId,
    leadAgentId: p.leadAgentId,
    status: p.status,
    startedAt: iso(p.startedAt),
    durationMs: p.endedAt === null ? null : p.endedAt - p.startedAt,
    leadContextChars: p.leadContextChars,
    children: (children.all(p.planRunId) as (Omit<ExplainPlanChild, 'grantedCaps' | 'deniedCaps'> & { granted: string; denied: string })[]).map(({ granted, denied, ...c }) => ({
      ...c,
      grantedCaps: caps(granted),
      deniedCaps: caps(denied),
    })),
  }));
}

function buildReport(db: Database, scope: 'session' | 'run', session: SessionRow, runs: RunRow[], runCount: number): ExplainReport {
  const audit = auditByRun(db, runs);
  const entries: ExplainRunEntry[] = [];
  const signals = runs.map((run) => {
    const a = audit.get(run.runId) ?? { toolCalls: [], denies: [] };
    entries.push(toEntry(run, a.toolCalls, a.denies));
    return {
      runId: run.runId,
      agentId: run.agentId,
      startedAt: run.startedAt,
      outcome: run.outcome,
      exitCode: run.exitCode,
      failureClass: run.failureClass,
      refusal: run.refusal,
      repair: run.repair,
      durationMs: run.durationMs,
      toolCalls: a.toolCalls,
      denies: a.denies,
    };
  });
  const report: ExplainReport = {
    scope,
    sessionKey: session.sessionKey,
    agentId: session.agentId,
    createdAt: iso(session.createdAt),
    updatedAt: iso(session.updatedAt),
    runCount,
    truncated: runCount > runs.length,
    likelyRootCause: likelyRootCause(signals),
    orchestrate: entries,
  };
  if (scope === 'session') {
    const plans = planRuns(db, session.sessionKey);
    if (plans.length > 0) report.coordinator = plans;
  }
  const durable = durableEntries(db, session.sessionKey).filter((d) => scope === 'session' || runs.some((r) => r.runId === d.runId) || runs.length === 0);
  if (durable.length > 0) report.durable = durable;
  return report;
}

/**
 * Explains a session key, a run id (`r-…`), or the newest session. A key is
 * looked up as a session first, then as a run. Throws NOT_FOUND listing the
 * newest session keys when neither exists.
 */
export function explain(db: Database, target: ExplainTarget, options: ExplainOptions = {}): ExplainReport {
  const limit = Math.min(MAX_EXPLAIN_LIMIT, Math.max(1, Math.trunc(options.limit ?? DEFAULT_EXPLAIN_LIMIT)));
  if ('last' in target) {
    const newest = newestSessions(db, 1)[0];
    if (!newest) throw notFound(db, undefined);
    return buildReport(db, 'session', newest, sessionRuns(db, newest.sessionKey, limit), countSessionRuns(db, newest.sessionKey));
  }
  const session = findSession(db, target.key);
  if (session) return buildReport(db, 'session', session, sessionRuns(db, target.key, limit), countSessionRuns(db, target.key));
  const run = findRun(db, target.key);
  if (run) {
    const owner = findSession(db, run.sessionKey) ?? { sessionKey: run.sessionKey, agentId: run.agentId, createdAt: run.startedAt, updatedAt: run.startedAt };
    return buildReport(db, 'run', owner, [run], 1);
  }
  // A durable run whose comis died mid-run has no run record, only its durable row.
  const durable = getDurableRun(db, target.key) ?? listDurableRuns(db, { sessionKey: target.key, statuses: ['running', 'resumable', 'orphaned', 'resumed'] })[0];
  if (durable) {
    const owner = { sessionKey: durable.sessionKey, agentId: durable.agentId, createdAt: durable.createdAt, updatedAt: durable.updatedAt };
    return buildReport(db, durable.runId === target.key ? 'run' : 'session', owner, [], 0);
  }
  throw notFound(db, target.key);
}
