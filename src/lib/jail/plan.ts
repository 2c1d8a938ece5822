/**
 * The jail builder: turns a {@link JailRequest} into the exact process to
 * start. ONE builder serves real runs, the provider smoke test and
 * `comis jail probe`, so what the probe proves is what orchestrate gets.
 *
 * Shape of the process (every stage execs in place, so the pid the caller
 * holds is bubblewrap's and bubblewrap's parent is the caller; with a deadline
 * the supervisor forks, and as root so does its stager, see HOLDING_STAGE_SCRIPT):
 *
 *   prlimit --nproc --as --fsize --core --nofile --
 *     [with a deadline: setpriv --pdeathsig ALRM -- timeout -s KILL -k 1 <secs> --]
 *     [root: unshare --mount -- sh -c '<one `mount -a` of the stage fstab: the
 *      inode-bounded /tmp and /dev/shm tmpfs, bind sources the jail uid cannot
 *      reach, onto a 0711 stage dir>' ... --]
 *     [not root, the host allows it: unshare --user --map-root-user --mount --
 *      sh -c '<the same, the inode-bounded tmpfs pair only>' ... --]
 *     [root: setpriv --reuid U --regid U --clear-groups --inh-caps=-all --bounding-set=-all --no-new-privs]
 *       bwrap --args 3 [non-root: --block-fd G] -- COMMAND...
 *
 * With a deadline the supervisor (coreutils `timeout`) forks: the pid the
 * caller holds is the supervisor's, bubblewrap is its child. It kills the
 * jail at the deadline without any help from the caller's event loop, and it
 * ends with the caller (parent-death signal SIGALRM, kept across its exec
 * because nothing changes credentials before it, which it takes for its
 * deadline: one SIGKILL to its whole process group, see {@link supervisorArgs}).
 *
 * Security properties:
 * - Every bubblewrap option, including `--setenv` of the caller's env (the
 *   lease bearer), travels through a pipe (`--args 3`); the host command lines
 *   carry only limits, uids, host paths and the jailed argv.
 * - The process starts with an EMPTY environment, so neither bubblewrap's
 *   /proc/<pid>/environ nor the jail's sees comis's environment.
 * - As root, rlimits are set before dropping to an unprivileged uid: the
 *   kernel never enforces RLIMIT_NPROC on uid 0, and a jail whose uid maps to
 *   host root would be one capability bug away from the host.
 * - Option values can never smuggle options: NUL (the --args separator) is
 *   refused in every value, and the jailed argv follows `--`.
 * - No terminal: the jail has no controlling terminal, so no /dev/tty, no
 *   TIOCSTI/TIOCLINUX target and no terminal signals (see {@link sharesSession}).
 */
import { lstatSync, readFileSync, readlinkSync, realpathSync, statSync } from 'node:fs';
import { posix } from 'node:path';

import { ComisError } from '../errors.js';
import { buildSeccompFilter, type SeccompArch } from './seccomp.js';
import { DEFAULT_TMP_INODES, type JailMount, type JailRequest, type JailResourceLimits } from './types.js';

/** uid and gid of the script inside the jail (mapped to the unprivileged host uid). */
export const JAIL_UID = 1000;
export const JAIL_HOSTNAME = 'comis-jail';
/** First fd number after stdin/stdout/stderr: where the plan's data fds start. */
export const FIRST_DATA_FD = 3;
const MIB = 1024 * 1024;
const NOFILE = 4096;

