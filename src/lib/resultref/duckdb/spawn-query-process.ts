/**
 * The one step that starts a DuckDB query child: {@link SpawnQueryProcess}.
 * {@link runSliceQuery} takes it as an injectable function:
 * - {@link createJailedQuerySpawner} (the default, over `src/lib/jail`):
 *   the child runs in the bubblewrap jail with no network, an empty
 *   environment, a read-only root, and only these binds, all read-only: the
 *   node binary (when outside /usr), the `@duckdb` packages, the child
 *   program, and the run's results directory at `/workspace/results`;
 * - {@link spawnQueryProcessPlain}: a plain `child_process.spawn`, for
 *   tests that isolate the engine's own confinement and for hosts without a
 *   sandbox where the caller accepts that.
 *
 * Contract for an implementation: it creates a private directory that only
 * this process can write (the child sees it read-only), writes the child
 * program there, decides the paths as the child will see them
 * ({@link QueryProcessView}), passes the boot message that `spec.boot(view)`
 * returns on the child's stdin, and returns handles to deliver the query
 * (a file renamed into the private directory), kill and reap the process and
 * remove its private files. The child's cwd is a directory whose `results`
 * entry is the run's results directory, so
 * `read_json_auto('results/ref-1.jsonl')` resolves.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, chownSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';

import type { JailedProcess, JailRequest, ResolvedInterpreter } from '../../jail/types.js';
import { makeOwnedTempDir } from '../../temp-dir.js';

/** Paths as the child process sees them. */
export interface QueryProcessView {
  /** The child's working directory; it contains `results/`. */
  cwd: string;
  /** The results directory (DuckDB's only allowed directory). */
  resultsDir: string;
  /** The `@duckdb/node-api` entry module (`…/node-api/lib/index.js`). */
  duckdbEntry: string;
  /** Where the query request will appear (inside the child's read-only private directory). */
  requestPath: string;
}

export interface QueryProcessSpec {
  /** Host path of the run's results directory (already resolved and checked). */
  resultsDir: string;
  /** Host path of the `node_modules/@duckdb` directory that holds `node-api`. */
  duckdbScopeDir: string;
  /** The child program (ESM JavaScript). */
  childSource: string;
  /** DuckDB's `memory_limit` in MB (a jail adds room for node and DuckDB themselves). */
  memoryMb: number;
  /** DuckDB worker threads the child will start (jails count them as processes). */
  threads: number;
  /** The boot message (JSON), built from the child's view of the paths. */
  boot: (view: QueryProcessView) => string;
  /**
   * The longest the child may live at all (waiting for its query, then
   * running it). The jailed spawner hands it to the jail's supervisor, which
   * kills the child then even if the daemon's event loop (and so its own
   * per-query timer) is stuck.
   */
  maxLifetimeMs?: number;
}

export interface QueryProcess {
  pid: number | undefined;
  /**
   * A random word on the child's command line (and so on every process of its
   * start chain: supervisor, bubblewrap, the child), naming this child's
   * processes in /proc whoever their parent is. See {@link sweepMarked}.
   */
  marker: string;
  stdout: NodeJS.ReadableStream;
  stderr: NodeJS.ReadableStream;
  /** Settles when the process has exited (never rejects). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Hands the child its query (JSON): written beside, then renamed to, the request path. */
  deliver(request: string): void;
  /** SIGKILLs the process (idempotent). */
  kill(): void;
  /** Removes the private directory and lets go of the child's pipes; call after `exited`. */
  cleanup(): void;
}

export type SpawnQueryProcess = (spec: QueryProcessSpec) => QueryProcess;

/** Node flags of the child: a bounded JS heap (DuckDB's own memory is bounded by `memory_limit`). */
export function childNodeFlags(memoryMb: number): string[] {
  return [`--max-old-space-size=${Math.max(64, Math.min(256, Math.floor(memoryMb / 2)))}`];
}

