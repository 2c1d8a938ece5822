/**
 * Disk use of a jail-writable host directory, for the writable-quota
 * watchdog. RLIMIT_FSIZE bounds one file; this bounds the sum, in bytes and
 * in entries (inodes).
 *
 * The tree belongs to the jail, which is still running while it is measured,
 * so the walk treats it as hostile:
 * - it never follows a symlink and never re-walks a path: every directory is
 *   held open and its entries are reached as `/proc/self/fd/<dir>/<name>`
 *   with O_NOFOLLOW, so renaming a directory or swapping it for a link
 *   mid-walk cannot steer it out of the tree;
 * - bytes are ALLOCATED blocks (st_blocks × 512), so `fallocate` with
 *   FALLOC_FL_KEEP_SIZE (size 0, blocks allocated) counts and a sparse file
 *   costs what it really uses;
 * - a directory (or entry) it may not open is never skipped: as root nothing
 *   is refused; otherwise `chmod 000` would hide what is below, so an
 *   unreadable directory is a violation of its own (`unreadable`);
 * - a tree too large or too deep to measure counts as over the limit, and an
 *   entry that vanishes mid-walk is simply gone.
 *
 * The walk is synchronous (a promise per entry made 60,000 directories take
 * over a minute) and runs in a worker thread, so the event loop never waits
 * for it; the watchdog waits at least as long as the last walk took before
 * the next one, so measuring costs at most about half a core. The thread is
 * taken at the first poll, not at the spawn: a run that ends before it (most
 * short scripts) has its final check walked in place when the tree is small
 * ({@link INLINE_WALK_ENTRIES} entries at most, a millisecond or two), and
 * never pays a thread's start-up (a V8 isolate, ~40 ms of CPU that competed
 * with the jail's own start on a 2-core machine). A larger tree goes to the
 * thread as before.
 */
import * as fs from 'node:fs';
import { Worker } from 'node:worker_threads';

/** Most entries one measurement walks when the caller sets no entry limit. */
export const MAX_ENTRIES = 200_000;
/** Deepest directory level measured; a deeper tree is over quota (each level holds one fd). */
export const MAX_DEPTH = 256;

export type QuotaViolation = 'bytes' | 'entries' | 'unreadable' | 'too_deep';

export interface TreeUsage {
  /** Allocated bytes of the entries seen (st_blocks × 512). */
  bytes: number;
  /** Entries seen (files, directories, links, everything). */
  entries: number;
  /** The walk stopped early because the tree is over a limit (or cannot be measured). */
  over: boolean;
  /** Why, when `over`. */
  violation?: QuotaViolation;
}

export interface QuotaLimits {
  maxBytes: number;
  /** Most entries; default {@link MAX_ENTRIES}. */
  maxEntries?: number;
}

/**
 * The walk itself. Self-contained (it is also the worker's source, so it
 * takes `fs` as a parameter and uses nothing from this module's scope).
 */
function walkTree(fs: typeof import('node:fs'), root: string, maxBytes: number, maxEntries: number, maxDepth: number): TreeUsage {
  const F = fs.constants.O_RDONLY | fs.constants.O_DIRECTORY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK;
  const code = (err: unknown): string | undefined => (err as { code?: string }).code;
  let bytes = 0;
  let entries = 0;
  let verdict: TreeUsage | undefined;
  const over = (violation: TreeUsage['violation']): boolean => {
    verdict = { bytes, entries, over: true, violation };
    return true;
  };
  // true = stop (verdict set). Every name is reached through the fd of its directory.
  const walk = (fd: number, depth: number): boolean => {
    let names: string[];
    try {
      names = fs.readdirSync(`/proc/self/fd/${fd}`);
    } catch (err) {
      return code(err) === 'ENOENT' ? false : over('unreadable');
    }
    for (const name of names) {
      entries += 1;
      if (entries > maxEntries) return over('entries');
      const at = `/proc/self/fd/${fd}/${name}`;
      let st;
      try {
        st = fs.lstatSync(at);
      } catch (err) {
        if (code(err) === 'ENOENT') continue; // vanished mid-walk
        return over('unreadable');
      }
      bytes += st.blocks * 512;
      if (bytes > maxBytes) return over('bytes');
      if (!st.isDirectory()) continue;
      if (depth + 1 > maxDepth) return over('too_deep');
      let child: number;
      try {
        child = fs.openSync(at, F);
      } catch (err) {
        const c = code(err);
        // Gone, or swapped for a link/file since the lstat: the next walk sees what is there now.
        if (c === 'ENOENT' || c === 'ELOOP' || c === 'ENOTDIR') continue;
        return over('unreadable');
      }
      try {
        if (walk(child, depth + 1)) return true;
      } finally {
        fs.closeSync(child);
      }
    }
    return false;
  };
  let top: number;
  try {
    top = fs.openSync(root, F);
  } catch (err) {
    return code(err) === 'ENOENT' ? { bytes, entries, over: false } : { bytes, entries, over: true, violation: 'unreadable' };
  }
  try {
    walk(top, 0);
  } finally {
    fs.closeSync(top);
  }
  return verdict ?? { bytes, entries, over: false };
}

