/**
 * Everything between a {@link JailRequest} and a process: validate, pick the
 * host uid, resolve and (as root) stage the mounts, build the plan. Shared by
 * the async {@link spawnJail} and the synchronous smoke test, so both start
 * the very same jail.
 */
import { chmodSync, closeSync, constants, lstatSync, mkdirSync, mkdtempSync, openSync, readdirSync, realpathSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { ComisError } from '../errors.js';
import { makeOwnedTempDir } from '../temp-dir.js';
import { MIN_JAIL_HOST_UID, countTasksOfUid, deriveJailUid, inheritableFds, isRoot, readProcStat } from './host.js';
import { buildJailPlan, checkRequest, reachableBy, readHardLimits, resolveMounts, tmpfsMountMode, type JailPlan, type JailTools } from './plan.js';
import type { SeccompArch } from './seccomp.js';
import type { JailRequest } from './types.js';

export interface Launch {
  plan: JailPlan;
  hostUid: number;
  root: boolean;
  /** Removes the stage directory, if one was made. Idempotent. For error paths before the spawn and the synchronous smoke path. */
  cleanup(): void;
  /**
   * {@link cleanup} off the event loop: removing the stage's mount points
   * (once bound in the jail's mount namespace) took 10-16 ms of blocking
   * rmdir per child. Resolves once the stage is gone.
   */
  cleanupAsync(): Promise<void>;
}

const STAGE_PREFIX = 'comis-stage-';
const swept = new Set<string>();

/**
 * Where a stage directory goes. bubblewrap opens the stage's placeholders as
 * its bind sources after setpriv, as the jail uid, so the jail uid must be able
 * to search its way into the parent: $TMPDIR first, and when that is private
 * (a 0700 TMPDIR, as careful operators and CI runners set it) /tmp. The
 * parent must also be one nobody else can rename entries in (not group or
 * world writable, or sticky like /tmp), else another user could swap the
 * stage for a directory of their own between its creation and the bind.
 * Exported for the tests.
 */
export function stageParent(hostUid: number): string {
  const tried: string[] = [];
  for (const dir of [...new Set([tmpdir(), '/tmp'])]) {
    tried.push(dir);
    let st;
    try {
      st = statSync(dir);
    } catch {
      continue;
    }
    if (!st.isDirectory()) continue;
    if ((st.mode & 0o022) !== 0 && (st.mode & 0o1000) === 0) continue;
    if (st.uid !== 0 && st.uid !== process.geteuid?.()) continue;
    // reachableBy checks the directories on the way to a path: a name inside `dir` checks `dir` itself too.
    if (reachableBy(join(dir, 'x'), hostUid, hostUid)) return dir;
  }
  throw new ComisError('SANDBOX_UNAVAILABLE', `No directory to stage the jail's binds in: ${tried.join(' and ')} cannot be searched by jail uid ${hostUid} (or can be rewritten by other users).`, {
    hint: 'Point TMPDIR at a directory every user may search (mode 0711 or 1777, owned by root), or keep the workspace and interpreters where the jail uid can reach them.',
  });
}

/**
 * Removes stage directories left by comis processes that died without
 * cleaning up (SIGKILL). Once per process and parent; only directories named
 * after a dead pid and owned by us, never following a symlink, so a name
 * planted in a shared /tmp cannot steer it.
 */
function sweepStaleStages(dir: string): void {
  if (swept.has(dir)) return;
  swept.add(dir);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    const m = new RegExp(`^${STAGE_PREFIX}(\\d+)-`).exec(name);
    if (!m) continue;
    const pid = Number(m[1]);
    if (pid === process.pid || processAlive(pid)) continue;
    const path = join(dir, name);
    try {
      const st = lstatSync(path);
      if (st.isDirectory() && st.uid === process.geteuid?.()) rmSync(path, { recursive: true, force: true });
    } catch {
      /* gone or not ours */
    }
  }
}

/** A live process with this pid (a zombie is dead: it only waits for its parent to notice). */
function processAlive(pid: number): boolean {
  const st = readProcStat(pid);
  return st !== undefined && st.state !== 'Z' && st.state !== 'X';
}

