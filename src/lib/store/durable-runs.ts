/**
 * Durable runs in the store (migration 9): one content-free row per durable
 * orchestrate run and per coordinator plan run, and the start-up sweep that
 * every store opening runs.
 *
 * The sweep never executes anything. It settles each row whose fate is known:
 * a `running` row whose comis process is gone becomes `resumable` (reason
 * `interrupted`, when its pinned script and a checkpoint survive) or an
 * `orphaned` row with a closed-enum reason; a `resumable` row whose pinned
 * script or checkpoint is gone, or whose TTL passed, becomes an orphan; an
 * orphan's durable area (`$COMIS_HOME/durable/<runId>`) and leftover run
 * directory are reclaimed. A completed run's area is kept for `comis replay`
 * until it expires, then reclaimed.
 */
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

import type { Database } from 'better-sqlite3';

export const ORPHAN_REASONS = ['checkpoint_missing', 'script_missing', 'expired', 'resume_prestart_failed', 'interrupted'] as const;
export type OrphanReason = (typeof ORPHAN_REASONS)[number];
export type DurableStatus = 'running' | 'resumable' | 'orphaned' | 'resumed' | 'completed' | 'reclaimed';
export type DurableKind = 'orchestrate' | 'plan';
/** How long a durable run's area (pinned script, checkpoint, recording) is kept. */
export const DURABLE_TTL_MS = 24 * 60 * 60 * 1000;
/** How long a settled row (an orphan, once its artifacts are gone) stays for explain and fleet. */
const ROW_RETENTION_MS = 30 * DURABLE_TTL_MS;

export interface DurableRow {
  runId: string;
  kind: DurableKind;
  agentId: string;
  sessionKey: string;
  status: DurableStatus;
  reason?: OrphanReason;
  scriptRef?: string;
  checkpointRef?: string;
  resumedFrom?: string;
  resumedBy?: string;
  createdAt: number;
  updatedAt: number;
  expiresAt: number;
}

/** `durable/<runId>`, relative to $COMIS_HOME: where a durable run's pinned script, checkpoint and recording live. */
export function durableAreaRef(runId: string): string {
  return `durable/${runId}`;
}

function hasTable(db: Database): boolean {
  return db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'resumable_runs'").get() !== undefined;
}

/** The start time of a live process (field 22 of /proc/<pid>/stat), or undefined when it is gone or a zombie. */
export function processStart(pid: number): string | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
    if (rest[0] === 'Z' || rest[0] === 'X') return undefined;
    return rest[19];
  } catch {
    return undefined;
  }
}

/** Clock ticks per second of /proc/<pid>/stat's start time (USER_HZ: 100 on every Linux ABI). */
const CLK_TCK = 100;
let bootMs: number | undefined;

/** When a live process started, in ms since the epoch (to the boot time's second), or undefined when it is gone. */
export function processStartedAt(pid: number): number | undefined {
  const ticks = processStart(pid);
  if (ticks === undefined) return undefined;
  if (bootMs === undefined) {
    try {
      const m = /^btime (\d+)$/m.exec(readFileSync('/proc/stat', 'utf8'));
      bootMs = m ? Number(m[1]) * 1000 : 0;
    } catch {
      bootMs = 0;
    }
  }
  return bootMs + (Number(ticks) * 1000) / CLK_TCK;
}

/**
 * Whether the comis process that started a plan run at `startedAt` (ms) still
 * runs as `pid`: alive, and started before the plan did (a pid reused by a
 * process started later is not the owner). The slack covers the boot time's
 * one-second resolution.
 */
export function planOwnerAlive(pid: number, startedAt: number): boolean {
  const at = processStartedAt(pid);
  return at !== undefined && at <= startedAt + 2000;
}

/** Records a run starting (status running, owned by this process). */
export function startDurableRun(db: Database, row: { runId: string; kind: DurableKind; agentId: string; sessionKey: string; scriptRef?: string; resumedFrom?: string }, now = Date.now()): void {
  db.prepare(
    `INSERT INTO resumable_runs (run_id, kind, agent_id, session_key, status, script_ref, resumed_from, owner_pid, owner_start, created_at, updated_at, expires_at)
     VALUES (?, ?, ?, ?, 'running', ?, ?, ?, ?, ?, ?, ?)`,
  ).run(row.runId, row.kind, row.agentId, row.sessionKey, row.scriptRef ?? null, row.resumedFrom ?? null, process.pid, processStart(process.pid) ?? '0', now, now, now + DURABLE_TTL_MS);
}