/**
 * Most entries a final check walks on the calling thread before it hands the tree to a
 * measuring thread: ~5-20 µs an entry here, so the event loop waits a few ms at most.
 */
export const INLINE_WALK_ENTRIES = 256;

/**
 * The walk on this thread, bounded by {@link INLINE_WALK_ENTRIES} (or `budget`): the usage
 * when the tree fits in the budget or the walk reached a verdict inside it, else undefined
 * (the tree is larger: only a full walk, on a measuring thread, can tell).
 */
function measureInline(root: string, limits: QuotaLimits, budget: number): TreeUsage | undefined {
  const maxEntries = Math.min(limits.maxEntries ?? MAX_ENTRIES, Number.MAX_SAFE_INTEGER);
  const bound = Math.min(maxEntries, budget);
  let usage: TreeUsage;
  try {
    usage = walkTree(fs, root, limits.maxBytes, bound, MAX_DEPTH);
  } catch {
    return { bytes: 0, entries: 0, over: true, violation: 'unreadable' }; // as the thread answers a walk that threw
  }
  // Over the budget, not over the limit: inconclusive.
  if (usage.over && usage.violation === 'entries' && bound < maxEntries) return undefined;
  return usage;
}

const WORKER_SOURCE = `
const fs = require('node:fs');
const { parentPort } = require('node:worker_threads');
const walkTree = ${walkTree.toString()};
parentPort.on('message', (m) => {
  let usage;
  try {
    usage = walkTree(fs, m.root, m.maxBytes, m.maxEntries, m.maxDepth);
  } catch (err) {
    usage = { bytes: 0, entries: 0, over: true, violation: 'unreadable' };
  }
  parentPort.postMessage(usage);
});
`;

let threadMeasurements = 0;

/** Tests: how many measurements this process has asked of a measuring thread (a new or a pooled one). */
export function measurementsOnThreads(): number {
  return threadMeasurements;
}

/** A worker thread that measures trees, one request at a time. */
class Measurer {
  private readonly worker = new Worker(WORKER_SOURCE, { eval: true });
  private pending: ((u: TreeUsage) => void) | undefined;
  /** False once the worker erred or exited: never reused. */
  alive = true;

  constructor() {
    this.worker.on('message', (u: TreeUsage) => this.settle(u));
    // A worker that died cannot vouch for anything: over.
    this.worker.on('error', () => {
      this.alive = false;
      this.settle({ bytes: 0, entries: 0, over: true, violation: 'unreadable' });
    });
    this.worker.on('exit', () => {
      this.alive = false;
      this.settle({ bytes: 0, entries: 0, over: true, violation: 'unreadable' });
    });
    // Last: a 'message' listener added after unref() refs the worker's port again, and an idle
    // worker kept for the next run would then hold the process open.
    this.worker.unref();
  }

  get busy(): boolean {
    return this.pending !== undefined;
  }

  private settle(u: TreeUsage): void {
    const p = this.pending;
    this.pending = undefined;
    p?.(u);
  }

  measure(root: string, limits: QuotaLimits): Promise<TreeUsage> {
    if (this.pending) throw new Error('Measurer: one measurement at a time');
    threadMeasurements += 1;
    return new Promise((resolve) => {
      this.pending = resolve;
      this.worker.postMessage({ root, maxBytes: limits.maxBytes, maxEntries: Math.min(limits.maxEntries ?? MAX_ENTRIES, Number.MAX_SAFE_INTEGER), maxDepth: MAX_DEPTH });
    });
  }

  close(): void {
    this.alive = false;
    void this.worker.terminate();
  }
}

/**
 * Idle measuring threads kept for the next run of this process: a worker's
 * start-up (a V8 isolate, ~40 ms of CPU) was paid by every run, so a
 * coordinator paid it per child. At most {@link MAX_IDLE_MEASURERS} are kept
 * (unref'd: they never hold the process open), each ended after
 * {@link MEASURER_IDLE_MS} unused. A worker that erred or exited, or one
 * still measuring, is never put back.
 */
