/**
 * The parent's side of the DuckDB child protocol (the child's side is
 * query-child.ts; both import the wire types below): start a child with its
 * boot message, hand it its one query, and turn its one-line reply into a
 * {@link SliceQueryResult}, redacting host paths from errors.
 *
 * A child is started booted-but-idle (it hardens DuckDB and then waits for a
 * request file), so a pool can start one ahead of the query it will serve
 * (spare-pool.ts). Every started child is killed, reaped and its private
 * files removed by {@link dispatch} or {@link discardChild}; nothing here
 * keeps a child across two queries.
 */
import { availableParallelism, homedir, tmpdir } from 'node:os';
import { dirname } from 'node:path';

import { ComisError } from '../../errors.js';
import { queryChildProgram } from './child-program.js';
import { redactHostPaths } from './redact-paths.js';
import { clamp, SLICE_BOUNDS, SLICE_DEFAULTS, type DuckDbLocation, type SliceErrorCode, type SliceQueryError, type SliceQueryResult } from './slice-types.js';
import { DENIED_FUNCTION_PREFIXES, DENIED_FUNCTIONS, DENIED_SCHEMAS, DENIED_TABLE_PREFIXES } from './sql-policy.js';
import type { QueryProcess, QueryProcessView, SpawnQueryProcess } from './spawn-query-process.js';

// ------------------------------------------------------------ the wire

/** Boot message: one JSON object on the child's stdin. */
export interface ChildBoot {
  /** The `@duckdb/node-api` entry module, as the child sees it. */
  duckdbEntry: string;
  /** DuckDB's only allowed directory: the results directory as the child sees it. */
  allowedDir: string;
  memoryMb: number;
  threads: number;
  deniedFunctions: Readonly<Record<string, string>>;
  deniedPrefixes: readonly (readonly [string, string])[];
  /** Table references refused by name prefix or schema: the engine's catalog views. */
  deniedTablePrefixes: readonly string[];
  deniedSchemas: readonly string[];
  /** Where the request will appear (in the child's read-only private directory). */
  requestPath: string;
  /** The child exits by itself when no request came this long after boot. */
  idleMs: number;
}

/** The query request: a JSON file the parent renames into place at `requestPath`. */
export interface ChildRequest {
  query: string;
  maxOutputBytes: number;
  /** The child's own backstop: it SIGKILLs itself this long after the request arrived. */
  deadlineMs: number;
  /** Tests of the engine's confinement only: skip the parser-level checks. */
  engineOnly?: boolean;
}

/** Codes the child itself may answer with. */
export type ChildErrorCode = 'sql_refused' | 'sql_error' | 'access_denied' | 'timeout' | 'output_limit' | 'out_of_memory' | 'hardening_failed' | 'internal';

/** The reply: ONE line of JSON on stdout, nothing else. */
export type ChildReply = { ok: true; columns: string[]; rowCount: number; rows: unknown[] } | { ok: false; code: ChildErrorCode; error: string };

const CHILD_CODES = new Set<SliceErrorCode>(['sql_refused', 'sql_error', 'access_denied', 'timeout', 'output_limit', 'out_of_memory', 'hardening_failed', 'internal']);

// ------------------------------------------------------------ starting a child