/** Paths the caller's mounts may not cover: the system base lives there. */
export const RESERVED_TARGETS = ['/proc', '/dev', '/etc', '/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];
/** Top-level host entries mirrored into the jail (as the same symlink, or read-only when they are real dirs). */
const USR_SIBLINGS = ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

/** The synthetic /etc: the jail user, localhost, files-only name service. Nothing from the host /etc. */
export const JAIL_ETC: Readonly<Record<string, string>> = {
  '/etc/passwd': `root:x:0:0:root:/nonexistent:/usr/sbin/nologin\ncomis:x:${JAIL_UID}:${JAIL_UID}:comis jail:/tmp:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`,
  '/etc/group': `root:x:0:\ncomis:x:${JAIL_UID}:\nnogroup:x:65534:\n`,
  '/etc/hosts': `127.0.0.1\tlocalhost ${JAIL_HOSTNAME}\n::1\tlocalhost ip6-localhost ip6-loopback\n`,
  '/etc/nsswitch.conf': 'passwd: files\ngroup: files\nshadow: files\nhosts: files\nnetworks: files\nprotocols: files\nservices: files\n',
};

/** Host binaries the outer stages use, found by the provider detection. */
export interface JailTools {
  bwrap: string;
  prlimit: string;
  /** Required when root, and for the deadline supervisor (its parent-death signal). */
  setpriv?: string;
  /** coreutils `timeout`: the deadline supervisor. Required for a request with `deadlineMs`. */
  timeout?: string;
  /** Required when root and a mount must be staged. */
  unshare?: string;
  mount?: string;
  sh?: string;
  /**
   * How /tmp and /dev/shm get their inode bound (`nr_inodes`, which
   * bubblewrap's own `--tmpfs` cannot set): `stage`, as root, mounts them in
   * the stager's private mount namespace; `userns`, not root, in a user and
   * mount namespace of our own (`unshare --user --map-root-user`), which the
   * detection enables only when its smoke test passes that way. Absent:
   * bubblewrap's `--tmpfs`, bounded in bytes only.
   */
  tmpfsMount?: 'stage' | 'userns';
}

export interface PlanContext {
  tools: JailTools;
  root: boolean;
  arch: SeccompArch;
  /** Host uid/gid the jail runs as (root: the setpriv target; otherwise our own uid). */
  hostUid: number;
  /** Non-root only: tasks this uid already runs (RLIMIT_NPROC is per uid, see {@link rlimitArgs}). */
  tasksOfUid?: number;
  /** Our own hard limits (non-root can only lower them). */
  hardLimits?: HardLimits;
  /** A fresh 0711 directory for staged binds; required when {@link ResolvedMount.staged} is set on any mount. */
  stageDir?: string;
  /** Whether this process may have a controlling terminal (see {@link sharesSession}); read from /proc when absent. */
  terminal?: boolean;
}

/** A caller mount after validation: real source, what it is, and whether it must be staged. */
export interface ResolvedMount extends JailMount {
  /** The real host path (symlinks resolved). */
  realSource: string;
  isDir: boolean;
  /** Root only: the jail uid cannot walk to the source, so it is bound onto a stage path first. */
  staged: boolean;
}

export interface JailPlan {
  /** Program to spawn (prlimit). */
  file: string;
  /** Its arguments (argv[1..]); visible in ps, holds no secret. */
  args: string[];
  /** Bytes for fds 3, 4, …: bubblewrap reads each to EOF. */
  dataFds: Buffer[];
  /**
   * Indices into {@link dataFds} that hold only comis's own constants (the
   * seccomp filter, the synthetic /etc files), never anything of the
   * caller's: the spawner may serve these from one read-only file shared by
   * every jail instead of a pipe each. The options fd (which carries the
   * caller's env) is never one of them.
   */
  constantData: number[];
  /** fd number bubblewrap writes its JSON status (child pid, exit code) to; it comes after the data fds. */
  statusFd: number;
  /**
   * Stage entries to create before spawning: `<stageDir>/<i>`, a dir or an
   * empty file (a mount point), and last, when anything is staged,
   * `<stageDir>/fstab` with `content`: every stage mount, which the stager
   * makes with one `mount -a` (one process, not one per mount).
   */
  stage: { path: string; isDir: boolean; content?: string }[];
  /**
   * Not root: bubblewrap's `--block-fd`, on which the jail waits, set up and
   * just before its exec, until the caller has lowered the jail's
   * RLIMIT_NPROC to `nproc` (`prlimit --pid`) and written one byte. The fd
   * comes after the status fd. The jail's own limit can only be set from
   * outside: a `prlimit` stage inside the jail would exec the command itself,
   * and bubblewrap could then no longer tell the caller whether the command
   * was exec'd (its `exit-code` status).
   */
  nprocGate?: { fd: number; nproc: number };
  /**
   * bubblewrap's `--block-fd` (after the status fd), when the jail waits for
   * one byte before its exec: always not root ({@link nprocGate}), and for a
   * {@link JailRequest.gated} request.
   */
  gateFd?: number;
}

export interface HardLimits {
  nproc?: number;
  as?: number;
  fsize?: number;
  nofile?: number;
}

function invalid(message: string, hint?: string): ComisError {
  return new ComisError('INPUT_INVALID', message, { hint: hint ?? 'This is a bug in the caller of the jail API.' });
}

function noNul(value: string, what: string): string {
  // NUL separates --args entries: a NUL inside a value would inject bwrap options.
  if (value.includes('\0')) throw invalid(`${what} contains a NUL byte.`);
  return value;
}

/** Validates an absolute, normalized jail path. */
export function checkJailPath(path: string, what: string): string {
  noNul(path, what);
  if (!path.startsWith('/') || posix.normalize(path) !== path || (path.length > 1 && path.endsWith('/'))) {
    throw invalid(`${what} must be an absolute, normalized path inside the jail: ${JSON.stringify(path)}`);
  }
  return path;
}

function checkTarget(target: string): void {
  checkJailPath(target, 'Mount target');
  if (target === '/' || target === '/tmp' || target === '/dev/shm') throw invalid(`Mount target ${target} would hide the jail's own filesystem.`);
  const reserved = RESERVED_TARGETS.find((r) => target === r || target.startsWith(`${r}/`));
  if (reserved) throw invalid(`Mount target ${target} is inside ${reserved}, which the jail's system base owns.`);
}

function checkLimits(limits: JailResourceLimits): void {
  for (const key of ['memoryMb', 'maxProcesses', 'fileSizeMb', 'tmpSizeMb'] as const) {
    const v = limits[key];
    if (!Number.isInteger(v) || v < 1) throw invalid(`Jail limit ${key} must be a positive integer, got ${String(v)}.`);
  }
  if (limits.tmpInodes !== undefined && (!Number.isInteger(limits.tmpInodes) || limits.tmpInodes < 64 || limits.tmpInodes > 16_777_216)) {
    throw invalid(`Jail limit tmpInodes must be an integer from 64 to 16777216, got ${String(limits.tmpInodes)}.`);
  }
  if (limits.maxProcesses < 4) throw invalid('Jail limit maxProcesses must be at least 4.');
}

/** The supervisor's duration argument: seconds with millisecond precision (`timeout` takes fractions). */
export function deadlineSeconds(deadlineMs: number): string {
  return (deadlineMs / 1000).toFixed(3);
}

/** Validates everything in a request that does not touch the filesystem. */
export function checkRequest(req: JailRequest): void {
  if (!Array.isArray(req.command) || req.command.length === 0) throw invalid('The jailed command is empty.');
  checkJailPath(req.command[0]!, 'command[0]');
  for (const arg of req.command) if (typeof arg !== 'string') throw invalid('Every jailed command argument must be a string.');
  checkJailPath(req.cwd, 'cwd');
  for (const [k, v] of Object.entries(req.env)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(k)) throw invalid(`Environment variable name ${JSON.stringify(k)} is not valid.`);
    if (typeof v !== 'string') throw invalid(`Environment variable ${k} must be a string.`);
    noNul(v, `Environment variable ${k}`);
  }
  for (const m of req.mounts) {
    if (m.kind !== 'ro' && m.kind !== 'rw' && m.kind !== 'socket') throw invalid(`Unknown mount kind ${String(m.kind)}.`);
    noNul(m.source, 'Mount source');
    checkTarget(m.target);
  }
  const targets = req.mounts.map((m) => m.target);
  const dup = targets.find((t, i) => targets.indexOf(t) !== i);
  if (dup) throw invalid(`Two mounts target ${dup}.`);
  checkLimits(req.limits);
  // A weakened jail exists only as the positive control of a test: never let a stray field reach a real run.
  if (req.testOnlyWeaken !== undefined && process.env.VITEST === undefined) throw new Error('testOnlyWeaken is for the test suite only');
  if (req.deadlineMs !== undefined && (!Number.isInteger(req.deadlineMs) || req.deadlineMs < 1 || req.deadlineMs > 24 * 3600 * 1000)) {
    throw invalid(`Jail deadline ${String(req.deadlineMs)} ms must be a whole number of ms between 1 and one day.`);
  }
}

