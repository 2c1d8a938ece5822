/**
 * The jail uid registry: one host uid per workspace real path, kept in the
 * store so it is stable across runs (files a run leaves stay the next run's)
 * and unique (two workspaces never share a uid, so never one RLIMIT_NPROC
 * count, one set of files or one signal domain).
 *
 * Which uids are usable is the caller's policy (`jailUidPolicy` in
 * src/lib/jail/uid-registry.ts); this module only makes the choice atomic.
 */
import { ComisError } from '../errors.js';
import type { Database } from './store.js';

/** `used_at` (when a workspace's uid was last confirmed by a run) is kept to this precision. */
export const USED_AT_GRANULARITY_MS = 60 * 60 * 1000;

/** What the registry needs of the uid policy. */
export interface UidChooser {
  /** May a workspace keep this uid (still in range, still nobody's)? */
  acceptable(uid: number): boolean;
  /** The lowest usable uid not in `taken`, or undefined when the range is exhausted. */
  pick(taken: Iterable<number>): number | undefined;
}

/**
 * The workspace's registered uid, allocating one when it has none or when
 * the one it had is no longer acceptable (out of a changed range, or granted
 * to someone in /etc/subuid since). The read-check-write runs in one
 * IMMEDIATE transaction, so concurrent comis processes serialize on the
 * store's write lock (busy_timeout) instead of racing; the UNIQUE uid column
 * is the backstop.
 */
export function registerJailUid(db: Database, workspaceReal: string, chooser: UidChooser, now = Date.now()): number {
  const get = db.prepare('SELECT uid, used_at AS usedAt FROM jail_uids WHERE workspace = ?');
  const touch = db.prepare('UPDATE jail_uids SET used_at = ? WHERE workspace = ?');
  const others = db.prepare('SELECT uid FROM jail_uids WHERE workspace != ?');
  const upsert = db.prepare('INSERT INTO jail_uids (workspace, uid, allocated_at, used_at) VALUES (?, ?, ?, ?) ON CONFLICT(workspace) DO UPDATE SET uid = excluded.uid, allocated_at = excluded.allocated_at, used_at = excluded.used_at');
  const allocate = db.transaction((): number => {
    const row = get.get(workspaceReal) as { uid: number; usedAt: number | null } | undefined;
    if (row && chooser.acceptable(row.uid)) {
      // Hour granularity: a run that only confirms its uid writes nothing (no WAL frame, nothing
      // for the connection's close to checkpoint and fsync) unless the mark is an hour old.
      if (row.usedAt === null || now - row.usedAt >= USED_AT_GRANULARITY_MS || now < row.usedAt) touch.run(now, workspaceReal);
      return row.uid;
    }
    const taken = (others.all(workspaceReal) as { uid: number }[]).map((r) => r.uid);
    const uid = chooser.pick(taken);
    if (uid === undefined) {
      throw new ComisError('STORE_ERROR', `No free jail uid is left for the workspace ${workspaceReal}.`, {
        hint: 'Widen agents.<id>.skills.execSandbox.jailUidRange, or remove the jail_uids rows of workspaces that no longer exist.',
      });
    }
    upsert.run(workspaceReal, uid, now, now);
    return uid;
  });
  return allocate.immediate();
}

/** The uid registered for a workspace, if any (for tests and diagnostics). */
export function lookupJailUid(db: Database, workspaceReal: string): number | undefined {
  return (db.prepare('SELECT uid FROM jail_uids WHERE workspace = ?').get(workspaceReal) as { uid: number } | undefined)?.uid;
}