/** A started child: booted (or booting) and hardened, waiting for its one query. */
export interface QueryChild {
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

export interface ChildSettings {
  duck: DuckDbLocation;
  resultsReal: string;
  memoryMb: number;
  threads: number;
  spawnQuery: SpawnQueryProcess;
  /** The child exits by itself when no query came this long after boot. */
  idleMs: number;
}

export function settingsOf(options: { memoryMb?: number; threads?: number }, duck: DuckDbLocation, resultsReal: string, spawnQuery: SpawnQueryProcess, idleMs: number): ChildSettings {
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
export function startChild(settings: ChildSettings): QueryChild | SliceQueryError {
  let view: QueryProcessView | undefined;
  let proc: QueryProcess;
  try {
    proc = settings.spawnQuery({
      resultsDir: settings.resultsReal,
      duckdbScopeDir: settings.duck.scopeDir,
      childSource: queryChildProgram(),
      memoryMb: settings.memoryMb,
      threads: settings.threads,
      // A backstop outside the event loop: its idle wait, the longest query allowed, and slack.
      maxLifetimeMs: settings.idleMs + SLICE_BOUNDS.timeoutMs[1] + 30_000,
      boot: (v) => {
        view = v;
        const boot: ChildBoot = {
          duckdbEntry: v.duckdbEntry,
          allowedDir: v.resultsDir,
          memoryMb: settings.memoryMb,
          threads: settings.threads,
          deniedFunctions: DENIED_FUNCTIONS,
          deniedPrefixes: DENIED_FUNCTION_PREFIXES,
          deniedTablePrefixes: DENIED_TABLE_PREFIXES,
          deniedSchemas: DENIED_SCHEMAS,
          requestPath: v.requestPath,
          idleMs: settings.idleMs,
        };
        return JSON.stringify(boot);
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
export async function discardChild(child: QueryChild): Promise<void> {
  child.proc.kill();
  await child.exit;
  child.proc.cleanup();
}

// ------------------------------------------------------------ one query

export interface QueryRequest {
  query: string;
  /** Host path as the caller gave it, for redaction. */
  resultsDir: string;
  timeoutMs: number;
  maxOutputBytes: number;
  engineOnly: boolean;
}

const RESULTS_HINT = " (the query may read only files under results/, e.g. read_json_auto('results/ref-1.jsonl'))";

/** What {@link dispatch} yields: the answer, and the child's end (reaped, its files removed), which may come later. */
export interface Dispatched {
  result: SliceQueryResult;
  /** Settles (never rejects) once the child is reaped and its private files are gone. */
  reaped: Promise<void>;
}

/** Resolves once a newline has arrived on the child's stdout (its reply is whole), or never. */
function replyLine(child: QueryChild): Promise<void> {
  return new Promise((resolveLine) => {
    const seen = (chunk: Buffer): void => {
      if (!chunk.includes(10)) return;
      child.proc.stdout.removeListener('data', seen);
      resolveLine();
    };
    if (child.chunks.some((c) => c.includes(10))) resolveLine();
    else child.proc.stdout.on('data', seen);
  });
}

/**
 * Hands `child` its one query and turns its reply into a result. The answer
 * is taken as soon as the reply line is whole: the child writes nothing after
 * it and exits by itself, so waiting for its process (and its jail) to be
 * torn down would only add latency; `reaped` tells when it is. Either way
 * the child is killed if still alive, reaped, and its files removed.
 */
export async function dispatch(child: QueryChild, request: QueryRequest): Promise<Dispatched> {
  const { timeoutMs, maxOutputBytes } = request;
  child.stdoutCap = maxOutputBytes + 64 * 1024;
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    child.proc.kill();
  }, timeoutMs);
  try {
    if (child.stdoutBytes > child.stdoutCap) {
      child.overflow = true;
      child.proc.kill();
    } else {
      const wire: ChildRequest = { query: request.query, maxOutputBytes, deadlineMs: timeoutMs + 2_000, ...(request.engineOnly ? { engineOnly: true } : {}) };
      child.proc.deliver(JSON.stringify(wire));
    }
  } catch {
    child.proc.kill();
  }
  const reaped = child.exit.then(() => {
    clearTimeout(timer);
    child.proc.kill();
    try {
      child.proc.cleanup();
    } catch {
      /* a private directory left behind is swept with the run's temp files; the answer stands */
    }
  });
  let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  await Promise.race([replyLine(child), child.exit.then((e) => void (exit = e))]);
  clearTimeout(timer);
  return { result: readReply(child, request, timedOut, exit), reaped };
}

/** The child's reply as a result: its whole stdout must be exactly one line of JSON so far. */
function readReply(child: QueryChild, request: QueryRequest, timedOut: boolean, exit: { code: number | null; signal: NodeJS.Signals | null } | undefined): SliceQueryResult {
  const { timeoutMs, maxOutputBytes } = request;
  if (child.overflow) return { code: 'output_limit', error: `the result is larger than ${maxOutputBytes} bytes; select fewer rows or columns (add LIMIT)` };
  const text = Buffer.concat(child.chunks).toString('utf8');
  let reply: Partial<{ ok: boolean; code: string; error: string; columns: string[]; rowCount: number; rows: unknown[] }> | undefined;
  if (text.endsWith('\n') && text.indexOf('\n') === text.length - 1) {
    try {
      reply = JSON.parse(text) as typeof reply;
    } catch {
      reply = undefined;
    }
  }
  if (!reply) {
    if (timedOut) return { code: 'timeout', error: `the query ran longer than ${timeoutMs} ms and was stopped` };
    const how = !exit ? 'wrote something that is not an answer' : exit.signal ? `was killed (${exit.signal})` : `exited with code ${exit.code}`;
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
