/**
 * Stores a plan run as it happens, so `comis run --follow <planRunId>` in
 * another process sees the same stream: the plan row, one row per child, and
 * every (content-free) event. Child orchestrate runs are recorded as ordinary
 * runs with parent_run_id = the plan run id, so `explain` lists them.
 */
import type { OrchestrateOutcome } from '../orchestrate/runner.js';
import { planOwnerAlive } from '../store/durable-runs.js';
import { recordRefusal, recordRun, touchSession, type RefusalRecord } from '../store/runs.js';
import type { Database } from '../store/store.js';
import type { CoordinatorEvent } from './events.js';

export interface PlanEventLog {
  append(event: CoordinatorEvent): void;
  recordChildRun(outcome: OrchestrateOutcome): void;
  /** A child refused before it started: stored as a refused run (content-free). */
  recordChildRefusal(refusal: RefusalRecord): void;
}

/** A sink writing events to the store; each write is one small statement. */
export function createPlanEventLog(db: Database): PlanEventLog {
  const insertEvent = db.prepare('INSERT INTO plan_events (plan_run_id, type, payload, at) VALUES (?, ?, ?, ?)');
  const insertPlan = db.prepare(
    `INSERT INTO plan_runs (plan_run_id, session_key, lead_agent_id, plan_name, pid, started_at, status, child_count)
     VALUES (?, ?, ?, ?, ?, ?, 'running', ?)`,
  );
  const insertChild = db.prepare(`INSERT INTO plan_children (plan_run_id, child_id, agent_id, state, granted_caps, denied_caps) VALUES (?, ?, ?, 'queued', ?, ?)`);
  const startChild = db.prepare(`UPDATE plan_children SET state = 'running', run_id = ? WHERE plan_run_id = ? AND child_id = ?`);
  const endChild = db.prepare(`UPDATE plan_children SET state = ?, run_id = ?, duration_ms = ?, steps = ?, summary_chars = ?, result_bytes = ? WHERE plan_run_id = ? AND child_id = ?`);
  const endPlan = db.prepare(`UPDATE plan_runs SET status = ?, ended_at = ?, lead_context_chars = ? WHERE plan_run_id = ?`);
  return {
    append(e) {
      db.transaction(() => {
        const planRunId = 'planRunId' in e ? e.planRunId : undefined;
        if (e.type === 'plan:started') {
          // The session belongs to the lead (first writer wins), so `explain <session>` names the lead.
          touchSession(db, e.sessionKey, e.leadAgentId, e.timestamp);
          insertPlan.run(e.planRunId, e.sessionKey, e.leadAgentId, e.planName, process.pid, e.timestamp, e.children.length);
          for (const c of e.children) insertChild.run(e.planRunId, c.childId, c.agentId, c.grantedCaps.join(','), c.deniedCaps.join(','));
        } else if (e.type === 'child:started') startChild.run(e.runId, e.planRunId, e.childId);
        else if (e.type === 'child:finished') endChild.run(e.state, e.runId ?? null, e.durationMs, e.stepsExecuted, e.summaryChars, e.resultRef?.bytes ?? null, e.planRunId, e.childId);
        else if (e.type === 'plan:finished') endPlan.run(e.outcome, e.timestamp, e.leadContextChars, e.planRunId);
        insertEvent.run(planRunId ?? currentPlan(db, e), e.type, JSON.stringify(e), e.timestamp);
      })();
    },
    recordChildRun(outcome) {
      recordRun(db, outcome.record, outcome.audit);
    },
    recordChildRefusal(refusal) {
      recordRefusal(db, refusal);
    },
  };
}

/** Progress events carry only the child's runId: find its plan run. */
function currentPlan(db: Database, e: CoordinatorEvent): string {
  const runId = 'runId' in e ? e.runId : undefined;
  const row = db.prepare('SELECT plan_run_id AS p FROM plan_children WHERE run_id = ?').get(runId ?? '') as { p: string } | undefined;
  return row?.p ?? '';
}

export interface FollowOptions {
  db: Database;
  planRunId: string;
  onEvent: (event: CoordinatorEvent) => void;
  pollMs?: number;
  signal?: AbortSignal;
  /** Whether the recording process is alive (default: its pid is alive and started before the plan did, so a reused pid does not count). */
  isAlive?: (pid: number) => boolean;
}

/**
 * Replays a stored plan run's events and tails new ones until `plan:finished`
 * (or the recording process is gone, or the signal aborts). Read-only.
 * Resolves with the final status.
 */
export async function followPlanRun(options: FollowOptions): Promise<'success' | 'failure' | 'interrupted' | 'running'> {
  const { db, planRunId } = options;
  const plan = db.prepare('SELECT pid, status, started_at FROM plan_runs WHERE plan_run_id = ?');
  const events = db.prepare('SELECT id, payload FROM plan_events WHERE plan_run_id = ? AND id > ? ORDER BY id LIMIT 500');
  let last = 0;
  for (;;) {
    const rows = events.all(planRunId, last) as { id: number; payload: string }[];
    for (const row of rows) {
      last = row.id;
      const event = JSON.parse(row.payload) as CoordinatorEvent;
      options.onEvent(event);
      if (event.type === 'plan:finished') return event.outcome;
    }
    if (rows.length > 0) continue;
    const p = plan.get(planRunId) as { pid: number | null; status: string; started_at: number } | undefined;
    if (!p) return 'interrupted';
    if (p.status !== 'running') return p.status as 'success' | 'failure' | 'interrupted';
    if (p.pid !== null && !(options.isAlive ? options.isAlive(p.pid) : planOwnerAlive(p.pid, p.started_at))) return 'interrupted';
    if (options.signal?.aborted) return 'running';
    await new Promise((r) => setTimeout(r, options.pollMs ?? 200));
  }
}

/** Does the store know this plan run? */
export function planRunExists(db: Database, planRunId: string): boolean {
  return db.prepare('SELECT 1 FROM plan_runs WHERE plan_run_id = ?').get(planRunId) !== undefined;
}
