/**
 * Where a run's data lives on the host, and how it is cleaned up.
 *
 * A run directory holds the script source and SDK (`sdk/`, bound read-only
 * at /run/comis), the results area (`results/`, bound read-only into the
 * workspace) and the capability socket (`sock/`). It lives under
 * `$COMIS_HOME/runs/` — 0700, owned by the invoking user — never in a
 * world-listed /tmp, and its name records the owning comis process (pid and
 * start time) so a run dir left by a SIGKILLed comis is swept by the next one.
 *
 * As root, the jail uid reads sdk/ and results/ through the mount stage
 * (`src/lib/jail/launch.ts`): their sources sit below this 0700 directory,
 * which the jail uid cannot enter, so they are bound onto a stage directory
 * in a private mount namespace first. Inside, modes are therefore 0755/0644
 * as root (the jail uid and the DuckDB child's uid read them as "other",
 * through the stage only) and 0700/0600 otherwise (the jail is our own uid).
 * Nothing in a run dir is owned by, or writable by, the jail uid.
 *
 * Cleanup treats every tree as hostile: {@link removeTree} and
 * {@link stripWorkspace} never follow a link and never re-walk a path. Each
 * directory is held open and its entries are reached as
 * `/proc/self/fd/<dir>/<name>` with O_NOFOLLOW, so a directory swapped for a
 * symlink mid-walk (by any holder of the jail uid) is unlinked as a link,
 * never descended into.
 */
