/**
 * Data types of the jail: what a caller asks for ({@link JailRequest}), what
 * it gets back ({@link JailedProcess}), and what the provider detection and
 * interpreter resolution report. No behaviour lives here.
 */
import type { JailLimits } from '../config/schema.js';
import type { SeccompRule } from './seccomp.js';

/**
 * One bind mount besides the system base every jail gets.
 * - `ro`: read-only bind of a directory or file.
 * - `rw`: read-write bind; the host path must be writable by the jail's host
 *   uid (see `prepareWritableDir`).
 * - `socket`: read-only bind of ONE unix socket file. connect() still works on
 *   a read-only bind, while chmod/unlink/replace of the socket do not.
 * `source` is a host path (resolved to its real path before binding);
 * `target` an absolute normalized path inside the jail.
 */
export interface JailMount {
  kind: 'ro' | 'rw' | 'socket';
  source: string;
  target: string;
}

/** The limits a jail enforces itself (the wall-clock timeout and stdout cap are the caller's job). */
export type JailResourceLimits = Pick<JailLimits, 'memoryMb' | 'maxProcesses' | 'fileSizeMb' | 'tmpSizeMb'> & {
  /** Most inodes (files, dirs, links) in each of /tmp and /dev/shm; default {@link DEFAULT_TMP_INODES}. */
  tmpInodes?: number;
};

/** Inodes of each private tmpfs when the caller names none (autonomy.limits.tmpInodes has the same default). */
export const DEFAULT_TMP_INODES = 16_384;

/** What to run in a jail and with what: the input of `spawnJail`. */
export interface JailRequest {
  /** argv inside the jail; command[0] is an absolute path inside the jail. Visible in `ps`: never put secrets here. */
  command: string[];
  /** Mounts besides the system base. Nested targets may come in any order; they are applied parent first. */
  mounts: JailMount[];
  /** Working directory inside the jail. */
  cwd: string;
  /**
   * The COMPLETE environment of the jailed program, decided by the caller (it
   * may hold the lease bearer). Passed to bubblewrap through a pipe, never on
   * a command line; nothing of comis's own environment is added.
   */
  env: Record<string, string>;
  limits: JailResourceLimits;
  /**
   * Unprivileged host uid (and gid) the jail runs as when comis runs as root.
   * Default: {@link deriveJailUid} of the first rw mount's source. Ignored
   * when comis is not root (the jail then runs as comis's own uid).
   */
  hostUid?: number;
  /**
   * Bound the disk use of a rw area: a watchdog kills the run when its
   * allocated bytes pass `maxBytes` or its entries pass `maxEntries`
   * (default `MAX_ENTRIES` of quota.ts), or when part of it cannot be measured.
   */
  writableQuota?: { hostPath: string; maxBytes: number; maxEntries?: number };
  /** Default 'ignore' (stdin is /dev/null). A Buffer is written to stdin and then closed. */
  stdin?: 'ignore' | Buffer;
  /**
   * TEST ONLY: build the jail with exactly these protections missing, for the
   * positive control of an attack test (the attack must succeed where the
   * protection is absent). The builder refuses it outside the test runner.
   */
  testOnlyWeaken?: JailWeakening;
  /**
   * Wall-clock deadline enforced OUTSIDE comis's event loop: the jail is
   * started under a supervisor (coreutils `timeout -s KILL`) that SIGKILLs it
   * this many ms after the start, whatever comis is doing; the exit then
   * says `killedBy: 'deadline'`. The caller's own timer stays the second line.
   * The supervisor is also what ends a jail whose comis dies while it starts
   * (see spawnJail): every production caller passes one.
   */
  deadlineMs?: number;
  /**
   * The jail is set up (namespaces, mounts, uid) and then waits, just before
   * it execs the command, until the caller calls {@link JailedProcess.release}
   * (or kills it). Lets the caller finish work the command must not start
   * before (the store confirming the host uid) while bubblewrap builds the jail.
   */
  gated?: boolean;
}

/** What a positive-control jail leaves out (see {@link JailRequest.testOnlyWeaken}). */
export interface JailWeakening {
  /** Seccomp rules to leave out. */
  seccomp?: readonly SeccompRule[];
  /** bubblewrap options to leave out. */
  bwrap?: readonly ('--disable-userns' | '--cap-drop')[];
  /** Mount /tmp and /dev/shm with bubblewrap's own --tmpfs (bounded in bytes, not inodes). */
  tmpInodes?: boolean;
  /** Leave the jail's /proc writable (no `--remount-ro /proc`). */
  procWritable?: boolean;
}

