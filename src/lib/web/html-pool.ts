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
const waiting: Array<(slot: Slot) => void> = [];

/** Extraction worker threads alive in this process (for tests: a stopped one is gone). */
export function htmlWorkersAlive(): number {
  return slots.length;
}

/** The compiled worker next to this file, or (running from the TypeScript sources: tests) the same source bundled. */
const workerSpec = workerSource('./html-worker', import.meta.url);

function drop(slot: Slot): void {
  if (slot.gone) return;
  slot.gone = true;
  if (slot.idle) clearTimeout(slot.idle);
  const i = slots.indexOf(slot);
  if (i >= 0) slots.splice(i, 1);
  void slot.worker.terminate().catch(() => undefined);
  // Room for one more worker: the first caller waiting gets a new one.
  const next = waiting.shift();
  if (next)
    void workerSpec().then(
      (s) => next(spawn(s, true)),
      () => waiting.unshift(next),
    );
}

function spawn(source: WorkerSource, busy: boolean): Slot {
  const worker = new Worker(source.source, { eval: source.eval, resourceLimits: { maxOldGenerationSizeMb: HEAP_MB } });
  const slot: Slot = { worker, busy, gone: false };
  // An idle worker never keeps the process alive; its uncaught error is followed by its exit, handled per job.
  worker.unref();
  worker.on('error', (err) => (slot.error = err));
  worker.once('exit', () => drop(slot));
  slots.push(slot);
  return slot;
}

function release(slot: Slot): void {
  if (slot.gone) return;
  const next = waiting.shift();
  if (next) {
    next(slot);
    return;
  }
  slot.busy = false;
  slot.idle = setTimeout(() => drop(slot), IDLE_MS);
  slot.idle.unref();
}

async function acquire(signal?: AbortSignal): Promise<Slot> {
  const source = await workerSpec();
  const idle = slots.find((s) => !s.busy);
  if (idle) {
    if (idle.idle) clearTimeout(idle.idle);
    idle.idle = undefined;
    idle.busy = true;
    return idle;
  }
  if (slots.length < MAX_HTML_WORKERS) return spawn(source, true);
  return new Promise<Slot>((resolve, reject) => {
    const take = (slot: Slot): void => {
      signal?.removeEventListener('abort', onAbort);
      slot.busy = true;
      if (slot.idle) clearTimeout(slot.idle);
      slot.idle = undefined;
      resolve(slot);
    };
    const onAbort = (): void => {
      const i = waiting.indexOf(take);
      if (i >= 0) waiting.splice(i, 1);
      reject(new CapCallError('run_ended', 'the run ended before web_fetch extracted the page'));
    };
    if (signal?.aborted) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    waiting.push(take);
  });
}

/**
 * Starts a worker ahead of an HTML page (its headers are in, its body is on the
 * wire), so loading the extractor overlaps the download. Nothing when one is
 * idle or the pool is full.
 */
export function prewarmHtmlWorker(): void {
  if (slots.some((s) => !s.busy) || slots.length >= MAX_HTML_WORKERS) return;
  void workerSpec().then(
    (source) => {
      if (slots.some((s) => !s.busy) || slots.length >= MAX_HTML_WORKERS) return;
      release(spawn(source, true));
    },
    () => undefined,
  );
}

/** The page's title and readable text, extracted in a worker within `timeoutMs`. */
export async function extractHtmlInWorker(html: string, url: string, options: { timeoutMs: number; signal?: AbortSignal }): Promise<{ title: string; text: string }> {
  const { signal } = options;
  const slot = await acquire(signal);
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
    const timer = setTimeout(() => stop(new CapCallError('timeout', `web_fetch: extracting the page's readable text did not finish within the call's deadline (web.fetch.timeoutMs) and was stopped`)), Math.max(1, options.timeoutMs));
    const onAbort = (): void => stop(new CapCallError('run_ended', 'the run ended before web_fetch extracted the page'));
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
