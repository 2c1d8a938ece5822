/**
 * The outbox of message_* (migration 8): what makes an outward send exactly
 * once when `autonomy.durability.enabled` is on. The intent is written in a
 * `BEGIN IMMEDIATE` transaction on a connection with `synchronous = FULL`
 * before the delivery starts, and the row is marked delivered after; a
 * repeated (agent, operationId) is answered from the row.
 *
 * A row being delivered carries the pid of the process delivering it
 * (`claim_pid`). A row whose claimant is dead (or whose claim is older than
 * {@link STALE_CLAIM_MS}) may be taken over: by a repeated call, or by the
 * sweep at the next comis start.
 */
import type { Database } from './store.js';

export type OutboxState = 'pending' | 'delivered' | 'failed' | 'dropped';
export type OutboxAction = 'send' | 'reply' | 'react';

export interface OutboxRow {
  agentId: string;
  operationId: string;
  runId: string;
  action: OutboxAction;
  channel: string;
  channelId: string;
  /** The resolved channel, JSON (never a secret). */
  target: string;
  /** The message, JSON, while pending or failed; null once delivered or dropped. */
  payload: string | null;
  state: OutboxState;
  attempts: number;
  claimPid: number | null;
  claimedAt: number | null;
  createdAt: number;
  updatedAt: number;
  deliveredAt: number | null;
  messageId: string | null;
  error: string | null;
}

/** A claim older than this is taken over even if its pid is alive (a reused pid must not hold a send forever). */
export const STALE_CLAIM_MS = 10 * 60_000;
const HOUR_MS = 60 * 60_000;

const COLUMNS = `agent_id AS agentId, operation_id AS operationId, run_id AS runId, action, channel, channel_id AS channelId, target, payload, state, attempts,
  claim_pid AS claimPid, claimed_at AS claimedAt, created_at AS createdAt, updated_at AS updatedAt, delivered_at AS deliveredAt, message_id AS messageId, error`;

/** Whether process `pid` exists (EPERM: it does, as another user's). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Whether a pending row's claim is free to take (no claimant, a dead one, a stale one). `ownBusy` says whether this process is delivering it right now. */
export function claimable(row: Pick<OutboxRow, 'claimPid' | 'claimedAt'>, now: number, ownBusy: boolean): boolean {
  if (row.claimPid === null) return true;
  if (row.claimPid === process.pid) return !ownBusy;
  if (row.claimedAt !== null && now - row.claimedAt > STALE_CLAIM_MS) return true;
  return !processAlive(row.claimPid);
}

export function findOutbox(db: Database, agentId: string, operationId: string): OutboxRow | undefined {
  return db.prepare(`SELECT ${COLUMNS} FROM outbox WHERE agent_id = ? AND operation_id = ?`).get(agentId, operationId) as OutboxRow | undefined;
}

export interface NewIntent {
  agentId: string;
  operationId: string;
  runId: string;
  action: OutboxAction;
  channel: string;
  channelId: string;
  target: string;
  payload: string;
}

export type IntentOutcome =
  /** Delivered before: answer with its message id, send nothing. */
  | { kind: 'delivered'; row: OutboxRow }
  /** This process now holds the row (new, or taken over): deliver it. */
  | { kind: 'claimed'; row: OutboxRow; fresh: boolean }
  /** Another live process (or this one, right now) is delivering it. */
  | { kind: 'busy'; row: OutboxRow }
  /** An operator dropped it (comis outbox drop). */
  | { kind: 'dropped'; row: OutboxRow }
  /** A new send past maxPerHour. */
  | { kind: 'rate_limited'; sentLastHour: number };

/**
 * The intent, written before delivery, in one BEGIN IMMEDIATE transaction
 * (so two processes never both claim a row): a new row is inserted pending
 * and claimed by this process (and counted against `maxPerHour`); an existing
 * one is answered (delivered), taken over (pending with a free claim, or
 * failed: a repeated call retries it with the same key), or reported busy.
 * @public (reached through the loaded module, which knip does not follow)
 */
