/**
 * Temp directories comis makes in $TMPDIR (jail probes, DuckDB query
 * children, the synchronous jail's data files), named after the process that
 * owns them so that one left by a comis killed with SIGKILL, which no
 * `finally` removes, is removed by the next comis that makes one.
 *
 * Name: `<prefix><pid>-<start time>-XXXXXX`. The sweep removes only entries
 * with a known prefix, owned by our euid, whose process is gone (no such pid,
 * or the pid reused by a process with another start time): never a live
 * process's dir, never another user's. It removes with {@link removeTree},
 * which holds each directory open and never follows a link, because a jail
 * uid may have owned parts of the tree. The sticky bit of a shared /tmp
 * keeps other users from renaming our entry between the check and the
 * removal (a non-sticky, group- or world-writable TMPDIR is refused by the
 * jail's stage anyway).
 */
import { chmodSync, closeSync, constants, fstatSync, mkdtempSync, openSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { ownStartTime, processGone } from './jail/host.js';
import { removeTree } from './orchestrate/run-dir.js';

/** Every prefix comis makes temp dirs with; the sweep knows only these. */
export type TempDirPrefix = 'comis-probe-' | 'comis-duckdb-' | 'comis-jail-fds-';
const NAME = /^(?:comis-probe-|comis-duckdb-|comis-jail-fds-)(\d+)-(\d+)-[A-Za-z0-9]{6}$/;

const sweptParents = new Set<string>();

/**
 * Creates a fresh directory `<tmpdir>/<prefix><pid>-<start>-XXXXXX`, mode
 * `mode` (0700 unless the caller needs the jail uid to pass through it), and
 * starts, once per process and parent, the sweep of dead processes' ones.
 * The caller still removes it on every path it controls.
 */
export function makeOwnedTempDir(prefix: TempDirPrefix, mode = 0o700): string {
  const parent = tmpdir();
  if (!sweptParents.has(parent)) {
    sweptParents.add(parent);
    // Never awaited: it touches only dead processes' dirs, and what it cannot remove waits for the next comis.
    void sweepDeadTempDirs(parent).catch(() => 0);
  }
  const dir = mkdtempSync(join(parent, `${prefix}${process.pid}-${ownStartTime()}-`));
  if (mode !== 0o700) chmodSync(dir, mode);
  return dir;
}

/** Removes the temp dirs in `parent` of our euid whose comis process is gone; returns how many. */
export async function sweepDeadTempDirs(parent: string): Promise<number> {
  let names: string[];
  try {
    names = readdirSync(parent);
  } catch {
    return 0;
  }
  const euid = process.geteuid?.();
  let removed = 0;
  for (const name of names.filter(ownerIsGone)) {
    const path = join(parent, name);
    try {
      // Opened without following, then checked: a link or another user's entry is left alone.
      const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
      let ours: boolean;
      try {
        ours = euid === undefined || fstatSync(fd).uid === euid;
      } finally {
        closeSync(fd);
      }
      if (!ours) continue;
      await removeTree(path);
      removed++;
    } catch {
      /* gone meanwhile, or not ours to open: left for the next sweep */
    }
  }
  return removed;
}

/** A temp dir name of ours whose process is gone: no such pid, a zombie, or the pid reused by a process with another start time. */
function ownerIsGone(name: string): boolean {
  const m = NAME.exec(name);
  return m !== null && processGone(Number(m[1]), m[2]!);
}
