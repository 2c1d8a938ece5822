/**
 * `grep`: search workspace files for a pattern, daemon-side.
 *
 * The pattern is script-controlled, so a catastrophic regular expression
 * must not stall the runner: the search runs in a worker thread that is
 * terminated at a deadline (grep-worker.ts). The worker resolves every path
 * through the confinement module, like every daemon-side reader; at most
 * MAX_GREP_WORKERS run at once in the process.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

import { CapCallError } from '../capsocket/protocol.js';
import { splitConfined } from '../confine/index.js';
import { maybeMaterializeValue } from '../resultref/materialize.js';
import { workerSource } from '../worker-source.js';
import type { ToolContext } from './context.js';

export interface GrepArgs {
  pattern: string;
  path?: string | undefined;
  glob?: string | undefined;
  ignoreCase?: boolean | undefined;
  literal?: boolean | undefined;
  maxMatches?: number | undefined;
}

export interface GrepLimits {
  timeoutMs: number;
  maxFiles: number;
  maxFileBytes: number;
  maxTotalBytes: number;
}

export const DEFAULT_GREP_LIMITS: GrepLimits = {
  timeoutMs: 10_000,
  maxFiles: 20_000,
  maxFileBytes: 8 * 1024 * 1024,
  maxTotalBytes: 256 * 1024 * 1024,
};

/**
 * picomatch's options for a workspace glob. `dot`: `*` matches dot files, as
 * it always did here (the workspace is the script's own tree, nothing is
 * hidden from it). `posix`: `[!a]` and `[[:alpha:]]` classes. `strictBrackets`:
 * an unbalanced `{`, `[` or `(` is a clear invalid_params, not a silent literal.
 * `noextglob`/`nonegate`: `@(x)` and a leading `!` stay literal characters,
 * as before. `windows: false`: paths are always `/`-separated here.
 */
const GLOB_OPTIONS = { dot: true, posix: true, strictBrackets: true, noextglob: true, nonegate: true, windows: false } as const;

let picomatch: typeof import('picomatch') | undefined;

/**
 * Compiles a glob (`*`, `**`, `?`, `[...]` classes, nested `{a,{b,c}}`) to an
 * anchored regular expression source, matched against `/`-separated paths
 * relative to the workspace. The source crosses to the grep worker as a
 * string (a RegExp does not survive structured clone); these options never
 * set regex flags.
 */
export function globToRegExpSource(glob: string): string {
  // Without extglobs picomatch leaves parentheses as regex groups: escape
  // them so `file (1).md` is matched literally, as it always was.
  const literalParens = glob.replace(/\\.|[()]/g, (m) => (m.length === 2 ? m : `\\${m}`));
  try {
    // Loaded on the first glob, not with the run's tools (most runs never grep).
    picomatch ??= createRequire(import.meta.url)('picomatch') as typeof import('picomatch');
    return picomatch.makeRe(literalParens, GLOB_OPTIONS).source;
  } catch (err) {
    throw new CapCallError('invalid_params', `invalid glob: ${(err as Error).message}`);
  }
}

/** Grep workers running at once in this process: more wait their turn (each may hold a file of maxFileBytes and a regex's heap). */
export const MAX_GREP_WORKERS = 2;
let running = 0;
let peakRunning = 0;
let alive = 0;
const waiting: (() => void)[] = [];

/** How many grep workers ran at once at most in this process (for tests and benchmarks). */
export function grepWorkerPeak(): number {
  return peakRunning;
}

/** Grep worker threads alive in this process right now (for tests: none outlives its run). */
export function grepWorkersAlive(): number {
  return alive;
}

const runEndedError = (): CapCallError => new CapCallError('run_ended', 'the run ended before grep finished');

async function acquireWorkerSlot(signal?: AbortSignal): Promise<() => void> {
  if (running >= MAX_GREP_WORKERS) {
    await new Promise<void>((resolve, reject) => {
      const wake = (): void => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      const onAbort = (): void => {
        const i = waiting.indexOf(wake);
        if (i >= 0) waiting.splice(i, 1);
        reject(runEndedError());
      };
      if (signal?.aborted) return reject(runEndedError());
      signal?.addEventListener('abort', onAbort, { once: true });
      waiting.push(wake);
    });
  }
  running++;
  peakRunning = Math.max(peakRunning, running);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    running--;
    waiting.shift()?.();
  };
}

/**
 * The compiled worker next to this file (dist/lib/tools/grep-worker.js), or,
 * when running from the TypeScript sources (tests), the same source bundled
 * with the confinement module it imports.
 */
const grepWorkerSpec = workerSource('./grep-worker', import.meta.url);

export async function grepTool(ctx: ToolContext, args: GrepArgs, limits: GrepLimits = DEFAULT_GREP_LIMITS): Promise<unknown> {
  const startParts = splitConfined(args.path ?? '.', ctx.jailWorkspace);
  const flags = args.ignoreCase ? 'i' : '';
  const source = args.literal ? args.pattern.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') : args.pattern;
  try {
    new RegExp(source, flags);
  } catch (err) {
    throw new CapCallError('invalid_params', `invalid regular expression: ${(err as Error).message.replace(/^Invalid regular expression: /, '')}`);
  }
  const globSource = args.glob ? globToRegExpSource(args.glob) : undefined;
  const spec = await grepWorkerSpec();
  const release = await acquireWorkerSlot(ctx.runEnded);
  if (ctx.runEnded?.aborted) {
    release();
    throw runEndedError();
  }
  let worker: Worker;
  try {
    worker = new Worker(spec.source, {
      eval: spec.eval,
      workerData: { rootReal: ctx.workspaceReal, startParts, who: ctx.jail, source, flags, globSource, maxMatches: args.maxMatches ?? 500, limits },
      resourceLimits: { maxOldGenerationSizeMb: 512 },
    });
  } catch (err) {
    release();
    throw err;
  }
  alive++;
  worker.once('exit', () => alive--);
  const found = await new Promise<{ matches: unknown[] }>((resolve, reject) => {
    const done = (): void => {
      clearTimeout(timer);
      ctx.runEnded?.removeEventListener('abort', onRunEnded);
    };
    const timer = setTimeout(() => {
      done();
      void worker.terminate().finally(release);
      reject(new CapCallError('timeout', `grep took longer than ${limits.timeoutMs} ms (a pathological pattern?) and was stopped`));
    }, limits.timeoutMs);
    // The run ended (deadline, kill, normal end with a call in flight): the worker goes with it.
    const onRunEnded = (): void => {
      done();
      void worker.terminate().finally(release);
      reject(runEndedError());
    };
    ctx.runEnded?.addEventListener('abort', onRunEnded, { once: true });
    worker.once('message', (msg: { result?: unknown; error?: { code: string; message: string } }) => {
      done();
      void worker.terminate().finally(release);
      if (msg.error) reject(new CapCallError(msg.error.code, msg.error.message));
      else resolve(msg.result as { matches: unknown[] });
    });
    worker.once('error', () => {
      done();
      release();
      reject(new CapCallError('internal', 'grep failed daemon-side'));
    });
    worker.once('exit', () => {
      done();
      release();
      reject(new CapCallError('internal', 'grep failed daemon-side'));
    });
  });
  if (!ctx.results) return found;
  // Over the threshold, the matches become a JSONL ResultRef: one match per line.
  return maybeMaterializeValue(ctx.results, found, () => ({ text: found.matches.map((m) => JSON.stringify(m)).join('\n') + '\n', nameHint: 'matches.jsonl' }));
}