export function writeIntent(db: Database, intent: NewIntent, options: { maxPerHour: number; now?: number; ownBusy: boolean }): IntentOutcome {
  const now = options.now ?? Date.now();
  const tx = db.transaction((): IntentOutcome => {
    const row = findOutbox(db, intent.agentId, intent.operationId);
    if (row) {
      if (row.state === 'delivered') return { kind: 'delivered', row };
      if (row.state === 'dropped') return { kind: 'dropped', row };
      if (row.state === 'pending' && !claimable(row, now, options.ownBusy)) return { kind: 'busy', row };
      db.prepare("UPDATE outbox SET state = 'pending', claim_pid = ?, claimed_at = ?, updated_at = ? WHERE agent_id = ? AND operation_id = ?").run(process.pid, now, now, intent.agentId, intent.operationId);
      return { kind: 'claimed', row: { ...row, state: 'pending', claimPid: process.pid, claimedAt: now }, fresh: false };
    }
    const sent = countSendsSince(db, intent.agentId, now - HOUR_MS);
    if (sent >= options.maxPerHour) return { kind: 'rate_limited', sentLastHour: sent };
    db.prepare(
      `INSERT INTO outbox (agent_id, operation_id, run_id, action, channel, channel_id, target, payload, state, attempts, claim_pid, claimed_at, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?, ?)`,
    ).run(intent.agentId, intent.operationId, intent.runId, intent.action, intent.channel, intent.channelId, intent.target, intent.payload, process.pid, now, now, now);
    insertSend(db, intent.agentId, now);
    return { kind: 'claimed', row: findOutbox(db, intent.agentId, intent.operationId)!, fresh: true };
  });
  return tx.immediate();
}

/**
 * Takes over a pending row for the sweep (its claimant is dead or stale).
 * Returns the row claimed, or undefined when someone else holds it.
 */
export function claimForSweep(db: Database, agentId: string, operationId: string, ownBusy: boolean, now = Date.now()): OutboxRow | undefined {
  const tx = db.transaction((): OutboxRow | undefined => {
    const row = findOutbox(db, agentId, operationId);
    if (!row || row.state !== 'pending' || !claimable(row, now, ownBusy)) return undefined;
    db.prepare('UPDATE outbox SET claim_pid = ?, claimed_at = ?, updated_at = ? WHERE agent_id = ? AND operation_id = ?').run(process.pid, now, now, agentId, operationId);
    return { ...row, claimPid: process.pid, claimedAt: now };
  });
  return tx.immediate();
}

/** One delivery attempt is starting (counted before the request leaves, so a crash during it shows). @public (reached through the loaded module, which knip does not follow) */
export function markAttempt(db: Database, agentId: string, operationId: string): void {
  db.prepare('UPDATE outbox SET attempts = attempts + 1, updated_at = ? WHERE agent_id = ? AND operation_id = ?').run(Date.now(), agentId, operationId);
}

/** Delivered: the message leaves the store (payload NULL); its id stays to answer repeats. @public (reached through the loaded module, which knip does not follow) */
export function markDelivered(db: Database, agentId: string, operationId: string, messageId: string): void {
  const now = Date.now();
  db.prepare("UPDATE outbox SET state = 'delivered', payload = NULL, message_id = ?, delivered_at = ?, updated_at = ?, claim_pid = NULL, claimed_at = NULL, error = NULL WHERE agent_id = ? AND operation_id = ?").run(
    messageId,
    now,
    now,
    agentId,
    operationId,
  );
}

/** Failed for good (a 4xx, attempts exhausted): kept with its payload for `comis outbox retry`; `error` must be redacted and carry no message text. @public (reached through the loaded module, which knip does not follow) */
export function markFailed(db: Database, agentId: string, operationId: string, error: string): void {
  db.prepare("UPDATE outbox SET state = 'failed', error = ?, updated_at = ?, claim_pid = NULL, claimed_at = NULL WHERE agent_id = ? AND operation_id = ?").run(error.slice(0, 500), Date.now(), agentId, operationId);
}

/** Gives a pending row's claim back (the process gives up on it without a verdict, e.g. it is shutting down). @public (reached through the loaded module, which knip does not follow) */
export function releaseClaim(db: Database, agentId: string, operationId: string): void {
  db.prepare("UPDATE outbox SET claim_pid = NULL, claimed_at = NULL WHERE agent_id = ? AND operation_id = ? AND state = 'pending' AND claim_pid = ?").run(agentId, operationId, process.pid);
}