/** True when uid/gid (with no supplementary groups) may search every directory on the way to `path`. */
export function reachableBy(path: string, uid: number, gid: number): boolean {
  const parts = path.split('/').filter(Boolean);
  let dir = '/';
  for (let i = 0; i < parts.length; i++) {
    let st;
    try {
      st = statSync(dir);
    } catch {
      return false;
    }
    const bit = st.uid === uid ? 0o100 : st.gid === gid ? 0o010 : 0o001;
    if ((st.mode & bit) === 0) return false;
    dir = posix.join(dir, parts[i]!);
  }
  return true;
}

/**
 * Resolves each caller mount to its real host path and checks its type: a
 * `socket` mount must be a unix socket, `ro`/`rw` a directory or regular
 * file, and nothing may bind the host root. As root, marks the mounts the
 * unprivileged jail uid could not reach (e.g. under a 0700 /root) for staging.
 */
export function resolveMounts(mounts: readonly JailMount[], opts: { root: boolean; hostUid: number }): ResolvedMount[] {
  return mounts.map((m) => {
    let realSource: string;
    try {
      realSource = realpathSync(m.source);
    } catch (err) {
      throw invalid(`Mount source ${m.source} does not exist or cannot be resolved (${(err as NodeJS.ErrnoException).code ?? 'error'}).`, 'Create it before starting the jail.');
    }
    if (realSource === '/') throw invalid(`Mount source ${m.source} resolves to the host root.`);
    const st = lstatSync(realSource);
    if (m.kind === 'socket' && !st.isSocket()) throw invalid(`Mount source ${m.source} is not a unix socket.`);
    if (m.kind !== 'socket' && !st.isDirectory() && !st.isFile()) throw invalid(`Mount source ${m.source} is neither a directory nor a regular file.`);
    const staged = opts.root && !reachableBy(realSource, opts.hostUid, opts.hostUid);
    return { ...m, realSource, isDir: st.isDirectory(), staged };
  });
}

