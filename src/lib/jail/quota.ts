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
 */
import { constants } from 'node:fs';
import { lstat, open, opendir, type FileHandle } from 'node:fs/promises';

/** Most entries one measurement walks when the caller sets no entry limit. */
export const MAX_ENTRIES = 200_000;
/** Deepest directory level measured; a deeper tree is over quota (each level holds one fd). */
export const MAX_DEPTH = 256;

const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

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

const errno = (err: unknown): string | undefined => (err as NodeJS.ErrnoException).code;
/** The name `name` inside the directory held open as `fd`, without re-walking any path. */
const at = (fd: number, name: string): string => `/proc/self/fd/${fd}/${name}`;

/**
 * Measures `root` (a directory comis trusts the path of, e.g. the workspace
 * it prepared): the allocated bytes and the number of entries below it.
 * Stops at the first limit passed; see the module comment for what counts.
 */
export async function measureTree(root: string, limits: QuotaLimits = { maxBytes: Number.POSITIVE_INFINITY }): Promise<TreeUsage> {
  const maxEntries = Math.min(limits.maxEntries ?? MAX_ENTRIES, Number.MAX_SAFE_INTEGER);
  let bytes = 0;
  let entries = 0;
  const over = (violation: QuotaViolation): TreeUsage => ({ bytes, entries, over: true, violation });
  const held: FileHandle[] = [];
  try {
    let top: FileHandle;
    try {
      top = await open(root, DIR_FLAGS);
    } catch (err) {
      if (errno(err) === 'ENOENT') return { bytes, entries, over: false };
      return over('unreadable');
    }
    held.push(top);
    // Depth-first; each level holds its directory's fd and its open listing.
    const walk = async (dir: FileHandle, depth: number): Promise<TreeUsage | undefined> => {
      let listing;
      try {
        listing = await opendir(`/proc/self/fd/${dir.fd}`, { bufferSize: 64 });
      } catch (err) {
        return errno(err) === 'ENOENT' ? undefined : over('unreadable');
      }
      try {
        for (;;) {
          const ent = await listing.read();
          if (!ent) return undefined;
          entries += 1;
          if (entries > maxEntries) return over('entries');
          let st;
          try {
            st = await lstat(at(dir.fd, ent.name));
          } catch (err) {
            if (errno(err) === 'ENOENT') continue; // vanished mid-walk
            return over('unreadable');
          }
          bytes += st.blocks * 512;
          if (bytes > limits.maxBytes) return over('bytes');
          if (!st.isDirectory()) continue;
          if (depth + 1 > MAX_DEPTH) return over('too_deep');
          let child: FileHandle;
          try {
            child = await open(at(dir.fd, ent.name), DIR_FLAGS);
          } catch (err) {
            const code = errno(err);
            // Gone, or swapped for a link/file since the lstat: the next poll sees what is there now.
            if (code === 'ENOENT' || code === 'ELOOP' || code === 'ENOTDIR') continue;
            return over('unreadable');
          }
          held.push(child);
          try {
            const r = await walk(child, depth + 1);
            if (r) return r;
          } finally {
            held.pop();
            await child.close();
          }
        }
      } finally {
        await listing.close().catch(() => undefined);
      }
    };
    const r = await walk(top, 0);
    if (r) return r;
    return { bytes, entries, over: false };
  } finally {
    for (const h of held) await h.close().catch(() => undefined);
  }
}

/**
 * Polls `quota.hostPath` every `intervalMs` and calls `onExceeded` once with
 * the usage when it passes `maxBytes` or `maxEntries` (or cannot be
 * measured). Returns a stop function and a final check.
 */
export function watchQuota(
  quota: { hostPath: string } & QuotaLimits,
  onExceeded: (usage: TreeUsage) => void,
  intervalMs = 200,
): { stop(): void; check(): Promise<boolean> } {
  let stopped = false;
  let fired = false;
  let timer: NodeJS.Timeout | undefined;
  const check = async (): Promise<boolean> => {
    const usage = await measureTree(quota.hostPath, quota);
    if (usage.over && !fired) {
      fired = true;
      onExceeded(usage);
    }
    return usage.over;
  };
  const loop = (): void => {
    if (stopped) return;
    timer = setTimeout(() => {
      void check()
        .catch(() => false)
        .finally(() => {
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