/** Pending rows, oldest first (the sweep's work list; claims are checked one by one). */
export function pendingRows(db: Database, limit = 1000): OutboxRow[] {
  return db.prepare(`SELECT ${COLUMNS} FROM outbox WHERE state = 'pending' ORDER BY created_at LIMIT ?`).all(limit) as OutboxRow[];
}

/** Whether anything is pending: one indexed probe, cheap enough for every command that opens the store. */
export function hasPending(db: Database): boolean {
  return db.prepare("SELECT 1 FROM outbox WHERE state = 'pending' LIMIT 1").get() !== undefined;
}

export function listOutbox(db: Database, filter: { states: readonly OutboxState[]; agentId?: string | undefined; limit: number }): OutboxRow[] {
  const states = filter.states.map(() => '?').join(', ');
  const agent = filter.agentId === undefined ? '' : ' AND agent_id = ?';
  const args: unknown[] = [...filter.states];
  if (filter.agentId !== undefined) args.push(filter.agentId);
  args.push(filter.limit);
  return db.prepare(`SELECT ${COLUMNS} FROM outbox WHERE state IN (${states})${agent} ORDER BY created_at DESC LIMIT ?`).all(...args) as OutboxRow[];
}

/** A failed row back to pending (the next sweep delivers it with the same key). Returns whether it was failed. */
export function requeueFailed(db: Database, agentId: string, operationId: string): boolean {
  return db.prepare("UPDATE outbox SET state = 'pending', claim_pid = NULL, claimed_at = NULL, updated_at = ? WHERE agent_id = ? AND operation_id = ? AND state = 'failed'").run(Date.now(), agentId, operationId).changes === 1;
}

/** A pending (unclaimed or dead-claimed) or failed row is dropped: never delivered, its payload gone. */
export function dropRow(db: Database, agentId: string, operationId: string): 'dropped' | 'busy' | 'not_open' | 'absent' {
  const tx = db.transaction(() => {
    const row = findOutbox(db, agentId, operationId);
    if (!row) return 'absent' as const;
    if (row.state !== 'pending' && row.state !== 'failed') return 'not_open' as const;
    if (row.state === 'pending' && !claimable(row, Date.now(), false)) return 'busy' as const;
    db.prepare("UPDATE outbox SET state = 'dropped', payload = NULL, claim_pid = NULL, claimed_at = NULL, updated_at = ? WHERE agent_id = ? AND operation_id = ?").run(Date.now(), agentId, operationId);
    return 'dropped' as const;
  });
  return tx.immediate();
}

/** Sends of `agentId` since `since` (ms), durable or not. */
export function countSendsSince(db: Database, agentId: string, since: number): number {
  return (db.prepare('SELECT COUNT(*) AS n FROM message_sends WHERE agent_id = ? AND at >= ?').get(agentId, since) as { n: number }).n;
}

function insertSend(db: Database, agentId: string, at: number): void {
  db.prepare('INSERT INTO message_sends (agent_id, at) VALUES (?, ?)').run(agentId, at);
  // Rows older than the window count for nothing: keep the table small.
  db.prepare('DELETE FROM message_sends WHERE agent_id = ? AND at < ?').run(agentId, at - 2 * HOUR_MS);
}

/**
 * A send without durability is still counted for maxPerHour: in one
 * BEGIN IMMEDIATE transaction, so concurrent runs cannot both pass the limit.
 * Returns false (nothing recorded) when the limit is reached.
 * @public (reached through the loaded module, which knip does not follow)
 */
export function recordSend(db: Database, agentId: string, maxPerHour: number, now = Date.now()): { ok: true } | { ok: false; sentLastHour: number } {
  const tx = db.transaction(() => {
    const sent = countSendsSince(db, agentId, now - HOUR_MS);
    if (sent >= maxPerHour) return { ok: false as const, sentLastHour: sent };
    insertSend(db, agentId, now);
    return { ok: true as const };
  });
  return tx.immediate();
}