/** How a jailed run ended; `exited` resolves with it once the whole jail is gone. */
export interface JailExit {
  /** Exit code of bubblewrap, which is the script's (128+n when the script died of signal n; 137 after kill()). */
  code: number | null;
  /** Set when bubblewrap itself died of a signal (e.g. kill() before the jail existed). */
  signal: NodeJS.Signals | null;
  /**
   * Set when comis ended or condemned the run: `kill()` was called, or the
   * writable area passed its quota (the watchdog killed the run, or the
   * run ended over the quota before the next poll).
   */
  killedBy?: 'kill' | 'quota' | 'deadline';
  /**
   * Whether bubblewrap reported that it exec'd the command: its `exit-code`
   * status record, which it writes only when the exec succeeded (a pipe it
   * opens close-on-exec tells it). Written on a channel the jailed program
   * cannot reach, so a script cannot fake it; false when bubblewrap or its
   * setup failed, the command could not be exec'd, or bubblewrap itself was
   * killed before it could report (kill() before the jail existed, the
   * deadline supervisor).
   */
  started: boolean;
}

/** A running jail: its output, its end, and the way to end it. */
export interface JailedProcess {
  /** Pid of the outer process: bubblewrap (prlimit, setpriv and the stager exec in place), or with a deadline the supervisor, bubblewrap's parent. */
  readonly pid: number;
  readonly stdout: NodeJS.ReadableStream;
  readonly stderr: NodeJS.ReadableStream;
  /** Settles when bubblewrap and EVERY process of the jail are gone. Never rejects. */
  readonly exited: Promise<JailExit>;
  /** SIGKILL the whole jail. Idempotent; safe after exit. */
  kill(): void;
  /** A {@link JailRequest.gated} jail may exec its command (once its other gates, if any, are open). Idempotent; nothing after kill() or without `gated`. */
  release(): void;
}

/** The OS sandbox found: bubblewrap (Linux), sandbox-exec (macOS; refused for orchestrate), or none. */
export type SandboxProviderName = 'bwrap' | 'sandbox-exec' | 'none';

/** Stable codes of why no working jail is available (in `--json` and ComisError details). */
export type SandboxProblemCode = 'PLATFORM_UNSUPPORTED' | 'ARCH_UNSUPPORTED' | 'BWRAP_MISSING' | 'BWRAP_TOO_OLD' | 'HELPER_MISSING' | 'USERNS_RESTRICTED' | 'SMOKE_FAILED' | 'SANDBOX_EXEC_ONLY';

/** Why the jail cannot be used, stated for a human, with the fix. */
export interface SandboxProblem {
  code: SandboxProblemCode;
  /** What is wrong, in words (never a raw bubblewrap error alone). */
  message: string;
  /** What to do about it. */
  hint: string;
  /** The raw error output, when there was one (for --verbose/--json). */
  detail?: string;
}

/** One assertion of the smoke test, run inside the real hardened jail. */
export interface SmokeCheck {
  name: string;
  ok: boolean;
  /** What was observed, e.g. `uid 1000`, `CapEff 0000000000000000`. */
  detail: string;
  /**
   * A property this host cannot give that the jail does without (the tmpfs
   * inode bound where no user namespace of our own is allowed): shown as
   * FAIL by the probe, but not a reason to refuse the provider.
   */
  advisory?: boolean;
}

/** The answer of `detectSandboxProvider()`: usable only when provider is 'bwrap' and there is no problem. */
export interface SandboxProviderInfo {
  provider: SandboxProviderName;
  binary?: string;
  version?: string;
  /** Present when the provider is missing or does not work: orchestrate refuses. */
  problem?: SandboxProblem;
  /** The smoke test's checks, when it ran. */
  checks?: SmokeCheck[];
  /** How the jail is entered on this machine. */
  mode?: { root: boolean; setpriv?: string; prlimit?: string };
}

/** A program resolved for use inside the jail: where it is on the host and in the jail, and what to bind for it. */
export interface ResolvedInterpreter {
  /** The real host path of the binary (symlinks resolved). */
  hostPath: string;
  /** Where the binary is inside the jail. */
  jailPath: string;
  /** What must be bound read-only for it to run (empty when it lives under /usr). */
  mounts: JailMount[];
  /**
   * Arguments to put right after the binary in the jail. For node:
   * `--disable-wasm-trap-handler` when supported — with the trap handler V8
   * reserves ~10 GiB of address space per WebAssembly.Memory, which the
   * jail's RLIMIT_AS (memoryMb, default 4096) refuses.
   */
  args: string[];
  version: string;
}