import { chmodSync, closeSync, constants, fchmodSync, fstatSync, lstatSync, mkdirSync, openSync, readdirSync, rmdirSync, type Stats, unlinkSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';

import { ComisError } from '../errors.js';
import { ownStartTime, processGone } from '../jail/host.js';

/** O_PATH (Linux): an fd naming an inode without opening it; node does not export the constant. */
const O_PATH = 0o10000000;
/** S_ISUID and S_ISGID (not in node's typed constants). */
const S_ISUID = 0o4000;
const S_ISGID = 0o2000;
const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
/** Deepest level the cleanup walks hold fds for (one per level). */
export const MAX_CLEANUP_DEPTH = 256;
/** Bits stripped from files after a run: setuid, setgid, group/world write. */
export const STRIP_FILE_BITS = S_ISUID | S_ISGID | 0o022;
/** Bits stripped from directories below the workspace root: setuid, setgid, group/world write. */
export const STRIP_DIR_BITS = S_ISUID | S_ISGID | 0o022;
/**
 * Bits stripped from the workspace root: setuid, setgid and everything of group/world. The
 * root is the gate for other host users; the directories below keep their read and
 * traverse bits, because the jail uid reaches operator-provided (e.g. root-owned 0755)
 * directories through exactly those "other" bits.
 */
export const STRIP_ROOT_BITS = S_ISUID | S_ISGID | 0o077;

const errno = (err: unknown): string | undefined => (err as NodeJS.ErrnoException).code;
const at = (fd: number, name: string): string => `/proc/self/fd/${fd}/${name}`;

export function runsDir(home: string): string {
  return join(home, 'runs');
}

export interface RunDirectory {
  path: string;
  sdkDir: string;
  resultsDir: string;
  writesDir: string;
  sockDir: string;
  /** Mode for files comis puts into the run dir (see the module comment). */
  fileMode: number;
  /**
   * The sweep of dead processes' run dirs this process started with its first run (undefined
   * for later runs): it runs while the run is prepared and spawned, off the critical path, and
   * the run's cleanup awaits it.
   */
  swept?: Promise<number>;
}

/** `<pid>-<start time>-<runId>`: the owning process, robust to pid reuse. */
const RUN_DIR_NAME = /^(\d+)-(\d+)-[A-Za-z0-9_-]+$/;
const sweptRunsDirs = new Set<string>();

/** Creates `$COMIS_HOME/runs` (0700, ours, not a link) or refuses with the reason. */
function ensureRunsDir(home: string): string {
  const dir = runsDir(home);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const st = lstatSync(dir);
  const uid = process.geteuid?.();
  if (!st.isDirectory() || (uid !== undefined && st.uid !== uid)) {
    throw new ComisError('IO_ERROR', `${dir} is not a directory owned by the user running comis.`, {
      hint: 'Remove it (comis recreates it, mode 0700); run data must stay private to you.',
      details: { path: dir },
    });
  }
  chmodSync(dir, 0o700);
  return dir;
}

/**
 * Creates this run's directory under `$COMIS_HOME/runs/` (and starts, once
 * per process, the sweep of the run dirs of comis processes that are gone;
 * it never touches a live process's dir, so it need not finish first).
 */
export async function prepareRunDir(home: string, runId: string, opts: { root: boolean }): Promise<RunDirectory> {
  if (!/^[A-Za-z0-9_-]+$/.test(runId)) throw new ComisError('INTERNAL', `Run id ${JSON.stringify(runId)} is not a valid directory name.`);
  const runs = ensureRunsDir(home);
  let swept: Promise<number> | undefined;
  if (!sweptRunsDirs.has(runs)) {
    sweptRunsDirs.add(runs);
    swept = sweepStaleRunDirs(runs).catch(() => 0);
  }
  const path = join(runs, `${process.pid}-${ownStartTime()}-${runId}`);
  const dirMode = opts.root ? 0o755 : 0o700;
  mkdirSync(path, { mode: 0o700 }); // never recursive: an existing name is an error
  chmodSync(path, 0o700);
  const sdkDir = join(path, 'sdk');
  const resultsDir = join(path, 'results');
  const writesDir = join(resultsDir, 'writes');
  for (const d of [sdkDir, resultsDir, writesDir]) {
    mkdirSync(d, { mode: dirMode });
    chmodSync(d, dirMode); // the umask may have narrowed it
  }
  return { path, sdkDir, resultsDir, writesDir, sockDir: join(path, 'sock'), fileMode: opts.root ? 0o644 : 0o600, ...(swept ? { swept } : {}) };
}

/**
 * Removes the run dirs in `runs` whose owning comis process is gone (no
 * such pid, or a pid reused by a process with another start time). Dirs of
 * live processes, including our own concurrent runs, stay. Returns how many
 * were removed.
 */
export async function sweepStaleRunDirs(runs: string): Promise<number> {
  let names: string[];
  try {
    names = await readdir(runs);
  } catch {
    return 0;
  }
  let removed = 0;
  for (const name of names) {
    const m = RUN_DIR_NAME.exec(name);
    if (!m) continue;
    if (!processGone(Number(m[1]), m[2]!)) continue;
    try {
      await removeTree(join(runs, name));
      removed++;
    } catch {
      /* left for the next sweep */
    }
  }
  return removed;
}

/**
 * Removes `path` and everything below it without following any link: each
 * directory is held open and emptied through its fd, so a directory swapped
 * for a symlink during the walk is unlinked as a link and what it points to
 * is never touched. The parent of `path` must be a directory comis trusts.
 * Absent is fine.
 */
export async function removeTree(path: string): Promise<void> {
  let parent: number;
  try {
    parent = openSync(dirname(path), constants.O_RDONLY | constants.O_DIRECTORY);
  } catch (err) {
    if (errno(err) === 'ENOENT') return;
    throw err;
  }
  try {
    await removeAt(parent, basename(path), 0, { sinceYield: 0 });
  } finally {
    closeSync(parent);
  }
}

/**
 * Entries the removal handles between two turns of the event loop. Its calls are synchronous, on
 * held fds, as the strip's are (see {@link STRIP_SLICE_ENTRIES}): a run dir's ~40 awaited
 * fs/promises calls, one threadpool hand-off each, held every run's end ~3 ms.
 */
const REMOVE_SLICE_ENTRIES = 128;

async function removeAt(dirFd: number, name: string, depth: number, walk: { sinceYield: number }): Promise<void> {
  const target = at(dirFd, name);
  // A bounded number of tries: each lost race (the name changed kind under us) costs one.
  for (let attempt = 0; attempt < 8; attempt++) {
    try {
      unlinkSync(target); // files, links, sockets: unlink never follows the last component
      return;
    } catch (err) {
      const code = errno(err);
      if (code === 'ENOENT') return;
      if (code !== 'EISDIR' && code !== 'EPERM') throw err;
    }
    let dir: number;
    try {
      dir = openSync(target, DIR_FLAGS);
    } catch (err) {
      const code = errno(err);
      if (code === 'ENOENT') return;
      if (code === 'ELOOP' || code === 'ENOTDIR') continue; // swapped for a link or file: unlink it
      if (code === 'EACCES') {
        // Not root: our own directory, made 000 by the jail. A lost race here is retried too.
        try {
          makeOwnerAccessible(target);
        } catch {
          /* the next try finds out */
        }
        continue;
      }
      throw err;
    }
    try {
      // Emptying needs write and search on it: the jail may have taken them away (harmless as root).
      if ((fstatSync(dir).mode & 0o700) !== 0o700) {
        try {
          fchmodSync(dir, 0o700);
        } catch {
          /* unlinking below says what is still refused */
        }
      }
      if (depth >= MAX_CLEANUP_DEPTH) throw new ComisError('IO_ERROR', `A tree to remove is deeper than ${MAX_CLEANUP_DEPTH} levels.`);
      for (const child of readdirSync(`/proc/self/fd/${dir}`)) {
        if (++walk.sinceYield >= REMOVE_SLICE_ENTRIES) {
          walk.sinceYield = 0;
          await new Promise((resolve) => setImmediate(resolve));
        }
        await removeAt(dir, child, depth + 1, walk);
      }
    } finally {
      closeSync(dir);
    }
    try {
      rmdirSync(target);
      return;
    } catch (err) {
      const code = errno(err);
      if (code === 'ENOENT') return;
      if (code !== 'ENOTEMPTY' && code !== 'EEXIST' && code !== 'ENOTDIR') throw err;
      // refilled or swapped while we emptied it: go again
    }
  }
  throw new ComisError('IO_ERROR', `Could not remove ${name}: it kept changing while it was removed.`);
}

/** Gives the owner rwx on a directory we own, through an O_PATH fd (the name is not followed). */
function makeOwnerAccessible(target: string): void {
  const fd = openSync(target, O_PATH | constants.O_NOFOLLOW | constants.O_DIRECTORY);
  try {
    chmodSync(`/proc/self/fd/${fd}`, 0o700);
  } finally {
    closeSync(fd);
  }
}

export interface StripReport {
  /** Entries whose mode was narrowed. */
  changed: number;
  /**
   * Directories not walked: deeper than {@link MAX_CLEANUP_DEPTH}, or not
   * readable by us (not root). Each one has itself been narrowed to its
   * owner, so what is below is out of every other user's reach.
   */
  sealed: number;
  /** Entries whose mode could not be changed (not ours, not root). */
  failed: number;
}

/**
 * Entries the strip handles between two turns of the event loop. Its calls are synchronous, on
 * the same held fds: one awaited fs/promises call after another spent 65-100 µs of CPU an entry
 * in FileHandles, promises and threadpool hand-offs (60,000 entries held a run's end 12 s or
 * more), where the same syscalls made synchronously take ~10 µs; a slice this size holds the loop
 * a few ms at most, so other runs' sockets and timers of the process keep being served.
 */
const STRIP_SLICE_ENTRIES = 128;

interface StripWalk {
  report: StripReport;
  /** Entries handled since the walk last let the event loop turn. */
  sinceYield: number;
}

/**
 * After a run, narrows every mode in the workspace: setuid and setgid bits
 * go everywhere, group/world write from everything, and every group/world
 * bit from the workspace root, so nothing the jail left hands its uid to
 * another user or opens the workspace to them. Links are
 * not followed (a link has no mode of its own); each entry's new mode is
 * computed from the fstat of the very inode it is applied to, and only
 * clears bits. The walk is synchronous in slices of {@link STRIP_SLICE_ENTRIES}
 * entries, between which the event loop runs.
 */
export async function stripWorkspace(root: string): Promise<StripReport> {
  const walk: StripWalk = { report: { changed: 0, sealed: 0, failed: 0 }, sinceYield: 0 };
  const top = openSync(root, O_PATH | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  try {
    narrow(top, fstatSync(top), STRIP_ROOT_BITS, walk.report);
    await stripBelow(top, 0, walk);
  } finally {
    closeSync(top);
  }
  return walk.report;
}

/** Clears the strip bits of the inode `fd` names (an O_PATH fd: chmod through /proc/self/fd), `st` its fstat. */
function narrow(fd: number, st: Stats, mask: number, report: StripReport): void {
  if ((st.mode & mask) === 0) return;
  try {
    chmodSync(`/proc/self/fd/${fd}`, st.mode & 0o7777 & ~mask);
    report.changed++;
  } catch {
    report.failed++;
  }
}

async function stripBelow(dirFd: number, depth: number, walk: StripWalk): Promise<void> {
  let names: string[];
  try {
    names = readdirSync(`/proc/self/fd/${dirFd}`);
  } catch (err) {
    if (errno(err) !== 'ENOENT') walk.report.sealed++;
    return;
  }
  for (const name of names) {
    if (++walk.sinceYield >= STRIP_SLICE_ENTRIES) {
      walk.sinceYield = 0;
      await new Promise((resolve) => setImmediate(resolve));
    }
    let fd: number;
    try {
      fd = openSync(at(dirFd, name), O_PATH | constants.O_NOFOLLOW);
    } catch (err) {
      if (errno(err) !== 'ENOENT') walk.report.failed++;
      continue;
    }
    try {
      const st = fstatSync(fd);
      if (st.isSymbolicLink()) continue;
      narrow(fd, st, st.isDirectory() ? STRIP_DIR_BITS : STRIP_FILE_BITS, walk.report);
      if (!st.isDirectory()) continue;
      if (depth + 1 >= MAX_CLEANUP_DEPTH) walk.report.sealed++;
      else await stripBelow(fd, depth + 1, walk);
    } finally {
      closeSync(fd);
    }
  }
}
