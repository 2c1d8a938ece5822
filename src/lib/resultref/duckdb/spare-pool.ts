/**
 * The slicer of one run ({@link createSliceQueryRunner}): `.sql()` and
 * `.jsonpath()` over one results directory, with a warm spare child.
 *
 * Same contract and layers as runSliceQuery (each query gets its own fresh,
 * hardened child process and DuckDB instance, and every check runs per
 * query), plus: with `prewarm`, the next child is started as soon as a query
 * finishes, booted and hardened with no query, and waits (up to `idleMs`) for
 * the next `.sql()` of this run, so the script does not wait for node and
 * DuckDB to start. A spare child reads nothing until its query arrives,
 * serves exactly one query, and is bound to this run's results directory
 * like any other.
 *
 * Lifecycle: the caller owns it; call {@link SliceQueryRunner.close} when the
 * run ends (a spare child is a live process: it would hold the event loop
 * until `idleMs` passes).
 */
import { realpathSync } from 'node:fs';

import { compileJsonPath, JsonPathError } from '../jsonpath.js';
import { discardChild, dispatch, settingsOf, startChild, type QueryChild } from './child-protocol.js';
import { resolveDuckDb } from './locate-duckdb.js';
import { checkResultsDir } from './results-audit.js';
import { clamp, DUCKDB_MISSING_MESSAGE, jsonPathValue, limitsOf, type JsonPathResult, type SliceQueryError, type SliceQueryLimits, type SliceQueryResult, type SliceRuntime } from './slice-types.js';
import { checkSqlAllowed } from './sql-policy.js';
import { defaultQuerySpawner } from './spawn-query-process.js';

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

/** How long a cold child waits for its (immediately delivered) query before giving up on its own. */
export const COLD_CHILD_IDLE_MS = 60_000;

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
  const reaping = new Set<Promise<void>>();
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
    const spawnQuery = options.spawnQueryProcess ?? (await defaultQuerySpawner({ hostUid: options.hostUid, scriptMaxProcesses: options.scriptMaxProcesses }));
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

  // A run's queries take turns: each child is a node and a DuckDB with their threads, all on the
  // run's uid, and two cores gain nothing from more at once (spawn-query-process.ts counts on it).
  let turn: Promise<unknown> = Promise.resolve();
  const query = (sql: string, limits: SliceQueryLimits = {}): Promise<SliceQueryResult> => {
    const mine = turn.then(() => queryNow(sql, limits));
    turn = mine.catch(() => undefined);
    return mine;
  };
  const queryNow = async (sql: string, limits: SliceQueryLimits): Promise<SliceQueryResult> => {
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
      const spawnQuery = options.spawnQueryProcess ?? (await defaultQuerySpawner({ hostUid: options.hostUid, scriptMaxProcesses: options.scriptMaxProcesses }));
      if (closed) return CLOSED;
      const started = startChild(settingsOf(options, duck, results.real, spawnQuery, COLD_CHILD_IDLE_MS));
      if ('error' in started) return started;
      child = track(started);
    }
    const { result, reaped } = await dispatch(child, { query: sql, resultsDir: options.resultsDir, ...limitsOf(limits), engineOnly: false });
    // The answer is back before the child's teardown; close() still waits for it.
    reaping.add(reaped);
    void reaped.then(() => reaping.delete(reaped));
    if (closed) return CLOSED;
    // The next spare starts once this answer is on its way: its spawn is synchronous work.
    setImmediate(warm);
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
      return jsonPathValue(await query(sql, limits));
    },
    warm,
    close: async () => {
      closed = true;
      await warming;
      const idle = dropSpare();
      if (idle) discard(idle);
      // A query still running (say, an endless recursive CTE) dies now, not at its own deadline.
      for (const child of live) child.proc.kill();
      await Promise.all([...discarding, ...reaping, ...[...live].map((c) => c.exit)]);
    },
  };
}