/** Settles a run this process ran: resumable (with its checkpoint, if any), completed, or orphaned. */
export function endDurableRun(db: Database, runId: string, end: { status: 'resumable' | 'completed' | 'orphaned'; checkpointRef?: string; reason?: OrphanReason }, now = Date.now()): void {
  db.prepare('UPDATE resumable_runs SET status = ?, checkpoint_ref = ?, reason = ?, updated_at = ?, expires_at = ?, owner_pid = NULL, owner_start = NULL WHERE run_id = ?').run(
    end.status,
    end.checkpointRef ?? null,
    end.reason ?? null,
    now,
    now + DURABLE_TTL_MS,
    runId,
  );
}

/** A resumable run taken over by its resume (status resumed, naming the new run). */
export function markResumed(db: Database, runId: string, by: string, now = Date.now()): void {
  db.prepare("UPDATE resumable_runs SET status = 'resumed', resumed_by = ?, updated_at = ? WHERE run_id = ?").run(by, now, runId);
}

interface RawRow {
  run_id: string;
  kind: DurableKind;
  agent_id: string;
  session_key: string;
  status: DurableStatus;
  reason: OrphanReason | null;
  script_ref: string | null;
  checkpoint_ref: string | null;
  resumed_from: string | null;
  resumed_by: string | null;
  owner_pid: number | null;
  owner_start: string | null;
  created_at: number;
  updated_at: number;
  expires_at: number;
}

function fromRaw(r: RawRow): DurableRow {
  return {
    runId: r.run_id,
    kind: r.kind,
    agentId: r.agent_id,
    sessionKey: r.session_key,
    status: r.status,
    ...(r.reason ? { reason: r.reason } : {}),
    ...(r.script_ref ? { scriptRef: r.script_ref } : {}),
    ...(r.checkpoint_ref ? { checkpointRef: r.checkpoint_ref } : {}),
    ...(r.resumed_from ? { resumedFrom: r.resumed_from } : {}),
    ...(r.resumed_by ? { resumedBy: r.resumed_by } : {}),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    expiresAt: r.expires_at,
  };
}

export function getDurableRun(db: Database, runId: string): DurableRow | undefined {
  if (!hasTable(db)) return undefined;
  const r = db.prepare('SELECT * FROM resumable_runs WHERE run_id = ?').get(runId) as RawRow | undefined;
  return r ? fromRaw(r) : undefined;
}

/** Resumable and orphaned runs (optionally of one session), newest first. */
export function listDurableRuns(db: Database, filter: { sessionKey?: string; statuses?: readonly DurableStatus[] } = {}): DurableRow[] {
  if (!hasTable(db)) return [];
  const statuses = filter.statuses ?? ['resumable', 'orphaned'];
  const marks = statuses.map(() => '?').join(',');
  const where = `status IN (${marks})${filter.sessionKey ? ' AND session_key = ?' : ''}`;
  const args: unknown[] = [...statuses, ...(filter.sessionKey ? [filter.sessionKey] : [])];
  return (db.prepare(`SELECT * FROM resumable_runs WHERE ${where} ORDER BY created_at DESC LIMIT 200`).all(...args) as RawRow[]).map(fromRaw);
}

/** Removes what is left of a run on disk: its durable area and any run directory named for it. */
export function reclaimArtifacts(home: string, runId: string): void {
  if (!/^[A-Za-z0-9_-]+$/.test(runId)) return;
  rmSync(join(home, durableAreaRef(runId)), { recursive: true, force: true });
  reclaimRunDir(home, runId);
}

/** What the sweep changed, for tests and messages. */
export interface SweepReport {
  interrupted: string[];
  /** Coordinator plan runs (`comis run`) whose comis process died: now `interrupted`, never stuck `running`. */
  interruptedPlans?: string[];
  orphaned: { runId: string; reason: OrphanReason }[];
  reclaimed: string[];
}

/**
 * The start-up sweep (see the module comment). `home` is $COMIS_HOME. Cheap when
 * there is nothing to settle: one indexed query.
 */
