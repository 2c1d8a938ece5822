/**
 * Where web_fetch extracts an HTML page: a small pool of worker threads
 * (html-worker.ts), never comis's event loop. The strip and Readability are
 * page-controlled work: a 22 KB page of 2,000 nested elements took 41 s on
 * the main thread, thousands of hiding rules over a large page minutes, and
 * nothing else of comis (other calls, its timers, the run's end) ran meanwhile.
 *
 * Each job has a deadline (what is left of the call's `web.fetch.timeoutMs`)
 * and ends with its run: past either, its worker is terminated (the thread
 * stops wherever it is) and the call fails (`timeout`, `run_ended`). A page
 * too deep or too big for the worker's stack or heap (512 MB) fails
 * `extraction_failed`. At most MAX_HTML_WORKERS run at once in the process;
 * a worker idle for IDLE_MS ends, and an idle one never keeps comis alive.
 */
import { Worker } from 'node:worker_threads';

import { CapCallError } from '../capsocket/protocol.js';
import { workerSource, type WorkerSource } from '../worker-source.js';

export const MAX_HTML_WORKERS = 2;
const IDLE_MS = 5_000;
const HEAP_MB = 512;

interface Slot {
  worker: Worker;
  busy: boolean;
  idle?: NodeJS.Timeout;
  gone: boolean;
  /** Why the thread ended, when it ended on an error (its heap limit: ERR_WORKER_OUT_OF_MEMORY). */
  error?: unknown;
}

const slots: Slot[] = [];
/** Callers waiting for a worker, first come first served. `give` is false once the caller stopped waiting (deadline, run end). */
const waiting: Array<{ give: (slot: Slot) => boolean }> = [];

/** Extraction worker threads alive in this process (for tests: a stopped one is gone). */
export function htmlWorkersAlive(): number {
  return slots.length;
}

/** The compiled worker next to this file, or (running from the TypeScript sources: tests) the same source bundled. */
const workerSpec = workerSource('./html-worker', import.meta.url);
/** Once resolved, kept: a worker can then be started synchronously (in drop(), for a waiter). */
let source: WorkerSource | undefined;

const DEADLINE_MESSAGE = "web_fetch: extracting the page's readable text did not finish within the call's deadline (web.fetch.timeoutMs) and was stopped";
const runEnded = (): CapCallError => new CapCallError('run_ended', 'the run ended before web_fetch extracted the page');

function spawn(from: WorkerSource): Slot {
  const worker = new Worker(from.source, { eval: from.eval, resourceLimits: { maxOldGenerationSizeMb: HEAP_MB } });
  const slot: Slot = { worker, busy: true, gone: false };
  // An idle worker never keeps the process alive; its uncaught error is followed by its exit, handled per job.
  worker.unref();
  worker.on('error', (err) => (slot.error = err));
  worker.once('exit', () => drop(slot));
  slots.push(slot);
  return slot;
}

/** A busy slot of ours: to the first caller still waiting, else idle (and ended after IDLE_MS). */
function offer(slot: Slot): void {
  while (waiting.length > 0) if (waiting.shift()!.give(slot)) return;
  slot.busy = false;
  slot.idle = setTimeout(() => drop(slot), IDLE_MS);
  slot.idle.unref();
}

function drop(slot: Slot): void {
  if (slot.gone) return;
  slot.gone = true;
  if (slot.idle) clearTimeout(slot.idle);
  const i = slots.indexOf(slot);
  if (i >= 0) slots.splice(i, 1);
  void slot.worker.terminate().catch(() => undefined);
  // Room for one more worker: a caller still waiting gets a new one at once.
  if (source && waiting.length > 0 && slots.length < MAX_HTML_WORKERS) offer(spawn(source));
}

function release(slot: Slot): void {
  if (!slot.gone) offer(slot);
}

