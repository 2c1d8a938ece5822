/**
 * `.sql(query)` and `.jsonpath(expr)` for ResultRefs: one DuckDB query per
 * child process, daemon-side, confined to the run's results directory. This
 * is the front; the work lives beside it:
 * - results-audit.ts: layer 2, the results directory holds only plain files;
 * - child-protocol.ts: start a child, hand it its one query, read its reply;
 * - query-child.ts: the child program itself (layer 3);
 * - spawn-query-process.ts: the jailed (or plain) child process (layer 4);
 * - spare-pool.ts: one run's slicer, with a warm spare child;
 * - redact-paths.ts: no host path in what the script sees.
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
import { realpathSync } from 'node:fs';

import { compileJsonPath, JsonPathError } from '../jsonpath.js';
import { dispatch, settingsOf, startChild } from './child-protocol.js';
import { resolveDuckDb } from './locate-duckdb.js';
import { checkResultsDir } from './results-audit.js';
import { COLD_CHILD_IDLE_MS } from './spare-pool.js';
import { DUCKDB_MISSING_MESSAGE, jsonPathValue, limitsOf, type DuckDbLocation, type JsonPathResult, type SliceQueryError, type SliceQueryResult, type SliceRuntime } from './slice-types.js';
import { checkSqlAllowed } from './sql-policy.js';
import { defaultQuerySpawner } from './spawn-query-process.js';

export { isDuckDbAvailable, resolveDuckDb } from './locate-duckdb.js';
export { redactHostPaths } from './redact-paths.js';
export { createSliceQueryRunner, type SliceQueryRunner } from './spare-pool.js';
export type { JsonPathResult, SliceQueryError, SliceQueryResult } from './slice-types.js';

export function isSliceError(result: SliceQueryResult | JsonPathResult): result is SliceQueryError {
  return 'error' in result;
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

async function runCold(options: SliceQueryOptions, duck: DuckDbLocation, resultsReal: string, engineOnly: boolean): Promise<SliceQueryResult> {
  const spawnQuery = options.spawnQueryProcess ?? (await defaultQuerySpawner({ hostUid: options.hostUid, scriptMaxProcesses: options.scriptMaxProcesses }));
  const child = startChild(settingsOf(options, duck, resultsReal, spawnQuery, COLD_CHILD_IDLE_MS));
  if ('error' in child) return child;
  const { result, reaped } = await dispatch(child, { query: options.query, resultsDir: options.resultsDir, ...limitsOf(options), engineOnly });
  await reaped; // this one-shot API promises a reaped child and no files left
  return result;
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
  return jsonPathValue(await runSliceQuery({ ...options, query }));
}
