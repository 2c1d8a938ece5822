/**
 * Small facts about the host the jail is built on: where a binary is on
 * PATH, who we are, how many tasks a uid runs, when a process started.
 * Everything reads the filesystem or /proc directly, so tests can steer it
 * with PATH and temp dirs instead of mocks.
 */
import { accessSync, closeSync, constants, openSync, readFileSync, readSync, readdirSync, statSync } from 'node:fs';
import { delimiter, isAbsolute, join } from 'node:path';

import { hashJailUid } from './uid-registry.js';

/**
 * The first executable regular file called `name` in the PATH list `pathEnv`
 * (default: this process's PATH), or undefined. Relative PATH entries are
 * skipped: a binary run as root must not depend on the current directory.
 */
export function findOnPath(name: string, pathEnv: string | undefined = process.env.PATH): string | undefined {
  for (const dir of (pathEnv ?? '').split(delimiter)) {
    if (!dir || !isAbsolute(dir)) continue;
    const candidate = join(dir, name);
    try {
      if (!statSync(candidate).isFile()) continue;
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      /* not here */
    }
  }
  return undefined;
}

/** System directories searched for helper tools (prlimit, setpriv, unshare, mount, sh) after PATH. */
const SYSTEM_DIRS = ['/usr/bin', '/bin', '/usr/sbin', '/sbin'];

/** Like {@link findOnPath}, then the standard system directories: for util-linux helpers root's PATH may lack. */
export function findHelper(name: string, pathEnv: string | undefined = process.env.PATH): string | undefined {
  return findOnPath(name, pathEnv) ?? findOnPath(name, SYSTEM_DIRS.join(delimiter));
}

/** True when comis runs with effective uid 0 (the jail then drops to an unprivileged uid itself). */
export function isRoot(): boolean {
  return typeof process.geteuid === 'function' && process.geteuid() === 0;
}

/** Lowest host uid the jail may run as when comis is root: below it live system accounts. */
export const MIN_JAIL_HOST_UID = 1000;

/**
 * The host uid of a jail that has no registry entry: a stable hash of
 * `path` into a range of its own that skips every subuid/subgid grant and
 * every account and group (see `hashJailUid` in uid-registry.ts). Runs get
 * their uid from the workspace registry instead (unique per workspace);
 * this serves the probe and direct `spawnJail` callers.
 */
export function deriveJailUid(path: string): number {
  return hashJailUid(path);
}

/** Pids of all processes visible in /proc. */
export function listPids(): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (Number.isInteger(pid) && pid > 0) out.push(pid);
  }
  return out;
}

/** One buffer for every /proc/<pid>/status read (they are ~1.5 KB; a longer one is read whole). */
const statusBuf = Buffer.alloc(8192);

/** The value after `\n<label>:\t` in a status text, as an integer; undefined when the line is absent. */
function statusField(text: string, label: string): number | undefined {
  const at = text.indexOf(`\n${label}:\t`);
  if (at < 0) return undefined;
  const n = Number.parseInt(text.slice(at + label.length + 3), 10);
  return Number.isInteger(n) ? n : undefined;
}

/**
 * Real uid and thread count of a process, from /proc/<pid>/status; undefined
 * when it is gone. Read into a shared buffer (no fstat, no UTF-8 decode):
 * {@link countTasksOfUid} reads one per process on the host, on every jail.
 */
export function readUidAndThreads(pid: number): { uid: number; threads: number } | undefined {
  let text: string;
  try {
    const fd = openSync(`/proc/${pid}/status`, 'r');
    let len: number;
    try {
      len = readSync(fd, statusBuf, 0, statusBuf.length, 0);
    } finally {
      closeSync(fd);
    }
    // A status longer than the buffer (thousands of supplementary groups): read it whole.
    text = len < statusBuf.length ? statusBuf.toString('latin1', 0, len) : readFileSync(`/proc/${pid}/status`, 'latin1');
  } catch {
    return undefined;
  }
  // "Uid:\t<real>\t<effective>\t…": the first number is the real uid, which RLIMIT_NPROC counts.
  const uid = statusField(text, 'Uid');
  if (uid === undefined) return undefined;
  return { uid, threads: statusField(text, 'Threads') ?? 1 };
}

/** Number of tasks (threads count: RLIMIT_NPROC counts tasks) whose real uid is `uid`. */
export function countTasksOfUid(uid: number): number {
  let n = 0;
  for (const pid of listPids()) {
    const info = readUidAndThreads(pid);
    if (info && info.uid === uid) n += info.threads;
  }
  return n;
}

export interface ProcStat {
  state: string;
  ppid: number;
  /** Start time in clock ticks after boot: with the pid, a process identity that survives pid reuse. */
  startTime: string;
}

/** Parses /proc/<pid>/stat; undefined when the process is gone. */
export function readProcStat(pid: number): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // comm may contain spaces and parentheses: fields start after the LAST ')'.
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
  if (rest.length < 20) return undefined;
  return { state: rest[0]!, ppid: Number(rest[1]), startTime: rest[19]! };
}

/**
 * Whether the process `pid` that started at `startTime` (clock ticks after boot, /proc/<pid>/stat)
 * is gone: no such pid, the pid reused by a process with another start time, or a zombie (a
 * pid-namespace init becomes one only after every process of its namespace is dead).
 */
export function processGone(pid: number, startTime: string): boolean {
  const st = readProcStat(pid);
  return !st || st.startTime !== startTime || st.state === 'Z' || st.state === 'X';
}

let ownStart: string | undefined;

/** This process's start time, read once: names that must survive pid reuse carry it (run dirs, temp dirs). */
export function ownStartTime(): string {
  ownStart ??= readProcStat(process.pid)?.startTime ?? '0';
  return ownStart;
}

/** True when `pid` is pid 1 of a pid namespace nested in ours (its NSpid line ends in 1). */
export function isNamespaceInit(pid: number): boolean {
  try {
    const m = /^NSpid:\s+(.+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    const ids = m ? m[1]!.trim().split(/\s+/) : [];
    return ids.length >= 2 && ids[ids.length - 1] === '1';
  } catch {
    return false;
  }
}

/** Child pids of `pid` (all its threads), from /proc/<pid>/task/<tid>/children. */
export function childPids(pid: number): number[] {
  const out: number[] = [];
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tasks) {
    try {
      for (const c of readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').trim().split(/\s+/)) {
        if (c) out.push(Number(c));
      }
    } catch {
      /* task gone */
    }
  }
  return out;
}

const O_CLOEXEC = 0o2000000;

/**
 * File descriptors (3 and up) this process holds WITHOUT close-on-exec: ones
 * it inherited from whoever started it (a CI runner, a shell). Node closes
 * nothing but its own on spawn, and bubblewrap passes unknown fds through,
 * so these would reach the jail; the spawner covers each with /dev/null.
 */
export function inheritableFds(): number[] {
  const out: number[] = [];
  let names: string[];
  try {
    names = readdirSync('/proc/self/fd');
  } catch {
    return out;
  }
  for (const name of names) {
    const fd = Number(name);
    if (!Number.isInteger(fd) || fd < 3) continue;
    try {
      const m = /^flags:\s+([0-7]+)/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'));
      if (m && (parseInt(m[1]!, 8) & O_CLOEXEC) === 0) out.push(fd);
    } catch {
      /* closed meanwhile (e.g. the fd readdir itself used) */
    }
  }
  return out.sort((a, b) => a - b);
}
