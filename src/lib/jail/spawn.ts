/**
 * The jail API: start one program in a hardened bubblewrap jail and hold it
 * on a short leash. The orchestrate runner composes it with the socket and
 * the tools; this module knows nothing of either.
 *
 * What every jail is (see plan.ts for the exact invocation): all namespaces
 * unshared (no network but its own loopback), no further user namespaces,
 * no capabilities, no_new_privs, a seccomp denylist, its own session, the
 * program as pid 1 of its own pid namespace, an unprivileged uid (1000
 * inside; as root, a dedicated host uid), read-only /usr, a synthetic /etc,
 * size-bounded private /tmp and /dev/shm, read-only / and /dev, rlimits on
 * processes, address space, file size, core dumps and open files, and an
 * empty environment apart from what the caller passes.
 */
import { spawn } from 'node:child_process';
import { closeSync } from 'node:fs';
import type { Readable, Writable } from 'node:stream';

import { ComisError } from '../errors.js';
import { childPids, isNamespaceInit, processGone, readProcStat } from './host.js';
import { openConstantData, prepareLaunch, withInheritedFdsCovered } from './launch.js';
import type { JailTools } from './plan.js';
import { detectSandboxProvider, workingJail } from './provider.js';
import { watchQuota } from './quota.js';
import type { SeccompArch } from './seccomp.js';
import type { JailExit, JailRequest, JailedProcess } from './types.js';

export { detectSandboxProvider, DEFAULT_JAIL_LIMITS } from './provider.js';
export { resolveInterpreter } from './interpreters.js';
export { prepareWritableDir } from './mounts.js';
/** @public resultref's DuckDB spawner takes this whole module as its QueryJailApi (spawn-query-process.ts). */
export { deriveJailUid } from './host.js';
export type * from './types.js';

const GONE_POLL_MS = 10;
const DRAIN_WAIT_MS = 2_000;
/** How long bubblewrap gets to reap a killed jail and exit before it is killed too. */
const BWRAP_GRACE_MS = 1_000;

const delay = (ms: number): Promise<void> => new Promise((resolveDelay) => setTimeout(resolveDelay, ms));

