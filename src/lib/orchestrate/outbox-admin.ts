/**
 * What `comis outbox list|retry|drop` do, as data (the commands render it).
 * Each opens the store, which runs the sweep first (pending sends a crash
 * left are delivered), then acts. Entries are content-free: ids, channel,
 * state, attempts, times and the last (redacted) error, never the text.
 */
import { existsSync } from 'node:fs';

import { storePath } from '../config/paths.js';
import { ComisError } from '../errors.js';
import type { OutboxRow, OutboxState } from '../store/outbox.js';
import type { Store } from '../store/store.js';
import { sweepOutbox, type SweepReport } from './outbox-sweep.js';

export interface OutboxEntry {
  agentId: string;
  operationId: string;
  runId: string;
  action: OutboxRow['action'];
  channel: string;
  channelId: string;
  state: OutboxState;
  attempts: number;
  createdAt: string;
  deliveredAt?: string;
  messageId?: string;
  error?: string;
}

export const LIST_STATES = ['open', 'pending', 'failed', 'delivered', 'dropped', 'all'] as const;
export type ListState = (typeof LIST_STATES)[number];

export interface OutboxListReport {
  swept: SweepReport;
  entries: OutboxEntry[];
}

function entryOf(row: OutboxRow): OutboxEntry {
  const e: OutboxEntry = {
    agentId: row.agentId,
    operationId: row.operationId,
    runId: row.runId,
    action: row.action,
    channel: row.channel,
    channelId: row.channelId,
    state: row.state,
    attempts: row.attempts,
    createdAt: new Date(row.createdAt).toISOString(),
  };
  if (row.deliveredAt !== null) e.deliveredAt = new Date(row.deliveredAt).toISOString();
  if (row.messageId !== null) e.messageId = row.messageId;
  if (row.error !== null) e.error = row.error;
  return e;
}

async function withStore<T>(home: string, work: (store: Store, outbox: typeof import('../store/outbox.js'), swept: SweepReport) => T | Promise<T>): Promise<T | undefined> {
  if (!existsSync(storePath(home))) return undefined;
  const [{ openStore }, outbox] = await Promise.all([import('../store/store.js'), import('../store/outbox.js')]);
  const store = openStore({ home });
  try {
    const swept = await sweepOutbox(store);
    return await work(store, outbox, swept);
  } finally {
    store.close();
  }
}

const none: SweepReport = { delivered: 0, failed: 0, skipped: 0 };

export async function listOutboxEntries(home: string, filter: { state: ListState; agentId?: string | undefined; limit: number }): Promise<OutboxListReport> {
  const states: OutboxState[] = filter.state === 'all' ? ['pending', 'failed', 'delivered', 'dropped'] : filter.state === 'open' ? ['pending', 'failed'] : [filter.state];
  const report = await withStore(home, (store, outbox, swept) => ({ swept, entries: outbox.listOutbox(store.db, { states, agentId: filter.agentId, limit: filter.limit }).map(entryOf) }));
  return report ?? { swept: none, entries: [] };
}

/** The one row an operation id names (of `agentId`, or of the only agent that has it). */
function findOne(store: Store, outbox: typeof import('../store/outbox.js'), operationId: string, agentId: string | undefined): OutboxRow {
  const rows = (store.db.prepare('SELECT agent_id AS agentId FROM outbox WHERE operation_id = ?').all(operationId) as Array<{ agentId: string }>).filter((r) => agentId === undefined || r.agentId === agentId);
  if (rows.length === 0) throw new ComisError('NOT_FOUND', `No outbox entry has operation id "${operationId}"${agentId ? ` for agent "${agentId}"` : ''}.`, { hint: 'List them with `comis outbox list --state all`.' });
  if (rows.length > 1) throw new ComisError('USAGE', `Operation id "${operationId}" exists for ${rows.length} agents (${rows.map((r) => r.agentId).join(', ')}).`, { hint: 'Pass --agent to say which.' });
  return outbox.findOutbox(store.db, rows[0]!.agentId, operationId)!;
}

export interface OutboxActionReport {
  swept: SweepReport;
  entry: OutboxEntry;
}

/** A failed send back to pending, then delivered at once by a sweep (same idempotency key). */
export async function retryOutboxEntry(home: string, operationId: string, agentId?: string): Promise<OutboxActionReport> {
  const report = await withStore(home, async (store, outbox) => {
    const row = findOne(store, outbox, operationId, agentId);
    if (row.state !== 'failed' && row.state !== 'pending') {
      throw new ComisError('USAGE', `Operation "${operationId}" of agent "${row.agentId}" is ${row.state}; only failed or pending sends are retried.`, {
        hint: row.state === 'delivered' ? 'It was delivered: nothing to do.' : 'A dropped send stays dropped; the script sends again with a new operationId.',
      });
    }
    outbox.requeueFailed(store.db, row.agentId, operationId);
    const swept = await sweepOutbox(store);
    return { swept, entry: entryOf(outbox.findOutbox(store.db, row.agentId, operationId)!) };
  });
  if (!report) throw new ComisError('NOT_FOUND', `No outbox entry has operation id "${operationId}" (there is no store yet).`, { hint: 'Nothing was ever sent with durability on.' });
  return report;
}

/** A pending or failed send is never delivered; its text leaves the store. */
export async function dropOutboxEntry(home: string, operationId: string, agentId?: string): Promise<OutboxActionReport> {
  const report = await withStore(home, (store, outbox, swept) => {
    const row = findOne(store, outbox, operationId, agentId);
    const verdict = outbox.dropRow(store.db, row.agentId, operationId);
    if (verdict === 'busy') throw new ComisError('USAGE', `Operation "${operationId}" is being delivered by a running comis process right now.`, { hint: 'Wait for it to finish, then list again.' });
    if (verdict === 'not_open') throw new ComisError('USAGE', `Operation "${operationId}" of agent "${row.agentId}" is ${row.state}; only pending or failed sends can be dropped.`, { hint: 'Delivered sends cannot be unsent.' });
    return { swept, entry: entryOf(outbox.findOutbox(store.db, row.agentId, operationId)!) };
  });
  if (!report) throw new ComisError('NOT_FOUND', `No outbox entry has operation id "${operationId}" (there is no store yet).`, { hint: 'Nothing was ever sent with durability on.' });
  return report;
}
