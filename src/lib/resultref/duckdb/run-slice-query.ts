/**
 * `.sql(query)` and `.jsonpath(expr)` for ResultRefs: one DuckDB query per
 * child process, daemon-side, confined to the run's results directory.
 *
 * Contract: {@link runSliceQuery} never throws for anything the script can
 * cause; it returns rows as JSON values, or a short `{error, code}` whose
 * message never carries an absolute host path. Paths in queries are relative
 * to the run workspace, as ResultRef `ref`s are: `read_json_auto('results/ref-1.jsonl')`.
 *
 * Security property, in layers (each enough on its own for what it covers):
 * 1. {@link checkSqlAllowed}: a single read-only query, no denied verb,
 *    reader or URL, before DuckDB is even started;
 * 2. the results directory holds only plain files and directories (no links,
 *    no multiply-linked files, no devices or FIFOs);
 * 3. in the child, the engine's confinement (`allowed_directories` = the
 *    results directory, `enable_external_access = false`, autoinstall and
 *    autoload off, `lock_configuration = true`, no temp directory), verified
 *    by reading the settings back, then DuckDB's own parse: one SELECT
 *    statement whose parse tree names no denied function;
 * 4. the child process itself: by default in the jail (no network, an empty
 *    environment, only the results directory visible and read-only, bounded
 *    address space and processes), killed at the deadline, its output capped.
 *    That is what makes a symlink race inside the results directory, or a
 *    write the engine would allow under `allowed_directories`, harmless.
 */
import { closeSync, lstatSync, readlinkSync, realpathSync } from 'node:fs';
import { createRequire } from 'node:module';
import { availableParallelism, homedir, tmpdir } from 'node:os';
import { dirname } from 'node:path';

import { listDir, lookup, openRoot, procPath, type Handle } from '../../confine/index.js';
import { ComisError } from '../../errors.js';
import { compileJsonPath, JsonPathError } from '../jsonpath.js';
import { QUERY_CHILD_SOURCE } from './child-source.js';
import { checkSqlAllowed, DENIED_FUNCTION_PREFIXES, DENIED_FUNCTIONS } from './sql-policy.js';
import { defaultQuerySpawner, type QueryProcess, type QueryProcessView, type SpawnQueryProcess } from './spawn-query-process.js';

export const SLICE_DEFAULTS = {
  timeoutMs: 10_000,
  maxOutputBytes: 8 * 1024 * 1024,
  memoryMb: 512,
} as const;

export const SLICE_BOUNDS = {
  timeoutMs: [100, 600_000],
  maxOutputBytes: [1024, 64 * 1024 * 1024],
  memoryMb: [64, 16_384],
  threads: [1, 16],
} as const;

/** Stable codes of a slice failure (the capability socket's lower-snake style). */
export type SliceErrorCode =
  | 'duckdb_missing'
  | 'sql_refused'
  | 'sql_error'
  | 'access_denied'
  | 'timeout'
  | 'output_limit'
  | 'out_of_memory'
  | 'results_unavailable'
  | 'results_unsafe'
  | 'jsonpath_invalid'
  | 'hardening_failed'
  | 'sandbox_unavailable'
  | 'spawn_failed'
  | 'internal';

export interface SliceQueryRows {
  rows: unknown[];
  rowCount: number;
  /** Column names in order (duplicates renamed `name_1`…), so an empty result still has its shape. */
  columns: string[];
  truncated?: false;
}

export interface SliceQueryError {
  error: string;
  code: SliceErrorCode;
}

export type SliceQueryResult = SliceQueryRows | SliceQueryError;

export function isSliceError(result: SliceQueryResult | JsonPathResult): result is SliceQueryError {
  return 'error' in result;
}

/** Where the optional `@duckdb/node-api` package is installed. */
export interface DuckDbLocation {
  /** `node_modules/@duckdb`: holds `node-api`, `node-bindings` and the platform binding. */
  scopeDir: string;
  version: string;
}

export type ResolveDuckDb = () => DuckDbLocation | undefined;