/** Parent first: a mount whose target is inside another's must come after it, or it would be hidden. */
export function orderMounts<T extends JailMount>(mounts: readonly T[]): T[] {
  const depth = (t: string): number => t.split('/').length;
  return mounts
    .map((m, i) => ({ m, i }))
    .sort((a, b) => depth(a.m.target) - depth(b.m.target) || a.i - b.i)
    .map((x) => x.m);
}

/** Our hard rlimits, from /proc/self/limits (undefined = unlimited). */
export function readHardLimits(): HardLimits {
  const out: HardLimits = {};
  let text = '';
  try {
    text = readFileSync('/proc/self/limits', 'utf8');
  } catch {
    return out;
  }
  const pick = (label: string): number | undefined => {
    const m = new RegExp(`^${label}\\s+\\S+\\s+(\\S+)`, 'm').exec(text);
    return m && m[1] !== 'unlimited' ? Number(m[1]) : undefined;
  };
  const nproc = pick('Max processes');
  const as = pick('Max address space');
  const fsize = pick('Max file size');
  const nofile = pick('Max open files');
  if (nproc !== undefined) out.nproc = nproc;
  if (as !== undefined) out.as = as;
  if (fsize !== undefined) out.fsize = fsize;
  if (nofile !== undefined) out.nofile = nofile;
  return out;
}

/**
 * prlimit options for the whole jail (soft = hard, so the script cannot raise them).
 *
 * RLIMIT_NPROC is counted per REAL uid over the whole host. As root the jail
 * gets its own unprivileged uid, so the limit is exactly maxProcesses. Not
 * root, the jail shares our uid with every other process we run, so the outer
 * limit must be (tasks we already run + maxProcesses) or bubblewrap could not
 * even start; the jail's own count is then tightened to maxProcesses on its
 * pid 1 before it execs (`prlimit --pid` through {@link JailPlan.nprocGate}),
 * which the kernel checks against the jail's user namespace.
 */
export function rlimitArgs(limits: JailResourceLimits, ctx: Pick<PlanContext, 'root' | 'tasksOfUid' | 'hardLimits'>): string[] {
  const cap = (want: number, hard: number | undefined): number => (ctx.root || hard === undefined ? want : Math.min(want, hard));
  const h = ctx.hardLimits ?? {};
  const nproc = ctx.root ? limits.maxProcesses : cap((ctx.tasksOfUid ?? 0) + limits.maxProcesses, h.nproc);
  const as = cap(limits.memoryMb * MIB, h.as);
  const fsize = cap(limits.fileSizeMb * MIB, h.fsize);
  const nofile = cap(NOFILE, h.nofile);
  return [`--nproc=${nproc}:${nproc}`, `--as=${as}:${as}`, `--fsize=${fsize}:${fsize}`, '--core=0:0', `--nofile=${nofile}:${nofile}`];
}

/**
 * Staging script: in this private mount namespace, make every mount of the
 * stage fstab ($2) with one `mount -a` (`-i`: no mount.<type> helper, `-n`:
 * no mtab), then exec the rest of the chain. A mount that fails makes the
 * whole `mount -a` fail, and `set -e` stops the chain there. One process for
 * all of them: a `mount` per entry cost a fork and an exec of util-linux's
 * mount each, the largest part of the jail's start. `unset PWD`: the shell
 * exports it, and bubblewrap must start with an empty environment.
 */
const STAGE_MOUNTS = 'set -e; unset PWD OLDPWD; "$1" -n -a -i -T "$2"; shift 2;';
const STAGE_SCRIPT = `${STAGE_MOUNTS} exec "$@"`;

/**
 * The stager under a deadline supervisor checks first that the supervisor (its parent) is still a
 * child of the caller whose pid is `$1`, with shell builtins only (no extra exec). The supervisor's
 * parent-death signal is set by `setpriv` a moment after the spawn; a caller that died before that
 * left a supervisor no one signals, whose bubblewrap then died of SIGPIPE on its status pipe right
 * after its clone, leaving bubblewrap's child to init (1 of 80 SIGKILLs of a caller 0-120 ms after
 * its spawn). Any later death of the caller comes after the parent-death signal was set, so
 * checking after it, here, leaves no window. The supervisor then exits 125 and nothing is jailed.
 */
