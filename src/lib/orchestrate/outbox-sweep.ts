/**
 * The outbox sweep: delivers what a crash left pending (a send whose intent
 * was written and whose delivery never got its verdict), with the same
 * idempotency key, so receivers that dedupe on it (and the file channel,
 * which dedupes itself) see each message once. It runs at the start of every
 * comis command that opens the store, and from `comis outbox retry`.
 *
 * Rows another live process is delivering are left alone (their claim);
 * rows of a dead or stale claimant are taken over, one at a time, in the
 * order they were written.
 */
import type { Store } from '../store/store.js';
import { deliverClaimed, flightKey, inFlight, rowDelivery } from './message.js';

export interface SweepReport {
  delivered: number;
  failed: number;
  /** Pending rows another live process holds. */
  skipped: number;
}

/** Most rows one sweep takes on (the rest wait for the next start). */
export const SWEEP_BATCH = 200;

/** Sweeps when anything is pending; otherwise one indexed probe and nothing loaded. */
export async function sweepOutbox(store: Store): Promise<SweepReport> {
  const report: SweepReport = { delivered: 0, failed: 0, skipped: 0 };
  const outbox = await import('../store/outbox.js');
  if (!outbox.hasPending(store.db)) return report;
  // The verdicts must reach the disk before anyone relies on them.
  store.db.pragma('synchronous = FULL');
  for (const row of outbox.pendingRows(store.db, SWEEP_BATCH)) {
    const key = flightKey(row.agentId, row.operationId);
    const claimed = outbox.claimForSweep(store.db, row.agentId, row.operationId, inFlight.has(key));
    if (!claimed) {
      report.skipped++;
      continue;
    }
    const { target, delivery } = rowDelivery(claimed);
    const flight = deliverClaimed(store, outbox, target, delivery, true);
    inFlight.set(key, flight);
    try {
      await flight;
      report.delivered++;
    } catch {
      report.failed++;
    } finally {
      inFlight.delete(key);
    }
  }
  return report;
}

/**
 * For commands that open the store anyway: sweep on their connection when
 * something is pending. A failure of the sweep never fails the command.
 */
export async function sweepOnOpen(store: Store): Promise<SweepReport | undefined> {
  try {
    const { hasPending } = await import('../store/outbox.js');
    if (!hasPending(store.db)) return undefined;
    return await sweepOutbox(store);
  } catch {
    return undefined;
  }
}