interface SliceRuntime {
  /** Starts the child (default: the jailed spawner, {@link defaultQuerySpawner}). */
  spawnQueryProcess?: SpawnQueryProcess;
  /** Finds DuckDB (default: {@link resolveDuckDb}); tests pass one that finds nothing. */
  resolveDuckDb?: ResolveDuckDb;
  /**
   * Host uid of the default jailed spawner (as root): the run's own uid, so the
   * query child is confined with the run and counts against no other uid.
   */
  hostUid?: number;
}

export interface SliceQueryOptions extends SliceRuntime {
  /** Host path of the run's results directory (the only directory the query may read). */
  resultsDir: string;
  query: string;
  /** Wall-clock limit; the child is killed at it (default 10 s). */
  timeoutMs?: number;
  /** Largest result, as serialized JSON rows (default 8 MiB); over it is an error, never a partial result. */
  maxOutputBytes?: number;
  /** DuckDB `memory_limit` (default 512 MB). */
  memoryMb?: number;
  /** DuckDB worker threads (default: min(2, CPUs)). */
  threads?: number;
}

const require = createRequire(import.meta.url);

/**
 * Finds `@duckdb/node-api` and its native binding for this platform without
 * importing them (importing costs ~100 ms and belongs in the child).
 */
export const resolveDuckDb: ResolveDuckDb = () => {
  try {
    const apiPkg = require.resolve('@duckdb/node-api/package.json');
    const apiDir = dirname(apiPkg);
    const scopeDir = dirname(apiDir);
    const bindingsPkg = require.resolve('@duckdb/node-bindings/package.json', { paths: [apiDir] });
    const nativePkg = require.resolve(`@duckdb/node-bindings-${process.platform}-${process.arch}/package.json`, { paths: [dirname(bindingsPkg)] });
    // The child (and a jail) sees one `@duckdb` directory: all three must live in it.
    if (dirname(dirname(bindingsPkg)) !== scopeDir || dirname(dirname(nativePkg)) !== scopeDir) return undefined;
    const { version } = require(apiPkg) as { version: string };
    return { scopeDir, version };
  } catch {
    return undefined;
  }
};

/** True when `.sql()`/`.jsonpath()` can run here (the optional dependency is installed). */
export function isDuckDbAvailable(resolve: ResolveDuckDb = resolveDuckDb): boolean {
  return resolve() !== undefined;
}

export const DUCKDB_MISSING_MESSAGE =
  'DuckDB is not installed (optional dependency @duckdb/node-api), so .sql() and .jsonpath() are unavailable; .read(), .grep() and .jq() still work';

function clamp(value: number | undefined, fallback: number, [lo, hi]: readonly [number, number]): number {
  if (value === undefined || !Number.isFinite(value)) return fallback;
  return Math.min(hi, Math.max(lo, Math.floor(value)));
}

const MAX_AUDIT_ENTRIES = 10_000;

/**
 * Resolves the results directory and checks that it holds only plain files
 * and directories: a symlink, a hard link (a file with more than one name)
 * or a special file there could point the engine's by-path check at data
 * outside the run, or hang it. The walk goes through the confinement module
 * (each name looked up with O_PATH|O_NOFOLLOW from its directory's handle),
 * so the audit itself never follows, opens or lists anything outside.
 */
