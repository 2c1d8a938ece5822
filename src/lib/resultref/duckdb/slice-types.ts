/**
 * The vocabulary the DuckDB slicer's modules share: limits, result and error
 * shapes, where DuckDB is installed, and the injectable runtime. No logic
 * beyond {@link clamp}; run-slice-query.ts re-exports all of it.
 */
import type { SpawnQueryProcess } from './spawn-query-process.js';

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

export type JsonPathResult = { value: unknown } | SliceQueryError;

/** Where the optional `@duckdb/node-api` package is installed. */
export interface DuckDbLocation {
  /** `node_modules/@duckdb`: holds `node-api`, `node-bindings` and the platform binding. */
  scopeDir: string;
  version: string;
}

export type ResolveDuckDb = () => DuckDbLocation | undefined;

export interface SliceRuntime {
  /** Starts the child (default: the jailed spawner, `defaultQuerySpawner`). */
  spawnQueryProcess?: SpawnQueryProcess;
  /** Finds DuckDB (default: `resolveDuckDb`); tests pass one that finds nothing. */
  resolveDuckDb?: ResolveDuckDb;
  /**
   * Host uid of the default jailed spawner (as root): the run's own uid, so the
   * query child is confined with the run and counts against no other uid.
   */
  hostUid?: number;
  /** The run's script jail's maxProcesses: it shares that uid (see JailedQuerySpawnerOptions). */
  scriptMaxProcesses?: number;
}

export interface SliceQueryLimits {
  timeoutMs?: number;
  maxOutputBytes?: number;
}

export const DUCKDB_MISSING_MESSAGE = 'DuckDB is not installed (optional dependency @duckdb/node-api), so .sql() and .jsonpath() are unavailable; .read(), .grep() and .jq() still work';

export function clamp(value: number | undefined, fallback: number, [lo, hi]: readonly [number, number]): number {
  if (value === undefined || !Number.isFinite(value)) return fallback;
  return Math.min(hi, Math.max(lo, Math.floor(value)));
}

export function limitsOf(options: SliceQueryLimits): { timeoutMs: number; maxOutputBytes: number } {
  return {
    timeoutMs: clamp(options.timeoutMs, SLICE_DEFAULTS.timeoutMs, SLICE_BOUNDS.timeoutMs),
    maxOutputBytes: clamp(options.maxOutputBytes, SLICE_DEFAULTS.maxOutputBytes, SLICE_BOUNDS.maxOutputBytes),
  };
}

/** A `.jsonpath()` answer from the one-row, one-column (`value`) result its compiled query returns. */
export function jsonPathValue(result: SliceQueryResult): JsonPathResult {
  if ('error' in result) return result;
  const row = result.rows[0] as { value?: unknown } | undefined;
  return { value: row?.value ?? null };
}