const CALLER_CHECK = 'read -r x x x p x < "/proc/$PPID/stat"; [ "$p" = "$1" ] || exit 125;';
const SUPERVISED_STAGE_SCRIPT = `${CALLER_CHECK} shift; ${STAGE_SCRIPT}`;

/**
 * The supervised stager as root: the same check and mounts, then it runs the rest of the chain as
 * its child instead of exec'ing it. Once that has exited, it kills the supervisor's whole process
 * group (`kill -9 0`) if the caller is gone (the supervisor is no longer its child) or exiting
 * (PF_EXITING, 0x4, in the flags of its /proc stat), else exits with the chain's status.
 *
 * Why: a caller that dies closes bubblewrap's status pipe (its files go before the kernel sends
 * the supervisor its parent-death signal). bubblewrap, between the clone of the jail's pid 1 and
 * the release of it, then dies on its status write, and `timeout`, when it saw its only child
 * exit before the signal came, ended with it without signalling its group: the jail's pid 1,
 * blocked on bubblewrap's eventfd, stayed (test/security/jail-start-orphans.test.ts, about 1 CI
 * run in 6). The caller's files close only after its exit has begun, so the check after
 * bubblewrap's death sees it. As root the stager is root: it takes none of the jail uid's
 * process count. Should bubblewrap itself die of a signal while the stager lives (only an OOM
 * kill, or a jail uid's kill(0) where the seccomp rule against it is taken out), the shell
 * reports it on the jail's stderr ("Killed"); comis's own kills end the stager too.
 */
const HOLDING_STAGE_SCRIPT =
  `${CALLER_CHECK} c=$1; shift; ${STAGE_MOUNTS} set +e; "$@"; s=$?; ` +
  'p=; l=; read -r x x x p x < "/proc/$PPID/stat"; [ "$p" = "$c" ] && read -r l < "/proc/$c/stat"; set -- ${l##*) } 0 0 0 0 0 0 0; ' +
  '[ "$p" = "$c" ] && [ -n "$l" ] && [ $(($7 & 4)) -eq 0 ] || kill -9 0; exit $s';

/**
 * The stager's `sh -c` arguments up to its fstab; with a deadline, the caller's pid first (see
 * SUPERVISED_STAGE_SCRIPT), and with `hold` (root) the stager that waits for bubblewrap (see
 * HOLDING_STAGE_SCRIPT).
 */
export function stagerArgs(sh: string, mount: string, fstab: string, supervised: boolean, hold = false): string[] {
  if (!supervised) return [sh, '-c', STAGE_SCRIPT, 'comis-stage', mount, fstab];
  return [sh, '-c', hold ? HOLDING_STAGE_SCRIPT : SUPERVISED_STAGE_SCRIPT, 'comis-stage', String(process.pid), mount, fstab];
}

/**
 * One fstab field: every byte outside a plain path alphabet as libmount's
 * `\ooo` octal escape, so a space, tab, newline, `#` or backslash in a host
 * path can never split a field, start a comment or add an option.
 */
export function fstabField(value: string): string {
  noNul(value, 'fstab field');
  let out = '';
  for (const byte of Buffer.from(value, 'utf8')) {
    const c = String.fromCharCode(byte);
    out += /[A-Za-z0-9/._+,:=@-]/.test(c) ? c : `\\${byte.toString(8).padStart(3, '0')}`;
  }
  return out;
}

/** The stage fstab: each tmpfs (options, mount point), then each bind (source, stage path), in order. */
function stageFstab(tmpfs: readonly string[], binds: readonly string[]): string {
  const lines: string[] = [];
  for (let i = 0; i < tmpfs.length; i += 2) lines.push(`tmpfs ${fstabField(tmpfs[i + 1]!)} tmpfs ${fstabField(tmpfs[i]!)} 0 0`);
  for (let i = 0; i < binds.length; i += 2) lines.push(`${fstabField(binds[i]!)} ${fstabField(binds[i + 1]!)} none bind 0 0`);
  return `${lines.join('\n')}\n`;
}

/** Mount options of a private tmpfs: comis's own integers only, never caller text. */
function tmpfsOptions(limits: JailResourceLimits): string {
  return `nosuid,nodev,mode=1777,size=${limits.tmpSizeMb * MIB},nr_inodes=${limits.tmpInodes ?? DEFAULT_TMP_INODES}`;
}

/**
 * Whether this process may have a controlling terminal, now or later, from its /proc/<pid>/stat:
 * a terminal (tty_nr) or a session it leads (a session leader acquires one by opening a terminal
 * without O_NOCTTY). Unreadable or malformed: yes.
 */