/** The host uid the jail will run as for this request. */
export function jailHostUid(req: JailRequest, root: boolean): number {
  if (!root) return process.getuid?.() ?? 65534;
  if (req.hostUid !== undefined) {
    if (!Number.isInteger(req.hostUid) || req.hostUid < MIN_JAIL_HOST_UID || req.hostUid > 0xffff_fffe) {
      throw new ComisError('INPUT_INVALID', `Jail host uid ${req.hostUid} is not an unprivileged uid (${MIN_JAIL_HOST_UID} or more).`, {
        hint: 'Pass an unused uid above the system range, or leave hostUid unset to derive one from the workspace.',
      });
    }
    return req.hostUid;
  }
  const rw = req.mounts.find((m) => m.kind === 'rw');
  if (!rw) return deriveJailUid(req.cwd);
  try {
    return deriveJailUid(realpathSync(rw.source)); // the same uid whichever symlink names the workspace
  } catch {
    return deriveJailUid(rw.source);
  }
}

/**
 * Validates `req` and prepares its launch. As root, mounts whose source the
 * unprivileged jail uid cannot reach (a workspace under a 0700 /root, a
 * pyenv python) get a fresh 0711 stage directory with one placeholder per
 * such mount; the plan binds the real sources onto them in a private mount
 * namespace, so the host never sees those binds. The same stage holds the
 * two mount points of the inode-bounded /tmp and /dev/shm (root, or not
 * root where the detection found a user namespace of our own usable).
 */
export function prepareLaunch(req: JailRequest, tools: JailTools, arch: SeccompArch): Launch {
  checkRequest(req);
  const root = isRoot();
  const hostUid = jailHostUid(req, root);
  const mounts = resolveMounts(req.mounts, { root, hostUid });
  let stageDir: string | undefined;
  const cleanup = (): void => {
    if (stageDir) rmSync(stageDir, { recursive: true, force: true });
    stageDir = undefined;
  };
  const cleanupAsync = async (): Promise<void> => {
    const dir = stageDir;
    stageDir = undefined;
    if (dir) await rm(dir, { recursive: true, force: true });
  };
  try {
    const boundTmpfs = !req.testOnlyWeaken?.tmpInodes && tmpfsMountMode({ tools, root }) !== undefined;
    if (boundTmpfs || mounts.some((m) => m.staged)) {
      const parent = stageParent(hostUid);
      sweepStaleStages(parent);
      stageDir = mkdtempSync(join(parent, `${STAGE_PREFIX}${process.pid}-`));
      chmodSync(stageDir, 0o711);
    }
    const plan = buildJailPlan(req, mounts, {
      tools,
      root,
      arch,
      hostUid,
      ...(root ? {} : { tasksOfUid: countTasksOfUid(hostUid), hardLimits: readHardLimits() }),
      ...(stageDir ? { stageDir } : {}),
    });
    for (const entry of plan.stage) {
      if (entry.isDir) mkdirSync(entry.path, { mode: 0o700 });
      else writeFileSync(entry.path, entry.content ?? '', { mode: 0o600, flag: 'wx' });
    }
    return { plan, hostUid, root, cleanup, cleanupAsync };
  } catch (err) {
    cleanup();
    throw err;
  }
}

/** O_TMPFILE where node runs (x64, arm64: `__O_TMPFILE | O_DIRECTORY`); node does not export it. */
const O_TMPFILE = process.platform === 'linux' && (process.arch === 'x64' || process.arch === 'arm64') ? 0o20000000 | constants.O_DIRECTORY : undefined;

/**
 * For the synchronous path only (spawnSync cannot feed pipes): the plan's
 * data as read-only fds of files that never have a name (O_TMPFILE), so a
 * comis killed at any point leaves nothing behind. Where the filesystem
 * cannot, files in a temp dir unlinked at once, which the next comis sweeps
 * if this one dies first (see makeOwnedTempDir). Never used for a request
 * that carries secrets; {@link spawnJail} uses pipes.
 */
