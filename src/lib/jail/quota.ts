/**
 * Disk use of a jail-writable host directory, for the writable-quota
 * watchdog. RLIMIT_FSIZE bounds one file; this bounds the sum.
 *
 * The tree belongs to the jail, so the walk treats it as hostile: it never
 * follows a symlink (lstat, and directories are entered only when readdir
 * itself typed them as directories), ignores entries that vanish mid-walk,
 * and stops as soon as the answer is known (over the limit) or after a fixed
 * number of entries, which then counts as over the limit — a tree too big to
 * measure is a tree too big to keep.
 */
import { lstat, opendir } from 'node:fs/promises';
import { join } from 'node:path';

/** Every entry costs at least this much, so a flood of empty files is bounded too. */
export const MIN_ENTRY_BYTES = 512;
/** Most entries one measurement walks. */
export const MAX_ENTRIES = 200_000;

export interface TreeUsage {
  bytes: number;
  entries: number;
  /** The walk stopped early: bytes already exceed the limit, or MAX_ENTRIES was reached. */
  over: boolean;
}

/**
 * Measures `root`: for each entry the larger of its apparent size and its
 * allocated blocks (a sparse file counts at its full size), at least
 * {@link MIN_ENTRY_BYTES}. Stops early once `limit` is exceeded.
 */
export async function measureTree(root: string, limit = Number.POSITIVE_INFINITY): Promise<TreeUsage> {
  let bytes = 0;
  let entries = 0;
  const stack: string[] = [root];
  while (stack.length > 0) {
    const dir = stack.pop()!;
    let handle;
    try {
      handle = await opendir(dir, { bufferSize: 256 });
    } catch {
      continue;
    }
    try {
      for await (const ent of handle) {
        entries += 1;
        if (entries > MAX_ENTRIES) return { bytes, entries, over: true };
        const path = join(dir, ent.name);
        try {
          const st = await lstat(path);
          bytes += Math.max(st.size, st.blocks * 512, MIN_ENTRY_BYTES);
        } catch {
          continue;
        }
        if (bytes > limit) return { bytes, entries, over: true };
        if (ent.isDirectory()) stack.push(path);
      }
    } catch {
      /* the directory vanished while it was read */
    }
  }
  return { bytes, entries, over: bytes > limit };
}

/**
 * Polls `hostPath` every `intervalMs` and calls `onExceeded` once when its
 * use passes `maxBytes`. Returns a stop function and a final check.
 */
export function watchQuota(
  hostPath: string,
  maxBytes: number,
  onExceeded: () => void,
  intervalMs = 200,
): { stop(): void; check(): Promise<boolean> } {
  let stopped = false;
  let fired = false;
  let timer: NodeJS.Timeout | undefined;
  const check = async (): Promise<boolean> => {
    const usage = await measureTree(hostPath, maxBytes);
    if (usage.over && !fired) {
      fired = true;
      onExceeded();
    }
    return usage.over;
  };
  const loop = (): void => {
    if (stopped) return;
    timer = setTimeout(() => {
      void check().finally(() => {
        if (!fired) loop();
      });
    }, intervalMs);
    timer.unref();
  };
  loop();
  return {
    stop: () => {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
    check,
  };
}