/** A worker for one job: an idle one, a new one while there is room, else the next one freed, until `deadline` (performance.now() ms) or the run's end. */
function acquire(from: WorkerSource, deadline: number, signal?: AbortSignal): Promise<Slot> {
  if (signal?.aborted) return Promise.reject(runEnded());
  const idle = slots.find((s) => !s.busy && !s.gone);
  if (idle) {
    if (idle.idle) clearTimeout(idle.idle);
    idle.idle = undefined;
    idle.busy = true;
    return Promise.resolve(idle);
  }
  if (slots.length < MAX_HTML_WORKERS) return Promise.resolve(spawn(from));
  return new Promise<Slot>((resolve, reject) => {
    let done = false;
    const finish = (): void => {
      done = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      const i = waiting.indexOf(waiter);
      if (i >= 0) waiting.splice(i, 1);
    };
    const waiter = {
      give: (slot: Slot): boolean => {
        if (done) return false;
        finish();
        slot.busy = true;
        if (slot.idle) clearTimeout(slot.idle);
        slot.idle = undefined;
        resolve(slot);
        return true;
      },
    };
    // The wait counts against the call's deadline, like the extraction.
    const timer = setTimeout(
      () => {
        if (done) return;
        finish();
        reject(new CapCallError('timeout', DEADLINE_MESSAGE));
      },
      Math.max(1, deadline - performance.now()),
    );
    const onAbort = (): void => {
      if (done) return;
      finish();
      reject(runEnded());
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    waiting.push(waiter);
  });
}

/**
 * Starts a worker ahead of an HTML page (its headers are in, its body is on the
 * wire), so loading the extractor overlaps the download. Nothing when one is
 * idle or the pool is full.
 */
export function prewarmHtmlWorker(): void {
  const start = (from: WorkerSource): void => {
    if (slots.some((s) => !s.busy) || slots.length >= MAX_HTML_WORKERS) return;
    offer(spawn(from));
  };
  if (source) start(source);
  else
    void workerSpec().then(
      (from) => {
        source = from;
        start(from);
      },
      () => undefined,
    );
}

/** The page's title and readable text, extracted in a worker within `timeoutMs`. */
export async function extractHtmlInWorker(html: string, url: string, options: { timeoutMs: number; signal?: AbortSignal }): Promise<{ title: string; text: string }> {
  const { signal } = options;
  const deadline = performance.now() + options.timeoutMs;
  source ??= await workerSpec();
  const slot = await acquire(source, deadline, signal);
  return new Promise((resolve, reject) => {
    let settled = false;
    const settle = (): boolean => {
      if (settled) return false;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      slot.worker.off('message', onMessage);
      slot.worker.off('exit', onExit);
      return true;
    };
    const stop = (err: CapCallError): void => {
      if (!settle()) return;
      drop(slot);
      reject(err);
    };
    const timer = setTimeout(() => stop(new CapCallError('timeout', DEADLINE_MESSAGE)), Math.max(1, deadline - performance.now()));
    const onAbort = (): void => stop(runEnded());
    const onMessage = (msg: { title?: string; text?: string; error?: 'too_deep' | 'failed' }): void => {
      if (!settle()) return;
      if (msg.error) {
        release(slot);
        reject(new CapCallError('extraction_failed', msg.error === 'too_deep' ? 'web_fetch: the page is nested too deeply to extract' : 'web_fetch: the page could not be extracted'));
        return;
      }
      release(slot);
      resolve({ title: msg.title ?? '', text: msg.text ?? '' });
    };
    const onExit = (): void => {
      if (!settle()) return;
      const oom = (slot.error as { code?: string } | undefined)?.code === 'ERR_WORKER_OUT_OF_MEMORY';
      reject(new CapCallError('extraction_failed', oom ? `web_fetch: the page could not be extracted (it needs more than the extractor's ${HEAP_MB} MB)` : 'web_fetch: the page could not be extracted (the extractor stopped)'));
    };
    if (signal?.aborted) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    slot.worker.on('message', onMessage);
    slot.worker.once('exit', onExit);
    slot.worker.postMessage({ html, url });
  });
}