export function dataFdsFromFiles(data: readonly Buffer[]): { fds: number[]; close(): void } {
  const fds: number[] = [];
  const close = (): void => {
    for (const fd of fds.splice(0)) closeSync(fd);
  };
  try {
    for (const buf of data) {
      const fd = unnamedReadOnlyFile(buf);
      if (fd === undefined) break;
      fds.push(fd);
    }
  } catch (err) {
    close();
    throw err;
  }
  if (fds.length === data.length) return { fds, close };
  close();
  const dir = makeOwnedTempDir('comis-jail-fds-');
  try {
    data.forEach((buf, i) => {
      const file = join(dir, String(i));
      writeFileSync(file, buf, { mode: 0o600 });
      fds.push(openSync(file, 'r'));
    });
  } catch (err) {
    close();
    throw err;
  } finally {
    // Unlinked at once: only the open fds remain.
    rmSync(dir, { recursive: true, force: true });
  }
  return { fds, close };
}

/** A read-only fd of a nameless file holding `buf`, or undefined where O_TMPFILE is refused. */
function unnamedReadOnlyFile(buf: Buffer): number | undefined {
  if (O_TMPFILE === undefined) return undefined;
  let rw: number;
  try {
    rw = openSync(tmpdir(), O_TMPFILE | constants.O_RDWR, 0o600);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'EOPNOTSUPP' || code === 'EISDIR' || code === 'EINVAL' || code === 'ENOENT') return undefined;
    throw err;
  }
  try {
    for (let off = 0; off < buf.length;) off += writeSync(rw, buf, off);
    // A second open of it, read-only, at offset 0: what the jail's reader gets.
    return openSync(`/proc/self/fd/${rw}`, 'r');
  } finally {
    closeSync(rw);
  }
}

/** Content (latin1) → fd of an unlinked, read-only file holding it: see {@link openConstantData}. */
const constantFiles = new Map<string, number>();
/** The plan's constants are a seccomp filter and four /etc files; test-only weakened filters add a few. */
const MAX_CONSTANT_FILES = 16;

/**
 * A fresh read-only fd, at offset 0, of a file holding exactly `data`, for a
 * plan's constant data fds ({@link JailPlan.constantData}: the seccomp filter
 * and the synthetic /etc, the same bytes for every jail). The file is written
 * once per process and content, 0600, and unlinked at once; each call reopens
 * it through /proc/self/fd, so every jail gets its own offset and nothing but
 * this process holds a name for it. Replaces one pipe, its stream and its
 * write per constant per spawn (5 of the 9 pipes of a jail). Undefined when
 * it cannot (the caller then uses a pipe). Never for the caller's data.
 */
export function openConstantData(data: Buffer): number | undefined {
  const key = data.toString('latin1');
  let file = constantFiles.get(key);
  if (file === undefined) {
    if (constantFiles.size >= MAX_CONSTANT_FILES) return undefined;
    try {
      file = dataFdsFromFiles([data]).fds[0]!;
    } catch {
      return undefined;
    }
    constantFiles.set(key, file);
  }
  try {
    return openSync(`/proc/self/fd/${file}`, 'r');
  } catch {
    return undefined;
  }
}

/**
 * Extends a spawn `stdio` array so every fd this process would otherwise
 * pass on by accident (see {@link inheritableFds}) is replaced by /dev/null
 * in the child. Returns the array and a function closing our /dev/null fd.
 */
export function withInheritedFdsCovered<T>(stdio: readonly T[]): { stdio: (T | number)[]; close(): void } {
  const leaked = inheritableFds().filter((fd) => fd >= stdio.length);
  if (leaked.length === 0) return { stdio: [...stdio], close: () => undefined };
  const devNull = openSync('/dev/null', 'r'); // libuv opens with O_CLOEXEC; the child gets dup2'd copies
  const out: (T | number)[] = [...stdio];
  const top = leaked[leaked.length - 1]!;
  for (let fd = stdio.length; fd <= top; fd++) out.push(leaked.includes(fd) ? devNull : ('ignore' as T));
  return { stdio: out, close: () => closeSync(devNull) };
}