function checkResultsDir(resultsDir: string): { real: string } | SliceQueryError {
  let root: Handle;
  let real: string;
  try {
    root = openRoot(resultsDir);
    real = readlinkSync(procPath(root.fd));
  } catch {
    return { code: 'results_unavailable', error: "this run's results directory is not available" };
  }
  const open: Handle[] = [root];
  try {
    const pending: Handle[] = [root];
    let seen = 0;
    while (pending.length > 0) {
      const dir = pending.pop()!;
      const names = listDir(dir, undefined);
      if (!names) return { code: 'results_unavailable', error: "this run's results directory cannot be listed" };
      for (const name of names) {
        if (++seen > MAX_AUDIT_ENTRIES) return { code: 'results_unsafe', error: `the results directory holds more than ${MAX_AUDIT_ENTRIES} entries` };
        const relPath = dir.rel === '.' ? name : `${dir.rel}/${name}`;
        let found;
        try {
          found = lookup(dir.fd, name);
        } catch {
          return { code: 'results_unsafe', error: `results/${relPath} cannot be checked; refusing to query the results directory` };
        }
        if (!found) {
          // Gone meanwhile, or a symlink: lookup answers both alike, so ask once more without following.
          try {
            lstatSync(procPath(dir.fd, name));
          } catch {
            continue; // removed meanwhile: nothing to read
          }
          return { code: 'results_unsafe', error: `results/${relPath} is a link or special file; refusing to query the results directory` };
        }
        if (found.stat.isDirectory()) {
          const h = { ...found, rel: relPath };
          open.push(h);
          pending.push(h);
        } else {
          closeSync(found.fd);
          if (!found.stat.isFile() || found.stat.nlink > 1) {
            return { code: 'results_unsafe', error: `results/${relPath} is a link or special file; refusing to query the results directory` };
          }
        }
      }
    }
    return { real };
  } finally {
    for (const h of open) closeSync(h.fd);
  }
}