export function mayHaveTerminal(stat?: string): boolean {
  let text = stat;
  if (text === undefined) {
    try {
      text = readFileSync('/proc/self/stat', 'latin1');
    } catch {
      return true;
    }
  }
  const close = text.lastIndexOf(')');
  // pid (comm) state ppid pgrp session tty_nr …: comm may hold spaces and parentheses.
  const f = text.slice(close + 2).split(' ');
  const pid = Number.parseInt(text, 10);
  const session = Number(f[3]);
  const tty = Number(f[4]);
  if (close < 0 || !Number.isInteger(pid) || !Number.isInteger(session) || !Number.isInteger(tty)) return true;
  return tty !== 0 || session === pid;
}

/**
 * Whether the jail stays in the caller's session, i.e. runs without bubblewrap's `--new-session`.
 *
 * `--new-session` (setsid) exists so that a script cannot reach the caller's controlling terminal:
 * open /dev/tty to read the user's keys or write to the screen, TIOCSTI to type commands into the
 * user's shell (CVE-2017-5226), or take job-control signals. It has a price: the scheduler puts
 * every session in an autogroup of its own, and each tool call then wakes comis from another
 * autogroup and back, which under load from other sessions waits far longer (the tool-call p99).
 *
 * Without a controlling terminal there is nothing to reach, and the jail can never get one:
 * a process's terminal (`signal->tty`) is inherited at fork, so ours being none at the spawn means
 * the jail's is none for good; only a session leader acquires one (open without O_NOCTTY, or
 * TIOCSCTTY), the jail is not one, and a caller that is one (it could acquire one mid-run) keeps
 * `--new-session`. A `setsid()` of the script's own only makes a new session without a terminal.
 * TIOCSTI and TIOCLINUX are denied by the seccomp filter in every case.
 *
 * Only under the deadline supervisor: `timeout` makes a process group of its own, and the jail,
 * no longer a group leader, is in it (without a supervisor it would be in OUR group, beside comis
 * and the rest of the user's pipeline). The calls that reach the caller's own group from inside
 * a pid namespace (kill(0, …), PGRP-0 priorities) are denied there (seccomp `sharedSession`), so
 * the supervisor and bubblewrap stay out of the script's reach, as with `--new-session`.
 */
export function sharesSession(req: Pick<JailRequest, 'deadlineMs'>, ctx: Pick<PlanContext, 'terminal'>): boolean {
  return req.deadlineMs !== undefined && !(ctx.terminal ?? mayHaveTerminal());
}

function systemBase(limits: JailResourceLimits, etcFd: (path: string) => number, tmpfs: { tmp: string; shm: string } | undefined, sharedSession: boolean): string[] {
  const a: string[] = [
    '--unshare-all',
    '--unshare-user',
    '--disable-userns',
    '--uid',
    String(JAIL_UID),
    '--gid',
    String(JAIL_UID),
    '--cap-drop',
    'ALL',
    '--die-with-parent',
    ...(sharedSession ? [] : ['--new-session']),
    '--as-pid-1',
    '--hostname',
    JAIL_HOSTNAME,
    '--ro-bind',
    '/usr',
    '/usr',
  ];
  for (const p of USR_SIBLINGS) {
    let st;
    try {
      st = lstatSync(p);
    } catch {
      continue;
    }
    if (st.isSymbolicLink()) a.push('--symlink', noNul(readlinkSync(p), p), p);
    else if (st.isDirectory()) a.push('--ro-bind', p, p); // a host without merged /usr
  }
  const tmp = String(limits.tmpSizeMb * MIB);
  a.push('--proc', '/proc', '--dev', '/dev');
  if (tmpfs) a.push('--bind', noNul(tmpfs.tmp, 'tmpfs stage'), '/tmp', '--bind', noNul(tmpfs.shm, 'tmpfs stage'), '/dev/shm');
  else a.push('--perms', '1777', '--size', tmp, '--tmpfs', '/tmp', '--perms', '1777', '--size', tmp, '--tmpfs', '/dev/shm');
  for (const path of Object.keys(JAIL_ETC)) a.push('--perms', '0444', '--ro-bind-data', String(etcFd(path)), path);
  return a;
}

/** How this plan bounds the tmpfs inodes, if it can (see {@link JailTools.tmpfsMount}). */
export function tmpfsMountMode(ctx: Pick<PlanContext, 'tools' | 'root'>): 'stage' | 'userns' | undefined {
  const mode = ctx.tools.tmpfsMount;
  if (mode === 'stage') return ctx.root ? 'stage' : undefined;
  if (mode === 'userns') return ctx.root ? undefined : 'userns';
  return undefined;
}

/** Test only: drops the named options (with the value `--cap-drop` takes). */
function weaken(opts: string[], omit: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < opts.length; i++) {
    if (!omit.includes(opts[i]!)) out.push(opts[i]!);
    else if (opts[i] === '--cap-drop') i++;
  }
  return out;
}