/** The environment of the child: nothing inherited from the daemon. */
export const CHILD_ENV: Readonly<Record<string, string>> = { LANG: 'C.UTF-8', TZ: 'UTC' };

const REQUEST_FILE = 'query.json';

/** Writes the request next to its final name, then renames it: the child never sees a partial file. */
function deliverInto(dir: string): (request: string) => void {
  return (request) => {
    const staged = join(dir, `.${REQUEST_FILE}.partial`);
    writeFileSync(staged, request, { mode: 0o644 });
    renameSync(staged, join(dir, REQUEST_FILE));
  };
}

/**
 * Our ends of the child's pipes, closed once it is gone: whatever might still
 * hold the other end then can keep neither data flowing nor this process's
 * event loop alive.
 */
function releasePipes(...streams: NodeJS.ReadableStream[]): void {
  for (const s of streams) (s as Readable).destroy();
}

function newMarker(): string {
  return `comis-duckdb-${randomBytes(12).toString('hex')}`;
}

function wrapChild(child: ChildProcess, dir: string, cleanup: () => void, marker: string): QueryProcess {
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('error', () => resolve({ code: null, signal: null }));
    child.once('close', (code, signal) => resolve({ code, signal }));
  });
  return {
    pid: child.pid,
    marker,
    stdout: child.stdout!,
    stderr: child.stderr!,
    exited,
    deliver: deliverInto(dir),
    kill: () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
    cleanup: () => {
      releasePipes(child.stdout!, child.stderr!);
      cleanup();
    },
  };
}

/**
 * Starts the child with `child_process.spawn`, unjailed: cwd is a fresh 0700
 * directory holding the program and a `results` symlink to the run's results
 * directory; the environment is {@link CHILD_ENV}. The engine's confinement
 * is the only boundary here (no read-only results, nothing hidden), so use
 * it only where no sandbox provider exists and the caller accepts that, or
 * to test the engine alone.
 */