const MAX_IDLE_MEASURERS = 2;
const MEASURER_IDLE_MS = 30_000;
const idleMeasurers: { m: Measurer; timer: NodeJS.Timeout }[] = [];

function acquireMeasurer(): Measurer {
  for (let slot = idleMeasurers.pop(); slot; slot = idleMeasurers.pop()) {
    clearTimeout(slot.timer);
    if (slot.m.alive && !slot.m.busy) return slot.m;
    slot.m.close();
  }
  return new Measurer();
}

function releaseMeasurer(m: Measurer): void {
  if (!m.alive || m.busy || idleMeasurers.length >= MAX_IDLE_MEASURERS) {
    m.close();
    return;
  }
  const slot = {
    m,
    timer: setTimeout(() => {
      const i = idleMeasurers.indexOf(slot);
      if (i >= 0) idleMeasurers.splice(i, 1);
      m.close();
    }, MEASURER_IDLE_MS),
  };
  slot.timer.unref();
  idleMeasurers.push(slot);
}

/** Tests: how many idle measuring threads this process keeps. */
export function idleMeasurerCount(): number {
  return idleMeasurers.length;
}

/**
 * Measures `root` (a directory comis trusts the path of, e.g. the workspace
 * it prepared): the allocated bytes and the number of entries below it.
 * Stops at the first limit passed; see the module comment for what counts.
 */
export async function measureTree(root: string, limits: QuotaLimits = { maxBytes: Number.POSITIVE_INFINITY }): Promise<TreeUsage> {
  const m = acquireMeasurer();
  try {
    return await m.measure(root, limits);
  } finally {
    releaseMeasurer(m);
  }
}

/**
 * Polls `quota.hostPath` (every `intervalMs`, or as long as the last walk
 * took if that is longer) and calls `onExceeded` once with the usage when
 * it passes `maxBytes` or `maxEntries` (or cannot be measured). Returns a
 * stop function and a check (the final one after the jail is gone): a check
 * walks a tree of up to `inlineEntries` entries (default
 * {@link INLINE_WALK_ENTRIES}; 0: never) in place, and a larger one on the
 * measuring thread, which the first poll takes.
 */
export function watchQuota(quota: { hostPath: string } & QuotaLimits, onExceeded: (usage: TreeUsage) => void, intervalMs = 200, options: { inlineEntries?: number } = {}): { stop(): void; check(): Promise<boolean> } {
  const inlineEntries = options.inlineEntries ?? INLINE_WALK_ENTRIES;
  let stopped = false;
  let fired = false;
  let timer: NodeJS.Timeout | undefined;
  let measurer: Measurer | undefined;
  let running: Promise<TreeUsage> | undefined;
  const onThread = async (): Promise<TreeUsage> => {
    // One walk at a time: a final check waits for a poll still under way, then walks afresh.
    while (running) await running.catch(() => undefined);
    measurer ??= acquireMeasurer();
    running = measurer.measure(quota.hostPath, quota);
    try {
      return await running;
    } finally {
      running = undefined;
    }
  };
  const settle = (usage: TreeUsage): boolean => {
    if (usage.over && !fired) {
      fired = true;
      onExceeded(usage);
    }
    if (stopped && !running && measurer) {
      releaseMeasurer(measurer);
      measurer = undefined;
    }
    return usage.over;
  };
  const poll = async (): Promise<boolean> => settle(await onThread());
  const check = async (): Promise<boolean> => {
    // A poll still walking finishes first (its verdict stands), then the tree is walked afresh.
    while (running) await running.catch(() => undefined);
    const inline = inlineEntries > 0 ? measureInline(quota.hostPath, quota, inlineEntries) : undefined;
    return settle(inline ?? (await onThread()));
  };
  const loop = (wait: number): void => {
    if (stopped) return;
    timer = setTimeout(() => {
      const t0 = Date.now();
      void poll()
        .catch(() => false)
        .finally(() => {
          if (!fired) loop(Math.max(intervalMs, Date.now() - t0));
        });
    }, wait);
    timer.unref();
  };
  // No thread yet: the first poll takes one (an idle one of an earlier run of this process, or a new one).
  loop(intervalMs);
  return {
    stop: () => {
      stopped = true;
      if (timer) clearTimeout(timer);
      // The final check usually follows at once: keep the worker for it, and end it soon either way.
      setTimeout(() => {
        if (!running && measurer) {
          releaseMeasurer(measurer);
          measurer = undefined;
        }
      }, 1_000).unref();
    },
    check,
  };
}