/**
 * Builds the plan. Pure apart from reading the host's top-level symlinks
 * (/bin, /lib…), so tests can assert the exact shape without running it.
 * `mounts` must come from {@link resolveMounts}.
 */
export function buildJailPlan(req: JailRequest, mounts: readonly ResolvedMount[], ctx: PlanContext): JailPlan {
  checkRequest(req);
  const dataFds: Buffer[] = [];
  const constantData: number[] = [];
  const addFd = (data: Buffer | string, constant = false): number => {
    if (constant) constantData.push(dataFds.length);
    dataFds.push(Buffer.isBuffer(data) ? data : Buffer.from(data, 'utf8'));
    return FIRST_DATA_FD + dataFds.length - 1;
  };
  const argsFd = addFd(Buffer.alloc(0)); // filled last; the caller's env: never constant
  const sharedSession = sharesSession(req, ctx);
  const seccompFd = addFd(buildSeccompFilter(ctx.arch, { omit: req.testOnlyWeaken?.seccomp ?? [], sharedSession }), true);

  const stage: JailPlan['stage'] = [];
  const stageBinds: string[] = [];
  // The inode-bounded tmpfs pair, mounted by the stager onto stage entries 0 and 1.
  const tmpfsMode = req.testOnlyWeaken?.tmpInodes ? undefined : tmpfsMountMode(ctx);
  const stageTmpfs: string[] = [];
  let tmpfsPaths: { tmp: string; shm: string } | undefined;
  if (tmpfsMode) {
    if (!ctx.stageDir) throw new Error('buildJailPlan: a bounded tmpfs needs ctx.stageDir');
    tmpfsPaths = { tmp: posix.join(ctx.stageDir, '0'), shm: posix.join(ctx.stageDir, '1') };
    for (const path of [tmpfsPaths.tmp, tmpfsPaths.shm]) {
      stage.push({ path, isDir: true });
      stageTmpfs.push(tmpfsOptions(req.limits), path);
    }
  }
  const b = weaken(
    systemBase(req.limits, (path) => addFd(JAIL_ETC[path]!, true), tmpfsPaths, sharedSession),
    req.testOnlyWeaken?.bwrap ?? [],
  );

  for (const m of orderMounts(mounts)) {
    let source = m.realSource;
    if (m.staged) {
      if (!ctx.stageDir) throw new Error('buildJailPlan: a staged mount needs ctx.stageDir');
      source = posix.join(ctx.stageDir, String(stage.length));
      stage.push({ path: source, isDir: m.isDir });
      stageBinds.push(m.realSource, source);
    }
    b.push(m.kind === 'rw' ? '--bind' : '--ro-bind', noNul(source, 'Mount source'), m.target);
  }
  // Remount last: mount points (/run/…, /etc/…) are created in the root tmpfs first. /proc is
  // read-only too: its writable files act on the process's own scheduling and accounting, and one
  // of them reaches beyond the jail: /proc/self/autogroup sets the nice value of the scheduler
  // autogroup, one per session, which a jail that shares comis's session (see sharesSession)
  // shares with comis and every other process of that session. Files opened through
  // /proc/self/fd/N are on their own mounts and stay as writable as they are.
  b.push('--remount-ro', '/dev');
  if (req.testOnlyWeaken?.procWritable !== true) b.push('--remount-ro', '/proc');
  b.push('--remount-ro', '/', '--chdir', req.cwd, '--clearenv');
  for (const [k, v] of Object.entries(req.env)) b.push('--setenv', k, v);
  b.push('--seccomp', String(seccompFd));
  const statusFd = FIRST_DATA_FD + dataFds.length;
  b.push('--json-status-fd', String(statusFd));
  // One --block-fd serves both gates: bubblewrap reads a single byte, which the spawner writes once every gate is open.
  const gateFd = ctx.root && req.gated !== true ? undefined : statusFd + 1;
  const nprocGate = ctx.root ? undefined : { fd: statusFd + 1, nproc: req.limits.maxProcesses };
  if (gateFd !== undefined) b.push('--block-fd', String(gateFd));
  dataFds[argsFd - FIRST_DATA_FD] = Buffer.from(b.map((x) => `${noNul(x, 'bwrap option')}\0`).join(''), 'utf8');

  let chain: string[] = [ctx.tools.bwrap, '--args', String(argsFd), '--', ...req.command];
  // The stager's one fstab, the last stage entry (never a mount point itself).
  const fstab = (): string => {
    const path = posix.join(ctx.stageDir!, 'fstab');
    stage.push({ path, isDir: false, content: stageFstab(stageTmpfs, stageBinds) });
    return path;
  };
  if (ctx.root) {
    if (!ctx.tools.setpriv) throw new Error('buildJailPlan: root needs setpriv');
    if (!Number.isInteger(ctx.hostUid) || ctx.hostUid < 1 || ctx.hostUid > 0xffff_fffe) throw invalid(`Jail host uid ${ctx.hostUid} is not a valid unprivileged uid.`);
    const u = String(ctx.hostUid);
    chain = [ctx.tools.setpriv, `--reuid=${u}`, `--regid=${u}`, '--clear-groups', '--inh-caps=-all', '--bounding-set=-all', '--no-new-privs', ...chain];
    if (stage.length > 0) {
      const { unshare, mount, sh } = ctx.tools;
      if (!unshare || !mount || !sh) throw new Error('buildJailPlan: staging needs unshare, mount and sh');
      chain = [unshare, '--mount', '--propagation', 'private', '--', ...stagerArgs(sh, mount, fstab(), req.deadlineMs !== undefined, true), ...chain];
    }
  } else if (tmpfsMode === 'userns') {
    // A user namespace of our own, where we are root over nothing but it:
    // enough to mount a tmpfs with nr_inodes. bubblewrap must not start as
    // that root (it would keep capabilities unless told to drop them), so a
    // second, nested user namespace maps our uid back to a plain uid without
    // capabilities, and bubblewrap runs exactly as it would unprivileged; the
    // jail's host uid is still ours, and the mounts stay visible (same mount
    // namespace).
    const { unshare, mount, sh } = ctx.tools;
    if (!unshare || !mount || !sh) throw new Error('buildJailPlan: a bounded tmpfs needs unshare, mount and sh');
    const u = String(ctx.hostUid);
    chain = [unshare, '--user', `--map-user=${u}`, `--map-group=${u}`, '--', ...chain];
    chain = [unshare, '--user', '--map-root-user', '--mount', '--propagation', 'private', '--', ...stagerArgs(sh, mount, fstab(), req.deadlineMs !== undefined), ...chain];
  }
  if (req.deadlineMs !== undefined) {
    // Outermost after the rlimits, before any uid change: a credential change
    // would clear the parent-death signal, and as root the supervisor stays
    // root, out of reach of the jail uid. Without --foreground `timeout` kills
    // its whole process group (the stager too) and then itself with SIGKILL,
    // which is how the caller tells its deadline from any exit code a script
    // can choose.
    const { setpriv, timeout } = ctx.tools;
    if (!setpriv || !timeout) throw new Error('buildJailPlan: a deadline needs setpriv and timeout');
    chain = [...supervisorArgs(setpriv, timeout, req.deadlineMs), ...chain];
  }
  // Not root, the supervisor is one more task of our uid beside bubblewrap (see rlimitArgs).
  const outer = req.deadlineMs === undefined || ctx.root ? ctx : { ...ctx, tasksOfUid: (ctx.tasksOfUid ?? 0) + 1 };
  return { file: ctx.tools.prlimit, args: [...rlimitArgs(req.limits, outer), '--', ...chain], dataFds, constantData, statusFd, stage, ...(nprocGate ? { nprocGate } : {}), ...(gateFd === undefined ? {} : { gateFd }) };
}

