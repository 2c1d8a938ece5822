import { mkdirSync, readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';

import { buildSync } from 'esbuild';
import { expect } from 'vitest';

import { ComisError } from '../../src/lib/errors.js';
import { findHelper, isRoot, readProcStat } from '../../src/lib/jail/host.js';
import { DEFAULT_JAIL_LIMITS, prepareWritableDir, resolveInterpreter, spawnJail } from '../../src/lib/jail/spawn.js';
import type { JailMount, JailRequest, JailResourceLimits, JailedProcess } from '../../src/lib/jail/types.js';
import { repoRoot } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp.js';

export const WS = '/workspace';

/** Runs `fn`, which must throw a ComisError INPUT_INVALID; returns it for further checks. */
export function expectInputInvalid(fn: () => unknown): ComisError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ComisError);
    expect((err as ComisError).code).toBe('INPUT_INVALID');
    return err as ComisError;
  }
  throw new Error('expected INPUT_INVALID');
}
export const limits: JailResourceLimits = { ...DEFAULT_JAIL_LIMITS };

let uidCounter = 0;

/**
 * A jail uid no other test uses at the same time: tests assert "no process of
 * the jail uid remains", which a hash collision between two concurrently
 * running jails would break. Range per worker process, a counter within it.
 */
export function uniqueJailUid(): number {
  uidCounter = (uidCounter + 1) % 100;
  return 300_000 + (process.pid % 2000) * 100 + uidCounter;
}

/** A fresh workspace dir, writable by the jail uid it will run as. */
export function workspace(): { path: string; hostUid: number } {
  const path = join(tempDir('comis-jail-ws-'), 'ws');
  mkdirSync(path);
  const hostUid = isRoot() ? uniqueJailUid() : process.getuid!();
  prepareWritableDir(path, hostUid);
  return { path, hostUid };
}

export function python(): { cmd: (code: string) => string[]; mounts: JailMount[] } {
  const py = resolveInterpreter('python3');
  return { cmd: (code) => [py.jailPath, '-I', '-c', code], mounts: py.mounts };
}

export function node(): { cmd: (code: string) => string[]; mounts: JailMount[] } {
  const n = resolveInterpreter('node');
  return { cmd: (code) => [n.jailPath, ...n.args, '-e', code], mounts: n.mounts };
}

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  killedBy?: 'kill' | 'quota' | 'deadline';
  started: boolean;
  stdout: string;
  stderr: string;
  pid: number;
  hostUid: number;
  workspace: string;
}

export interface RunOptions extends Partial<Omit<JailRequest, 'command'>> {
  command: string[];
  /** Called once with the live process (e.g. to kill it, or to inspect /proc on the host). */
  during?: (p: JailedProcess, out: { stdout: () => string }) => void | Promise<void>;
  ws?: { path: string; hostUid: number };
}

/** Runs one command in a jail with a fresh workspace at /workspace and collects its output. */
export async function runInJail(opts: RunOptions): Promise<RunResult> {
  const ws = opts.ws ?? workspace();
  const req: JailRequest = {
    command: opts.command,
    mounts: [...(opts.mounts ?? []), { kind: 'rw', source: ws.path, target: WS }],
    cwd: opts.cwd ?? WS,
    env: opts.env ?? { PATH: '/usr/bin:/bin', HOME: '/tmp', LANG: 'C.UTF-8' },
    limits: opts.limits ?? limits,
    hostUid: ws.hostUid,
    ...(opts.stdin ? { stdin: opts.stdin } : {}),
    ...(opts.writableQuota ? { writableQuota: opts.writableQuota } : {}),
    ...(opts.testOnlyWeaken ? { testOnlyWeaken: opts.testOnlyWeaken } : {}),
    ...(opts.deadlineMs !== undefined ? { deadlineMs: opts.deadlineMs } : {}),
  };
  const p = spawnJail(req);
  let stdout = '';
  let stderr = '';
  p.stdout.on('data', (d: Buffer) => (stdout += d.toString('utf8')));
  p.stderr.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
  if (opts.during) await opts.during(p, { stdout: () => stdout });
  const exit = await p.exited;
  return { ...exit, stdout, stderr, pid: p.pid, hostUid: ws.hostUid, workspace: ws.path };
}

/** Resolves once `predicate()` holds, polling; rejects after `ms` (a liveness bound, not a timing assertion). */
export async function until(predicate: () => boolean, ms = 20_000, what = 'condition'): Promise<void> {
  const end = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Host pids whose real uid is `uid`, zombies excluded (dead, waiting for the host's init to reap them). */
export function pidsOfUid(uid: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid)) continue;
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      const m = /^Uid:\s+(\d+)/m.exec(status);
      if (m && Number(m[1]) === uid && !/^State:\s+Z/m.test(status)) out.push(pid);
    } catch {
      /* gone */
    }
  }
  return out;
}

/** A unique `sleep` duration: a marker a test can find on the host's process list. */
export const sleepMarker = (): string => `1000.${process.pid}${Math.floor(Math.random() * 1e6)}`;

/**
 * Live pids (this process and zombies aside) with an fd into `dir`: a jail's data files in
 * TMPDIR have no other name, so this finds a jail (or an orphan of one) a test's TMPDIR fed.
 */
export function pidsHoldingFdsIn(dir: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid === process.pid || readProcStat(pid)?.state === 'Z') continue;
    try {
      if (readdirSync(`/proc/${pid}/fd`).some((fd) => readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith(`${dir}/`))) out.push(pid);
    } catch {
      /* gone, or not ours to read */
    }
  }
  return out;
}

/** Host pids whose command line contains `needle` (zombies have none). */
export function pidsWithCmdline(needle: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(needle)) out.push(pid);
    } catch {
      /* gone */
    }
  }
  return out;
}

export const root = isRoot();

/** The jail API bundled into one plain .mjs (for a separate node process to import). */
export function bundleJail(dir: string): string {
  const out = join(dir, 'jail.mjs');
  buildSync({ entryPoints: [join(repoRoot, 'src/lib/jail/spawn.ts')], bundle: true, platform: 'node', format: 'esm', target: 'node20', outfile: out, logLevel: 'error' });
  return out;
}

/**
 * A bare bubblewrap command line for positive controls: the jail's namespaces, uid and dropped
 * capabilities, with neither comis's seccomp filter nor its mounts; `script` bound at `/probe.py`
 * and run by `/usr/bin/python3 -I` with `args`. As root it first drops to `uid` as the jail does
 * (not root, bubblewrap already runs as our own uid).
 */
export function bareBwrapPython(script: string, uid: number, args: readonly string[] = [], opts: { newSession?: boolean } = {}): string[] {
  const drop = root ? [findHelper('setpriv')!, `--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', '--inh-caps=-all', '--bounding-set=-all', '--no-new-privs'] : [];
  return [
    ...drop,
    findHelper('bwrap') ?? 'bwrap',
    '--unshare-all',
    '--unshare-user',
    '--uid',
    '1000',
    '--gid',
    '1000',
    '--cap-drop',
    'ALL',
    '--die-with-parent',
    ...(opts.newSession === false ? [] : ['--new-session']),
    '--ro-bind',
    '/usr',
    '/usr',
    '--symlink',
    'usr/lib',
    '/lib',
    '--symlink',
    'usr/lib64',
    '/lib64',
    '--symlink',
    'usr/bin',
    '/bin',
    '--proc',
    '/proc',
    '--dev',
    '/dev',
    '--ro-bind',
    script,
    '/probe.py',
    '/usr/bin/python3',
    '-I',
    '/probe.py',
    ...args,
  ];
}