/** `p`, or nothing after `ms`; the timer is cleared either way so it never holds the process open. */
async function within(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([p, new Promise<void>((resolveTimer) => (timer = setTimeout(resolveTimer, ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** Resolves when a stream a caller is reading has delivered everything; at once when nobody reads it. */
function drained(stream: Readable | null): Promise<void> {
  if (!stream || stream.readableEnded || stream.destroyed || stream.readableFlowing !== true) return Promise.resolve();
  return within(
    new Promise<void>((resolveDrain) => {
      stream.once('end', resolveDrain);
      stream.once('close', resolveDrain);
      stream.once('error', () => resolveDrain());
    }),
    DRAIN_WAIT_MS,
  );
}

/** A process identity that survives pid reuse. */
interface ProcessId {
  pid: number;
  startTime: string;
}

/** Gone, or a zombie (see {@link processGone}). */
function isGone(p: ProcessId): boolean {
  return processGone(p.pid, p.startTime);
}

/** Children, grandchildren… of `pid`, up to `depth` levels (breadth first). */
function descendantPids(pid: number, depth: number): number[] {
  const out: number[] = [];
  let level = [pid];
  for (let d = 0; d < depth && level.length > 0; d++) {
    level = level.flatMap((p) => childPids(p));
    out.push(...level);
  }
  return out;
}

function killProcess(p: ProcessId | undefined): void {
  if (!p || isGone(p)) return;
  try {
    process.kill(p.pid, 'SIGKILL');
  } catch {
    /* already gone */
  }
}

/**
 * Starts `req.command` in a new jail.
 *
 * Contract: throws ComisError SANDBOX_UNAVAILABLE when this machine has no
 * working provider, INPUT_INVALID for a malformed request (bad paths, NUL in
 * a value, a mount over the system base, a missing or wrong-type mount
 * source). Otherwise returns at once; `exited` settles (never rejects) only
 * once bubblewrap AND every process of the jail are gone, including
 * setsid'd and double-forked ones (they live in the jail's pid namespace,
 * which dies with its pid 1). `kill()` SIGKILLs the jail's pid 1 (bubblewrap
 * then reaps it and exits with code 137) or, before the jail exists,
 * bubblewrap itself. With `req.deadlineMs` a supervisor outside comis's
 * event loop SIGKILLs the jail at the deadline (`killedBy: 'deadline'`);
 * the caller keeps its own timer as the second line (call kill()).
 * `started` comes from bubblewrap's status pipe, never from the jail's output.
 *
 * Security properties: `req.env` reaches bubblewrap only through a pipe, so
 * no host command line or host environ shows it; if the comis process dies
 * (even SIGKILL), the jail goes down with it: with `req.deadlineMs`, at any
 * moment (the supervisor SIGKILLs its whole process group); without one only
 * once bubblewrap has set its parent-death signal, after it cloned the jail's
 * pid 1 — a comis killed before that leaves that child blocked for good
 * (test/security/jail-start-orphans.test.ts), so every production caller
 * passes a deadline. The jail can reach no host socket except those the
 * caller binds.
 *
 * As root: rw mount sources must be writable by the jail's host uid
 * ({@link prepareWritableDir}). The process spawned (bubblewrap, or the
 * supervisor) must stay a child of the thread that called this (Node's main
 * thread), since parent-death signals follow the parent thread.
 */
export function spawnJail(req: JailRequest): JailedProcess {
  const provider = detectSandboxProvider();
  const jail = workingJail();
  if (provider.provider !== 'bwrap' || provider.problem || !jail) {
    throw new ComisError('SANDBOX_UNAVAILABLE', provider.problem?.message ?? `No working sandbox provider on ${process.platform}.`, {
      hint: provider.problem?.hint ?? 'Install bubblewrap (apt-get install bubblewrap) and run `comis jail probe`.',
      details: { provider: provider.provider, ...(provider.problem ? { problem: provider.problem.code } : {}) },
    });
  }
  return startJail(req, jail.tools, jail.arch);
}

/**
 * {@link spawnJail} with explicitly given tools (from a detection the caller
 * already made, e.g. `comis jail probe`'s uncached one). Not for general use:
 * it skips the provider check.
 */
export function startJail(req: JailRequest, tools: JailTools, arch: SeccompArch): JailedProcess {
  const launch = prepareLaunch(req, tools, arch);
  const { plan } = launch;
  const stdinMode = req.stdin === undefined || req.stdin === 'ignore' ? 'ignore' : 'pipe';
  // The constants (seccomp filter, /etc) from a shared read-only file each; the rest through pipes.
  const constantFds = plan.dataFds.map((data, i) => (plan.constantData.includes(i) ? openConstantData(data) : undefined));
  const io = withInheritedFdsCovered<'ignore' | 'pipe' | number>([
    stdinMode,
    'pipe',
    'pipe',
    ...constantFds.map((fd) => fd ?? ('pipe' as const)),
    'pipe', // status
    ...(plan.gateFd === undefined ? [] : ['pipe' as const]),
  ]);
  let child;
  try {
    // An EMPTY environment: nothing of ours shows in bubblewrap's /proc/<pid>/environ.
    child = spawn(plan.file, plan.args, { env: {}, cwd: '/', stdio: io.stdio });
  } catch (err) {
    launch.cleanup();
    throw err;
  } finally {
    io.close();
    // The child has its own copies now (or never will).
    for (const fd of constantFds) if (fd !== undefined) closeSync(fd);
  }
  const stdio = child.stdio as unknown as (Readable | Writable | null)[];
  plan.dataFds.forEach((data, i) => {
    if (constantFds[i] !== undefined) return;
    const stream = stdio[3 + i] as Writable;
    stream.on('error', () => undefined); // bubblewrap may exit before reading
    stream.end(data);
  });
  if (stdinMode === 'pipe' && child.stdin) {
    child.stdin.on('error', () => undefined);
    child.stdin.end(req.stdin as Buffer);
  }

  let jailPid: ProcessId | undefined;
  // bubblewrap's pid, or the supervisor's when there is a deadline (bubblewrap is then its child).
  const topPid = child.pid ?? -1;
  const learnJailPid = (pid: number): void => {
    if (jailPid || !Number.isInteger(pid) || pid <= 0) return;
    const st = readProcStat(pid);
    // Candidates come only from bubblewrap's own status pipe or from its
    // children; the jail is the one that is pid 1 of a new pid namespace
    // (not, e.g., a `mount` the stager runs).
    if (st && isNamespaceInit(pid)) {
      jailPid = { pid, startTime: st.startTime };
      openNprocGate(pid);
    }
  };
  // The jail waits on this pipe before its exec: not root, until its RLIMIT_NPROC is lowered; gated,
  // until the caller releases it. One byte, written once both are done, opens it; bubblewrap would
  // also go on at EOF, so the pipe is never closed empty while the jail waits (kill() ends it instead).
  const gate = plan.gateFd === undefined ? undefined : (stdio[plan.gateFd] as Writable);
  gate?.on('error', () => undefined);
  let nprocLowered = !plan.nprocGate;
  let released = req.gated !== true;
  let gateOpened = false;
  const openGate = (): void => {
    if (!gate || gateOpened || done || killedBy || !nprocLowered || !released) return;
    gateOpened = true;
    gate.write('1');
  };
  let gateOpening = false;
  function openNprocGate(pid: number): void {
    if (!gate || !plan.nprocGate || gateOpening) return;
    gateOpening = true;
    const n = plan.nprocGate.nproc;
    const setter = spawn(tools.prlimit, ['--pid', String(pid), `--nproc=${n}:${n}`], { env: {}, cwd: '/', stdio: 'ignore' });
    setter.on('error', () => kill());
    setter.on('exit', (code) => {
      if (code === 0 && !done && jailPid && !isGone(jailPid)) {
        nprocLowered = true;
        openGate();
      } else kill();
    });
  }
  const status = stdio[plan.statusFd] as Readable;
  let statusText = '';
  // bubblewrap writes `exit-code` only when its close-on-exec setup pipe says
  // the command was exec'd; the jail never holds this pipe (bubblewrap closes
  // it in the child), so nothing the script prints or exits with can fake it.
  let started = false;
  const readStatus = (): void => {
    // Only a complete number (followed by , or }): a pipe chunk may end mid-number.
    const m = /"child-pid"\s*:\s*(\d+)\s*[,}]/.exec(statusText);
    if (m) learnJailPid(Number(m[1]));
    if (/"exit-code"\s*:\s*-?\d+\s*[,}]/.test(statusText)) started = true;
  };
  const statusEnded = new Promise<void>((resolveEnd) => {
    status.on('data', (chunk: Buffer) => {
      if (statusText.length > 64 * 1024) return;
      statusText += chunk.toString('utf8');
      readStatus();
    });
    status.on('end', resolveEnd);
    status.on('close', resolveEnd);
    status.on('error', () => resolveEnd());
  });

  let killedBy: JailExit['killedBy'];
  let done = false;
  let bwrapKillTimer: NodeJS.Timeout | undefined;
  const killBwrap = (): void => {
    // The supervisor leads its own process group (bubblewrap before its
    // setsid'd child, the stager): end them all, not just the supervisor. The
    // group exists only once `timeout` ran setpgid, so this never reaches ours.
    if (req.deadlineMs !== undefined && topPid > 0) {
      try {
        process.kill(-topPid, 'SIGKILL');
      } catch {
        /* no such group yet, or gone */
      }
    }
    try {
      child.kill('SIGKILL');
    } catch {
      /* already gone */
    }
  };
  const kill = (reason: 'kill' | 'quota' = 'kill'): void => {
    if (done) return;
    killedBy ??= reason;
    // pid 1 first: the kernel then kills its whole pid namespace, and
    // bubblewrap reaps it and exits (no orphaned zombie). If bubblewrap has
    // not reported it yet, bubblewrap's only child is the jail.
    if (!jailPid && topPid > 0) for (const c of descendantPids(topPid, 3)) learnJailPid(c);
    if (jailPid && !isGone(jailPid)) {
      killProcess(jailPid);
      bwrapKillTimer ??= setTimeout(killBwrap, BWRAP_GRACE_MS);
    } else {
      // No jail yet (still staging or starting): end bubblewrap itself; a
      // child it is creating dies with it (--die-with-parent).
      killBwrap();
    }
  };

  const quota = req.writableQuota ? watchQuota(req.writableQuota, () => kill('quota')) : undefined;

  const bwrapExit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolveExit) => {
    child.on('exit', (code, signal) => resolveExit({ code, signal }));
    child.on('error', () => resolveExit({ code: 127, signal: null }));
  });
  const exited = (async (): Promise<JailExit> => {
    const { code, signal } = await bwrapExit;
    clearTimeout(bwrapKillTimer);
    // The supervisor ends itself with SIGKILL at the deadline. No script
    // reaches that: bubblewrap turns the jail's own death by a signal into an
    // exit code, and nothing in the jail can see bubblewrap or the supervisor.
    if (!killedBy && req.deadlineMs !== undefined && signal === 'SIGKILL') killedBy = 'deadline';
    // bubblewrap writes the child pid first thing; give the pipe a moment to deliver it.
    await within(statusEnded, 2_000);
    readStatus();
    quota?.stop();
    // bubblewrap waits for its child, so normally the jail is already gone. If
    // bubblewrap was killed, --die-with-parent and our SIGKILL end the jail;
    // either way, report only once pid 1 of the jail (and so its whole pid
    // namespace) is gone.
    while (jailPid && !isGone(jailPid)) {
      killProcess(jailPid);
      await delay(GONE_POLL_MS);
    }
    // The jail is gone, so its pipes are at EOF: let a reading caller get the tail.
    await Promise.all([drained(child.stdout), drained(child.stderr)]);
    if (quota && !killedBy) {
      try {
        if (await quota.check()) killedBy = 'quota';
      } catch {
        /* measuring failed: nothing to add */
      }
    }
    done = true;
    gate?.destroy();
    await launch.cleanupAsync();
    const out: JailExit = { code, signal, started };
    if (killedBy) out.killedBy = killedBy;
    return out;
  })();

  return {
    pid: topPid,
    stdout: child.stdout!,
    stderr: child.stderr!,
    exited,
    kill: () => kill('kill'),
    release: () => {
      released = true;
      openGate();
    },
  };
}