/**
 * The deadline supervisor's command line, up to the command it supervises. When the caller dies
 * (even SIGKILL) the supervisor gets SIGALRM, the very signal its own deadline timer raises: coreutils
 * `timeout` then does what it does at the deadline, one SIGKILL to its whole process group (itself
 * included), at once and atomically with respect to forks. Not SIGTERM: the group signal would then be
 * SIGTERM too, and bubblewrap's child, cloned into a new pid namespace whose init it is, ignores every
 * signal it has no handler for except SIGKILL; bubblewrap itself dies of the SIGTERM, `timeout` sees
 * its monitored child gone and exits without its --kill-after SIGKILL, and the child, which waits on
 * an eventfd for bubblewrap to map its uids before it sets a parent-death signal of its own, was left
 * blocked forever as an orphan of pid 1. Not a SIGKILLed supervisor either: it could pass nothing on.
 * Until that child execs it is still in the supervisor's process group (bubblewrap's --new-session
 * comes later; without it, see {@link sharesSession}, it stays there), which is what the group SIGKILL reaches.
 */
export function supervisorArgs(setpriv: string, timeout: string, deadlineMs: number): string[] {
  return [setpriv, '--pdeathsig', 'ALRM', '--', timeout, '--signal=KILL', '--kill-after=1', '--', deadlineSeconds(deadlineMs)];
}

/** Splits the --args payload of a plan back into options (for tests and diagnostics). */
export function planOptions(plan: JailPlan): string[] {
  const argsFd = Number(plan.args[plan.args.indexOf('--args') + 1]);
  const raw = plan.dataFds[argsFd - FIRST_DATA_FD]!.toString('utf8');
  return raw.split('\0').slice(0, -1);
}