export const spawnQueryProcessPlain: SpawnQueryProcess = (spec) => {
  const dir = makeOwnedTempDir('comis-duckdb-'); // 0700; swept by the next comis if this one is killed
  const cleanup = (): void => rmSync(dir, { recursive: true, force: true });
  try {
    const program = join(dir, 'query-child.mjs');
    writeFileSync(program, spec.childSource, { mode: 0o600 });
    symlinkSync(spec.resultsDir, join(dir, 'results'), 'dir');
    const view: QueryProcessView = {
      cwd: dir,
      resultsDir: spec.resultsDir,
      duckdbEntry: join(spec.duckdbScopeDir, 'node-api', 'lib', 'index.js'),
      requestPath: join(dir, REQUEST_FILE),
    };
    const boot = spec.boot(view);
    const marker = newMarker();
    const child = spawn(process.execPath, [...childNodeFlags(spec.memoryMb), program, marker], {
      cwd: dir,
      env: { ...CHILD_ENV },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    child.stdin!.on('error', () => undefined);
    child.stdin!.end(boot);
    return wrapChild(child, dir, cleanup, marker);
  } catch (err) {
    cleanup();
    throw err;
  }
};

/** What the jailed spawner needs of `src/lib/jail/spawn.ts` (injected, so resultref does not own the jail). */
export interface QueryJailApi {
  spawnJail(req: JailRequest): JailedProcess;
  resolveInterpreter(name: 'node'): ResolvedInterpreter;
  deriveJailUid(path: string): number;
}

/** Where things are inside the query jail. */
export const QUERY_JAIL_PATHS = {
  workspace: '/workspace',
  results: '/workspace/results',
  duckdbScope: '/opt/comis/node_modules/@duckdb',
  childDir: '/opt/comis/duckdb-child',
} as const;

/**
 * Address space the jail allows on top of DuckDB's `memory_limit`: node and
 * DuckDB reserve about 1.4-1.6 GiB of virtual memory before any data (measured
 * with VmPeak on DuckDB 1.5.6, Node 20).
 */
export const QUERY_JAIL_ADDRESS_SPACE_EXTRA_MB = 2048;

export interface JailedQuerySpawnerOptions {
  /**
   * Host uid of the jail (as root): the run's registry uid, so a query child is
   * the run's and shares no uid with another workspace. Default (no run, e.g. a
   * one-off query): a hashed uid of the results directory.
   */
  hostUid?: number;
  /**
   * The run's script jail's `maxProcesses`: it runs as the same uid, and
   * RLIMIT_NPROC counts every task of a uid, so a child's limit must leave it
   * room (else a script's own processes, or a second child, leave a new
   * child unable to start its threads: it crashed with SIGSEGV or hung).
   */
  scriptMaxProcesses?: number;
}

/** Tasks one query child may run: node's own threads, DuckDB's, and margin. */
const childTasks = (threads: number): number => 32 + threads;
/**
 * Query children of one run alive at once, at most: the one answering (a run's
 * queries take turns, spare-pool.ts), the spare starting for the next, and one
 * still exiting.
 */
export const QUERY_CHILDREN_PER_RUN = 3;

/**
 * A {@link SpawnQueryProcess} that runs the child in the jail. The results
 * directory is bound read-only, so no query can write there (DuckDB alone
 * would allow writes under `allowed_directories`), and only this run's
 * results exist in the jail's filesystem, so a symlink or hard link planted
 * in them can reach nothing of the host (no /home, /root, /etc secrets,
 * sockets or other runs). Limits: address space `memoryMb +`
 * {@link QUERY_JAIL_ADDRESS_SPACE_EXTRA_MB}, processes for the run's children and
 * its script on the shared uid (see {@link JailedQuerySpawnerOptions.scriptMaxProcesses}),
 * 1 MiB file size, 1 MiB /tmp.
 */
export function createJailedQuerySpawner(jail: QueryJailApi, options: JailedQuerySpawnerOptions = {}): SpawnQueryProcess {
  return (spec) => {
    const node = jail.resolveInterpreter('node');
    const hostUid = options.hostUid ?? jail.deriveJailUid(spec.resultsDir);
    const root = process.geteuid?.() === 0;
    // Ours, named for the next comis to sweep should this one be killed mid-query; the
    // child's directory inside it is the jail uid's (the 0711 lets only it through).
    const outer = makeOwnedTempDir('comis-duckdb-', root ? 0o711 : 0o700);
    const dir = join(outer, 'child');
    const cleanup = (): void => rmSync(outer, { recursive: true, force: true });
    try {
      // Only the jail's uid may enter (it sees the directory read-only); we write as root.
      mkdirSync(dir, { mode: 0o700 });
      chmodSync(dir, 0o700);
      if (root) chownSync(dir, hostUid, hostUid);
      writeFileSync(join(dir, 'query-child.mjs'), spec.childSource, { mode: 0o644 });
      const view: QueryProcessView = {
        cwd: QUERY_JAIL_PATHS.workspace,
        resultsDir: QUERY_JAIL_PATHS.results,
        duckdbEntry: `${QUERY_JAIL_PATHS.duckdbScope}/node-api/lib/index.js`,
        requestPath: `${QUERY_JAIL_PATHS.childDir}/${REQUEST_FILE}`,
      };
      const boot = spec.boot(view);
      const marker = newMarker();
      const child = jail.spawnJail({
        command: [node.jailPath, ...childNodeFlags(spec.memoryMb), `${QUERY_JAIL_PATHS.childDir}/query-child.mjs`, marker],
        mounts: [
          ...node.mounts,
          { kind: 'ro', source: spec.duckdbScopeDir, target: QUERY_JAIL_PATHS.duckdbScope },
          { kind: 'ro', source: dir, target: QUERY_JAIL_PATHS.childDir },
          { kind: 'ro', source: spec.resultsDir, target: QUERY_JAIL_PATHS.results },
        ],
        cwd: QUERY_JAIL_PATHS.workspace,
        env: { ...CHILD_ENV },
        limits: {
          memoryMb: spec.memoryMb + QUERY_JAIL_ADDRESS_SPACE_EXTRA_MB,
          // Every task of the uid counts: this child's, the run's other children's and its script's.
          maxProcesses: QUERY_CHILDREN_PER_RUN * childTasks(spec.threads) + (options.scriptMaxProcesses ?? 0),
          fileSizeMb: 1,
          tmpSizeMb: 1,
        },
        hostUid,
        stdin: Buffer.from(boot, 'utf8'),
        ...(spec.maxLifetimeMs !== undefined ? { deadlineMs: spec.maxLifetimeMs } : {}),
      });
      let killed = false;
      return {
        pid: child.pid,
        marker,
        stdout: child.stdout,
        stderr: child.stderr,
        // A jail ended by a kill (ours, or the supervisor's at the deadline) may have been
        // caught starting: see sweepMarked. A child that answered and exited needs no sweep.
        exited: child.exited.then(async (e) => {
          if (killed || e.killedBy || e.code !== 0) await sweepMarked(marker);
          return { code: e.code, signal: e.signal };
        }),
        deliver: deliverInto(dir),
        kill: () => {
          killed = true;
          child.kill();
        },
        cleanup: () => {
          releasePipes(child.stdout, child.stderr);
          cleanup();
        },
      };
    } catch (err) {
      cleanup();
      throw err;
    }
  };
}

/**
 * SIGKILLs each live (not zombie) process whose command line holds `marker`,
 * right after reading it (the shortest window for its pid to be reused), and
 * says how many it found.
 */
function killMarked(marker: string): number {
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return 0;
  }
  let found = 0;
  for (const name of names) {
    if (name.charCodeAt(0) < 48 || name.charCodeAt(0) > 57) continue;
    try {
      if (!readFileSync(`/proc/${name}/cmdline`, 'latin1').includes(marker)) continue;
      const stat = readFileSync(`/proc/${name}/stat`, 'latin1');
      const state = stat.charAt(stat.lastIndexOf(')') + 2);
      if (state === 'Z' || state === 'X') continue;
      found++;
      process.kill(Number(name), 'SIGKILL');
    } catch {
      /* gone meanwhile, or not ours to signal */
    }
  }
  return found;
}

const SWEEP_POLL_MS = 10;
const SWEEP_LIMIT_MS = 5_000;

/**
 * SIGKILLs every process still carrying `marker`, and waits (bounded) until
 * none is left. Why: a jail killed while it was still starting can leave a
 * process no parent-death signal reaches. bubblewrap's sandboxed child sets
 * its own (--die-with-parent) only at the very end of its setup, after it
 * left the supervisor's process group (--new-session); killed in that window,
 * bubblewrap leaves that child to init, and one killed between its clone()
 * and the write that releases the child leaves it blocked on an eventfd
 * forever, holding the stdio pipes of comis: the run was recorded, and comis
 * never exited. The marker finds such a process whoever its parent is by now
 * (a supervisor, bubblewrap, init). Only this module's children carry it: a
 * 96-bit random word per child.
 */
export async function sweepMarked(marker: string): Promise<void> {
  const until = Date.now() + SWEEP_LIMIT_MS;
  for (;;) {
    if (killMarked(marker) === 0) return;
    if (Date.now() > until) return;
    await new Promise((resolveWait) => setTimeout(resolveWait, SWEEP_POLL_MS));
  }
}

/** The default spawner: the jailed one over `src/lib/jail/spawn.ts`, loaded on first use. */
export async function defaultQuerySpawner(options: JailedQuerySpawnerOptions = {}): Promise<SpawnQueryProcess> {
  const jail = await import('../../jail/spawn.js');
  return createJailedQuerySpawner(jail, options);
}