/** Absolute-path-looking runs of text (`/a/b`), for redaction. */
const ABSOLUTE_PATH = /(^|[\s"'`(=,:[{])(\/[^\s"'`,;()[\]{}<>]+)/g;

/**
 * Makes a message safe to hand to the script: the results directory (as the
 * host or the child sees it) becomes `results`, the child's private directory
 * disappears, and any other absolute path that the query itself did not
 * contain becomes `<path>`. One line, at most 500 characters.
 */
export function redactHostPaths(message: string, context: { query: string; roots: readonly (readonly [string, string])[] }): string {
  let out = message.split('\n')[0]!.slice(0, 2000);
  const roots = [...context.roots].filter(([from]) => from.length > 1).sort((a, b) => b[0].length - a[0].length);
  for (const [from, to] of roots) {
    const trimmed = from.endsWith('/') ? from.slice(0, -1) : from;
    out = out.split(`${trimmed}/`).join(to === '' ? '' : `${to}/`).split(trimmed).join(to === '' ? '.' : to);
  }
  out = out.replace(ABSOLUTE_PATH, (whole, lead: string, path: string) => (context.query.includes(path) ? whole : `${lead}<path>`));
  return out.length > 500 ? `${out.slice(0, 497)}...` : out;
}

interface ChildReply {
  ok: boolean;
  code?: string;
  error?: string;
  columns?: string[];
  rowCount?: number;
  rows?: unknown[];
}

const CHILD_CODES = new Set<SliceErrorCode>(['sql_refused', 'sql_error', 'access_denied', 'timeout', 'output_limit', 'out_of_memory', 'hardening_failed', 'internal']);

/** A started child: booted (or booting) and hardened, waiting for its one query. */
interface QueryChild {
  proc: QueryProcess;
  view: QueryProcessView | undefined;
  resultsReal: string;
  chunks: Buffer[];
  stdoutBytes: number;
  stdoutCap: number;
  overflow: boolean;
  alive: boolean;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

interface ChildSettings {
  duck: DuckDbLocation;
  resultsReal: string;
  memoryMb: number;
  threads: number;
  spawnQuery: SpawnQueryProcess;
  /** The child exits by itself when no query came this long after boot. */
  idleMs: number;
}

function settingsOf(options: SliceRuntime & { memoryMb?: number; threads?: number }, duck: DuckDbLocation, resultsReal: string, spawnQuery: SpawnQueryProcess, idleMs: number): ChildSettings {
  return {
    duck,
    resultsReal,
    memoryMb: clamp(options.memoryMb, SLICE_DEFAULTS.memoryMb, SLICE_BOUNDS.memoryMb),
    threads: clamp(options.threads, Math.min(2, availableParallelism()), SLICE_BOUNDS.threads),
    spawnQuery,
    idleMs,
  };
}

/** Starts a child, or says why it could not. */
function startChild(settings: ChildSettings): QueryChild | SliceQueryError {
  let view: QueryProcessView | undefined;
  let proc: QueryProcess;
  try {
    proc = settings.spawnQuery({
      resultsDir: settings.resultsReal,
      duckdbScopeDir: settings.duck.scopeDir,
      childSource: QUERY_CHILD_SOURCE,
      memoryMb: settings.memoryMb,
      threads: settings.threads,
      // A backstop outside the event loop: its idle wait, the longest query allowed, and slack.
      maxLifetimeMs: settings.idleMs + SLICE_BOUNDS.timeoutMs[1] + 30_000,
      boot: (v) => {
        view = v;
        return JSON.stringify({
          duckdbEntry: v.duckdbEntry,
          allowedDir: v.resultsDir,
          memoryMb: settings.memoryMb,
          threads: settings.threads,
          deniedFunctions: DENIED_FUNCTIONS,
          deniedPrefixes: DENIED_FUNCTION_PREFIXES,
          requestPath: v.requestPath,
          idleMs: settings.idleMs,
        });
      },
    });
  } catch (err) {
    if (err instanceof ComisError && err.code === 'SANDBOX_UNAVAILABLE') {
      return { code: 'sandbox_unavailable', error: 'there is no working sandbox here, and the DuckDB slicer runs only inside one' };
    }
    return { code: 'spawn_failed', error: 'the DuckDB process could not be started' };
  }
  const child: QueryChild = {
    proc,
    view,
    resultsReal: settings.resultsReal,
    chunks: [],
    stdoutBytes: 0,
    stdoutCap: SLICE_BOUNDS.maxOutputBytes[1] + 64 * 1024,
    overflow: false,
    alive: true,
    exit: proc.exited,
  };
  void proc.exited.then(() => {
    child.alive = false;
  });
  proc.stdout.on('data', (chunk: Buffer) => {
    if (child.overflow) return;
    child.stdoutBytes += chunk.length;
    if (child.stdoutBytes > child.stdoutCap) {
      child.overflow = true;
      child.chunks.length = 0;
      proc.kill();
      return;
    }
    child.chunks.push(chunk);
  });
  proc.stderr.resume(); // never shown: it may hold host paths; draining keeps the child from blocking
  return child;
}

/** Stops a child that will not be used, and removes its files. */
async function discardChild(child: QueryChild): Promise<void> {
  child.proc.kill();
  await child.exit;
  child.proc.cleanup();
}

interface QueryRequest {
  query: string;
  /** Host path as the caller gave it, for redaction. */
  resultsDir: string;
  timeoutMs: number;
  maxOutputBytes: number;
  engineOnly: boolean;
}

const RESULTS_HINT = " (the query may read only files under results/, e.g. read_json_auto('results/ref-1.jsonl'))";

/** Hands `child` its one query and turns its reply into a result. Always reaps the child and removes its files. */
async function dispatch(child: QueryChild, request: QueryRequest): Promise<SliceQueryResult> {
  const { timeoutMs, maxOutputBytes } = request;
  child.stdoutCap = maxOutputBytes + 64 * 1024;
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.proc.kill();
  }, timeoutMs);
  let exit: { code: number | null; signal: NodeJS.Signals | null };
  try {
    if (child.stdoutBytes > child.stdoutCap) {
      child.overflow = true;
      child.proc.kill();
    } else {
      child.proc.deliver(
        JSON.stringify({ query: request.query, maxOutputBytes, deadlineMs: timeoutMs + 2_000, ...(request.engineOnly ? { engineOnly: true } : {}) }),
      );
    }
  } catch {
    child.proc.kill();
  }
  try {
    exit = await child.exit;
  } finally {
    clearTimeout(timer);
    child.proc.kill();
    child.proc.cleanup();
  }

  if (child.overflow) return { code: 'output_limit', error: `the result is larger than ${maxOutputBytes} bytes; select fewer rows or columns (add LIMIT)` };
  const text = Buffer.concat(child.chunks).toString('utf8');
  let reply: ChildReply | undefined;
  if (text.endsWith('\n') && text.indexOf('\n') === text.length - 1) {
    try {
      reply = JSON.parse(text) as ChildReply;
    } catch {
      reply = undefined;
    }
  }
  if (!reply) {
    if (timedOut) return { code: 'timeout', error: `the query ran longer than ${timeoutMs} ms and was stopped` };
    const how = exit.signal ? `was killed (${exit.signal})` : `exited with code ${exit.code}`;
    return { code: 'internal', error: `the DuckDB process ${how} without an answer` };
  }
  if (reply.ok && Array.isArray(reply.rows) && Array.isArray(reply.columns) && reply.rowCount === reply.rows.length) {
    return { rows: reply.rows, rowCount: reply.rowCount, columns: reply.columns, truncated: false };
  }
  const code: SliceErrorCode = CHILD_CODES.has(reply.code as SliceErrorCode) ? (reply.code as SliceErrorCode) : 'internal';
  const roots: [string, string][] = [
    [child.resultsReal, 'results'],
    [request.resultsDir, 'results'],
    [homedir(), '~'],
    [tmpdir(), '<tmp>'],
  ];
  const view = child.view;
  if (view) roots.push([view.resultsDir, 'results'], [view.cwd, ''], [dirname(view.requestPath), '<child>'], [dirname(dirname(view.duckdbEntry)), '<duckdb>']);
  const error = redactHostPaths(String(reply.error ?? 'the query failed'), { query: request.query, roots });
  return { code, error: code === 'access_denied' && /Cannot access file/.test(error) ? `${error}${RESULTS_HINT}` : error };
}

function limitsOf(options: { timeoutMs?: number; maxOutputBytes?: number }): { timeoutMs: number; maxOutputBytes: number } {
  return {
    timeoutMs: clamp(options.timeoutMs, SLICE_DEFAULTS.timeoutMs, SLICE_BOUNDS.timeoutMs),
    maxOutputBytes: clamp(options.maxOutputBytes, SLICE_DEFAULTS.maxOutputBytes, SLICE_BOUNDS.maxOutputBytes),
  };
}

/** How long a cold child waits for its (immediately delivered) query before giving up on its own. */
const COLD_CHILD_IDLE_MS = 60_000;

async function runCold(options: SliceQueryOptions, duck: DuckDbLocation, resultsReal: string, engineOnly: boolean): Promise<SliceQueryResult> {
  const spawnQuery = options.spawnQueryProcess ?? (await defaultQuerySpawner({ hostUid: options.hostUid }));
  const child = startChild(settingsOf(options, duck, resultsReal, spawnQuery, COLD_CHILD_IDLE_MS));
  if ('error' in child) return child;
  return dispatch(child, { query: options.query, resultsDir: options.resultsDir, ...limitsOf(options), engineOnly });
}

/**
 * Runs one read-only SQL query over the run's results directory in a fresh
 * DuckDB child process and returns its rows as JSON values (BIGINT/HUGEINT as
 * numbers when safe, else strings; DATE as `YYYY-MM-DD`; TIMESTAMP as ISO
 * 8601, `Z` for TIMESTAMPTZ; JSON columns parsed), or `{error, code}`.
 * The child is always reaped and its private files removed before this
 * resolves. For several queries in one run, {@link createSliceQueryRunner}
 * hides the child's start-up (~150 ms) by starting the next child ahead.
 */
export async function runSliceQuery(options: SliceQueryOptions): Promise<SliceQueryResult> {
  const check = checkSqlAllowed(options.query);
  if (!check.ok) return { code: 'sql_refused', error: check.reason };
  const duck = (options.resolveDuckDb ?? resolveDuckDb)();
  if (!duck) return { code: 'duckdb_missing', error: DUCKDB_MISSING_MESSAGE };
  const results = checkResultsDir(options.resultsDir);
  if ('error' in results) return results;
  return runCold(options, duck, results.real, false);
}

/**
 * Layers 3 and 4 alone, WITHOUT the pre-filter, the results-directory check
 * and (with `engineOnly`) the child's parser-level checks: the query goes to
 * the hardened engine as given. Exists so tests can prove that the engine's
 * own confinement holds for queries that slip past the earlier layers.
 * Production code calls {@link runSliceQuery}.
 */
export async function runConfinedQueryUnchecked(options: SliceQueryOptions & { engineOnly?: boolean }): Promise<SliceQueryResult> {
  const duck = (options.resolveDuckDb ?? resolveDuckDb)();
  if (!duck) return { code: 'duckdb_missing', error: DUCKDB_MISSING_MESSAGE };
  let real: string;
  try {
    real = realpathSync(options.resultsDir);
  } catch {
    return { code: 'results_unavailable', error: "this run's results directory is not available" };
  }
  return runCold(options, duck, real, options.engineOnly === true);
}

export interface SliceQueryRunnerOptions extends SliceRuntime {
  /** Host path of the run's results directory. */
  resultsDir: string;
  memoryMb?: number;
  threads?: number;
  /** Keep one hardened child started ahead of the next query (default true). */
  prewarm?: boolean;
  /** A spare child unused for this long is stopped (default 60 s). */
  idleMs?: number;
}

export interface SliceQueryLimits {
  timeoutMs?: number;
  maxOutputBytes?: number;
}

/** The slicer of one run: `.sql()` and `.jsonpath()` over one results directory. */
export interface SliceQueryRunner {
  query(sql: string, limits?: SliceQueryLimits): Promise<SliceQueryResult>;
  jsonpath(ref: string, expr: string, limits?: SliceQueryLimits): Promise<JsonPathResult>;
  /** Starts the spare child now (say, when a run whose script calls `.sql()` starts). No-op when one is ready. */
  warm(): void;
  /**
   * Ends the runner with its run: SIGKILLs EVERY child it started (the spare
   * and any query still running, whose caller then gets an error) and
   * resolves once all of them are gone; later queries start nothing. Await it
   * before removing the results directory.
   */
  close(): Promise<void>;
}

export const SLICE_RUNNER_IDLE_MS = 60_000;

/**
 * The slicer for one run. Same contract and layers as {@link runSliceQuery}
 * (each query gets its own fresh, hardened child process and DuckDB
 * instance, and every check runs per query), plus: with `prewarm`, the next
 * child is started as soon as a query finishes, booted and hardened with no
 * query, and waits (up to `idleMs`) for the next `.sql()` of this run, so the
 * script does not wait for node and DuckDB to start. A spare child reads
 * nothing until its query arrives, serves exactly one query, and is bound to
 * this run's results directory like any other.
 *
 * Lifecycle: the caller owns it; call {@link SliceQueryRunner.close} when the
 * run ends (a spare child is a live process: it would hold the event loop
 * until `idleMs` passes).
 */
export function createSliceQueryRunner(options: SliceQueryRunnerOptions): SliceQueryRunner {
  const prewarm = options.prewarm !== false;
  const idleMs = clamp(options.idleMs, SLICE_RUNNER_IDLE_MS, [1_000, 600_000]);
  let closed = false;
  // Every child of this runner that may still be alive, so none outlives the run.
  const live = new Set<QueryChild>();
  const track = (child: QueryChild): QueryChild => {
    live.add(child);
    void child.exit.then(() => live.delete(child));
    return child;
  };
  const CLOSED: SliceQueryError = { code: 'internal', error: 'the run has ended; the query was stopped' };
  let spare: QueryChild | undefined;
  let spareTimer: NodeJS.Timeout | undefined;
  let warming: Promise<void> | undefined;
  const discarding = new Set<Promise<void>>();
  const discard = (child: QueryChild): void => {
    const done = discardChild(child).finally(() => discarding.delete(done));
    discarding.add(done);
  };

  const dropSpare = (): QueryChild | undefined => {
    const taken = spare;
    spare = undefined;
    clearTimeout(spareTimer);
    spareTimer = undefined;
    return taken;
  };

  const startSpare = async (): Promise<void> => {
    if (closed || !prewarm || spare) return;
    const duck = (options.resolveDuckDb ?? resolveDuckDb)();
    if (!duck) return;
    let real: string;
    try {
      real = realpathSync(options.resultsDir);
    } catch {
      return;
    }
    const spawnQuery = options.spawnQueryProcess ?? (await defaultQuerySpawner({ hostUid: options.hostUid }));
    if (closed || spare) return;
    // The child's own idle limit outlasts ours, so we always stop it first.
    const started = startChild(settingsOf(options, duck, real, spawnQuery, idleMs + 30_000));
    if ('error' in started) return; // the next query reports the failure when it starts its own child
    spare = track(started);
    spareTimer = setTimeout(() => {
      const idle = dropSpare();
      if (idle) discard(idle);
    }, idleMs);
    spareTimer.unref();
  };

  const warm = (): void => {
    // A spare that cannot start is no error: the next query starts its own child and reports why.
    warming ??= startSpare()
      .catch(() => undefined)
      .finally(() => {
        warming = undefined;
      });
  };

  const query = async (sql: string, limits: SliceQueryLimits = {}): Promise<SliceQueryResult> => {
    if (closed) return CLOSED;
    const check = checkSqlAllowed(sql);
    if (!check.ok) return { code: 'sql_refused', error: check.reason };
    const duck = (options.resolveDuckDb ?? resolveDuckDb)();
    if (!duck) return { code: 'duckdb_missing', error: DUCKDB_MISSING_MESSAGE };
    const results = checkResultsDir(options.resultsDir);
    if ('error' in results) return results;
    await warming;
    if (closed) return CLOSED;
    let child = dropSpare();
    if (child && (!child.alive || child.resultsReal !== results.real)) {
      discard(child);
      child = undefined;
    }
    if (!child) {
      const spawnQuery = options.spawnQueryProcess ?? (await defaultQuerySpawner({ hostUid: options.hostUid }));
      if (closed) return CLOSED;
      const started = startChild(settingsOf(options, duck, results.real, spawnQuery, COLD_CHILD_IDLE_MS));
      if ('error' in started) return started;
      child = track(started);
    }
    const result = await dispatch(child, { query: sql, resultsDir: options.resultsDir, ...limitsOf(limits), engineOnly: false });
    if (closed) return CLOSED;
    warm();
    return result;
  };

  return {
    query: (sql, limits) => query(sql, limits),
    jsonpath: async (ref, expr, limits) => {
      let sql: string;
      try {
        sql = compileJsonPath(expr, ref);
      } catch (err) {
        if (err instanceof JsonPathError) return { code: 'jsonpath_invalid', error: err.message };
        throw err;
      }
      return valueOf(await query(sql, limits));
    },
    warm,
    close: async () => {
      closed = true;
      await warming;
      const idle = dropSpare();
      if (idle) discard(idle);
      // A query still running (say, an endless recursive CTE) dies now, not at its own deadline.
      for (const child of live) child.proc.kill();
      await Promise.all([...discarding, ...[...live].map((c) => c.exit)]);
    },
  };
}

function valueOf(result: SliceQueryResult): JsonPathResult {
  if ('error' in result) return result;
  const row = result.rows[0] as { value?: unknown } | undefined;
  return { value: row?.value ?? null };
}

export interface JsonPathOptions extends SliceRuntime {
  resultsDir: string;
  /** The ResultRef's `ref`: `results/ref-1.json`. */
  ref: string;
  /** A `$`-rooted path, see {@link compileJsonPath}. */
  expr: string;
  timeoutMs?: number;
  maxOutputBytes?: number;
  memoryMb?: number;
}

export type JsonPathResult = { value: unknown } | SliceQueryError;

/**
 * `.jsonpath(expr)`: the value at `expr` in the ref's document (null when
 * nothing matches, an array for wildcards), or `{error, code}`.
 */
export async function runJsonPath(options: JsonPathOptions): Promise<JsonPathResult> {
  let query: string;
  try {
    query = compileJsonPath(options.expr, options.ref);
  } catch (err) {
    if (err instanceof JsonPathError) return { code: 'jsonpath_invalid', error: err.message };
    throw err;
  }
  return valueOf(await runSliceQuery({ ...options, query }));
}