export function sweepDurableRuns(db: Database, home: string, now = Date.now()): SweepReport {
  const report: SweepReport = { interrupted: [], orphaned: [], reclaimed: [] };
  const plans = sweepPlanRuns(db, now);
  if (plans.length > 0) report.interruptedPlans = plans;
  if (!hasTable(db)) return report;
  const rows = db.prepare("SELECT * FROM resumable_runs WHERE status IN ('running', 'resumable') OR (status IN ('completed', 'orphaned', 'resumed') AND expires_at < ?)").all(now) as RawRow[];
  const file = (ref: string | null): boolean => ref !== null && existsSync(join(home, ref));
  const orphan = (r: RawRow, reason: OrphanReason): void => {
    // Its artifacts go now: nothing is left for a later sweep to reclaim.
    db.prepare("UPDATE resumable_runs SET status = 'orphaned', reason = ?, updated_at = ?, expires_at = ?, owner_pid = NULL, owner_start = NULL WHERE run_id = ?").run(reason, now, now + ROW_RETENTION_MS, r.run_id);
    reclaimArtifacts(home, r.run_id);
    report.orphaned.push({ runId: r.run_id, reason });
  };
  for (const r of rows) {
    if (r.status === 'running') {
      if (r.owner_pid !== null && processStart(r.owner_pid) === r.owner_start) continue; // still running
      report.interrupted.push(r.run_id);
      const checkpoint = `${durableAreaRef(r.run_id)}/checkpoint.json`;
      if (r.kind === 'orchestrate' && file(r.script_ref) && existsSync(join(home, checkpoint)) && r.expires_at >= now) {
        db.prepare("UPDATE resumable_runs SET status = 'resumable', reason = 'interrupted', checkpoint_ref = ?, updated_at = ?, owner_pid = NULL, owner_start = NULL WHERE run_id = ?").run(checkpoint, now, r.run_id);
        // Its run directory (the socket, the SDK copy) is dead weight; the durable area stays.
        reclaimRunDir(home, r.run_id);
      } else orphan(r, 'interrupted');
    } else if (r.status === 'resumable') {
      if (r.expires_at < now) orphan(r, 'expired');
      else if (!file(r.script_ref)) orphan(r, 'script_missing');
      else if (r.checkpoint_ref !== null && !file(r.checkpoint_ref)) orphan(r, 'checkpoint_missing');
    } else {
      // Past its TTL: a completed run's replay recording (or anything left of an orphan) goes.
      reclaimArtifacts(home, r.run_id);
      if (r.status === 'completed') db.prepare("UPDATE resumable_runs SET status = 'reclaimed', updated_at = ? WHERE run_id = ?").run(now, r.run_id);
      else db.prepare('UPDATE resumable_runs SET expires_at = ? WHERE run_id = ?').run(now + ROW_RETENTION_MS, r.run_id);
      report.reclaimed.push(r.run_id);
    }
  }
  return report;
}

/** A plan run left `running` by a comis process that is gone (or whose pid now names a later process) becomes `interrupted` (its children's runs were never recorded). */
function sweepPlanRuns(db: Database, now: number): string[] {
  if (db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'plan_runs'").get() === undefined) return [];
  const running = db.prepare("SELECT plan_run_id, pid, started_at FROM plan_runs WHERE status = 'running'").all() as { plan_run_id: string; pid: number | null; started_at: number }[];
  const gone = running.filter((p) => p.pid !== null && !planOwnerAlive(p.pid, p.started_at)).map((p) => p.plan_run_id);
  const mark = db.prepare("UPDATE plan_runs SET status = 'interrupted', ended_at = ? WHERE plan_run_id = ? AND status = 'running'");
  for (const id of gone) mark.run(now, id);
  return gone;
}

function reclaimRunDir(home: string, runId: string): void {
  let names: string[];
  try {
    names = readdirSync(join(home, 'runs'));
  } catch {
    return;
  }
  for (const name of names) {
    const m = /^(\d+)-(\d+)-([A-Za-z0-9_-]+)$/.exec(name);
    if (m && m[3] === runId && processStart(Number(m[1])) !== m[2]) rmSync(join(home, 'runs', name), { recursive: true, force: true });
  }
}
