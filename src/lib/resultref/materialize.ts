/**
 * ResultRef: a high-volume tool return written to the run's `results/`
 * directory instead of being inlined. The call returns a small handle
 * `{type: 'ResultRef', ref, kind, bytes, rows?, schema?, preview, expiresAt}`
 * where `ref` is relative to the run workspace (`results/ref-3.jsonl`), so the
 * jailed script can slice it in place and only the slice re-enters context.
 *
 * Bounds: a per-file cap, a per-run aggregate cap (shared with `write`) and a
 * TTL; exceeding a cap is a clear error and never a partial file presented as
 * whole. The directory lives outside the jail-writable workspace (bound
 * read-only) and is removed when the run ends.
 */
import { close, closeSync, ftruncate, read, readSync, renameSync, rm, rmSync, write, writeSync, writev, writevSync } from 'node:fs';
import { promisify } from 'node:util';

import { CapCallError } from '../capsocket/protocol.js';
import { createFile, ENTRY_COST_BYTES, openRoot, procPath } from '../confine/index.js';

const readAsync = promisify(read);
const writeAsync = promisify(write);
const writevAsync = promisify(writev);
const closeAsync = promisify(close);
const ftruncateAsync = promisify(ftruncate);
const rmAsync = promisify(rm);

export const RESULT_KINDS = ['json', 'jsonl', 'csv', 'text'] as const;
export type ResultKind = (typeof RESULT_KINDS)[number];

export interface ResultRefHandle {
  type: 'ResultRef';
  ref: string;
  kind: ResultKind;
  bytes: number;
  rows?: number;
  schema?: string[];
  preview: string;
  expiresAt: number;
}

export const RESULTREF_DEFAULTS = {
  thresholdBytes: 15_000,
  maxFileBytes: 8 * 1024 * 1024,
  maxRunBytes: 64 * 1024 * 1024,
  ttlMs: 30 * 60 * 1000,
  previewBytes: 2048,
};

/** Per-run state of the results area. */
export interface ResultStore {
  /** Host path of `results/`. */
  dir: string;
  thresholdBytes: number;
  maxFileBytes: number;
  ttlMs: number;
  budget: { remainingBytes: number };
  /** Refs materialized so far: what savings and the run record count. */
  materialized: { count: number; bytes: number };
  refs: Map<string, ResultRefHandle>;
  nextId: number;
  /**
   * The run's end: a store given one keeps a spare ref file (see
   * {@link RefStream}), deleted when it fires. Without one, every ref file
   * is created by the call that needs it.
   */
  ended?: AbortSignal;
  /** An empty ref file created after a call's reply, for the next RefStream to take. */
  spare?: SpareFile;
  /** A spare's creation is scheduled (one at a time). */
  spareScheduled?: boolean;
  /** Spares created so far: each gets its own name. */
  spareSeq?: number;
}

/** An empty temp file in `results/`, open for writing, under its own held directory handle. */
interface SpareFile {
  dirFd: number;
  fd: number;
  name: string;
}

export function createResultStore(dir: string, options: Partial<typeof RESULTREF_DEFAULTS> & { budget: { remainingBytes: number }; ended?: AbortSignal }): ResultStore {
  const store: ResultStore = {
    dir,
    thresholdBytes: options.thresholdBytes ?? RESULTREF_DEFAULTS.thresholdBytes,
    maxFileBytes: options.maxFileBytes ?? RESULTREF_DEFAULTS.maxFileBytes,
    ttlMs: options.ttlMs ?? RESULTREF_DEFAULTS.ttlMs,
    budget: options.budget,
    materialized: { count: 0, bytes: 0 },
    refs: new Map(),
    nextId: 1,
  };
  const ended = options.ended;
  if (ended && !ended.aborted) {
    store.ended = ended;
    ended.addEventListener('abort', () => dropSpare(store), { once: true });
  }
  return store;
}

/** Deletes the store's spare, if it holds one (the run ended): nothing of it is left in `results/`. */
function dropSpare(store: ResultStore): void {
  const spare = store.spare;
  store.spare = undefined;
  if (!spare) return;
  try {
    closeSync(spare.fd);
    rmSync(procPath(spare.dirFd, spare.name), { force: true });
  } catch {
    /* the run's directory is removed with everything in it */
  } finally {
    closeSync(spare.dirFd);
  }
}

/**
 * Creates the store's next spare ref file once the current call is done
 * (setImmediate: after the reply has been written, while the loop waits for
 * the script's next call), so the next ref a call makes costs no create on
 * its path (~0.1-0.14 ms of a 1 MB web_fetch here, the create of a file in
 * an ext4 directory). Same flags and mode as the file it stands in for
 * (O_CREAT|O_EXCL|O_NOFOLLOW under a held O_PATH handle of `results/`),
 * which the jail sees read-only. Sync, so a run's end never races an
 * in-flight create: the end's listener deletes what is there.
 */
function scheduleSpare(store: ResultStore): void {
  if (!store.ended || store.ended.aborted || store.spare || store.spareScheduled) return;
  store.spareScheduled = true;
  setImmediate(() => {
    store.spareScheduled = false;
    if (!store.ended || store.ended.aborted || store.spare) return;
    let root;
    try {
      root = openRoot(store.dir);
    } catch {
      return; // no spare: the next ref creates its own file, and reports its own error
    }
    const name = `.spare-${(store.spareSeq = (store.spareSeq ?? 0) + 1)}.partial`;
    try {
      store.spare = { dirFd: root.fd, fd: createFile(root, name, 0o644), name };
    } catch {
      closeSync(root.fd);
    }
  });
}

/** Cuts a preview at a UTF-8 boundary, at most `max` bytes. */
export function previewOf(data: Buffer, max = RESULTREF_DEFAULTS.previewBytes): string {
  if (data.length <= max) return data.toString('utf8');
  let end = max;
  while (end > 0 && (data[end]! & 0xc0) === 0x80) end--;
  return data.subarray(0, end).toString('utf8');
}

/** Guesses the kind from the head of the payload (and a name hint). */
export function detectKind(head: string, nameHint = ''): ResultKind {
  const name = nameHint.toLowerCase();
  if (name.endsWith('.jsonl') || name.endsWith('.ndjson')) return 'jsonl';
  if (name.endsWith('.csv')) return 'csv';
  const t = head.trimStart();
  if (t.startsWith('{') || t.startsWith('[')) {
    // Only what parses as JSON is JSON: `[INFO] started` and `{user} logged in` are text.
    const shape = jsonHeadShape(t);
    if (shape !== 'invalid') return shape;
  }
  if (name.endsWith('.json')) return 'json';
  const lines = head.split('\n').slice(0, 5).filter(Boolean);
  if (lines.length >= 2) {
    const commas = lines.map((l) => (l.match(/,/g) ?? []).length);
    if (commas[0]! > 0 && commas.every((c) => c === commas[0])) return 'csv';
  }
  return 'text';
}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const LITERALS = ['true', 'false', 'null'];

/**
 * Whether `text` (the head of a payload, possibly cut anywhere) is the beginning of
 * one JSON document (`json`), of several newline-separated ones (`jsonl`), or of
 * neither (`invalid`). A scanner, not a parser: it checks the grammar up to the
 * first error and accepts a head that ends mid-value.
 */
export function jsonHeadShape(text: string): 'json' | 'jsonl' | 'invalid' {
  type Want = 'value' | 'value_or_close' | 'key' | 'key_or_close' | 'colon' | 'comma_or_close';
  const stack: ('{' | '[')[] = [];
  let want: Want = 'value';
  let docs = 0;
  let i = 0;
  const n = text.length;
  const skipSpace = (): boolean => {
    let newline = false;
    for (; i < n && (text[i] === ' ' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r'); i++) if (text[i] === '\n') newline = true;
    return newline;
  };
  /** Scans a string at `i` (on its quote); false on a bad escape or a control character. */
  const scanString = (): boolean => {
    i++;
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        i++;
        return true;
      }
      if (c < 0x20) return false;
      if (c === 0x5c) {
        const e = text[i + 1];
        if (e === undefined) return ((i = n), true);
        if (e === 'u') {
          const hex = text.slice(i + 2, i + 6);
          if (!/^[0-9a-fA-F]*$/.test(hex)) return false;
          i += 6;
          continue;
        }
        if (!'"\\/bfnrt'.includes(e)) return false;
        i += 2;
        continue;
      }
      i++;
    }
    return true;
  };
  const closeValue = (): void => {
    if (stack.length === 0) {
      docs++;
      want = 'value';
    } else want = 'comma_or_close';
  };
  while (true) {
    const newline = skipSpace();
    if (i >= n) break;
    const c = text[i]!;
    if (stack.length === 0 && docs > 0 && !newline) return 'invalid';
    if (want === 'value' || want === 'value_or_close') {
      if (want === 'value_or_close' && c === ']') {
        stack.pop();
        i++;
        closeValue();
      } else if (c === '{' || c === '[') {
        stack.push(c);
        i++;
        want = c === '{' ? 'key_or_close' : 'value_or_close';
      } else if (c === '"') {
        if (!scanString()) return 'invalid';
        closeValue();
      } else if (c === '-' || (c >= '0' && c <= '9')) {
        NUMBER.lastIndex = i;
        if (!NUMBER.exec(text)) return i === n - 1 && c === '-' ? ((i = n), 'json') : 'invalid';
        i = NUMBER.lastIndex;
        if (i < n && !' \t\r\n,]}'.includes(text[i]!)) return 'invalid';
        closeValue();
      } else {
        const rest = text.slice(i, i + 5);
        const lit = LITERALS.find((l) => rest.startsWith(l) || (i + rest.length === n && l.startsWith(rest)));
        if (!lit) return 'invalid';
        i += Math.min(lit.length, rest.length);
        closeValue();
      }
    } else if (want === 'key' || want === 'key_or_close') {
      if (want === 'key_or_close' && c === '}') {
        stack.pop();
        i++;
        closeValue();
      } else if (c === '"') {
        if (!scanString()) return 'invalid';
        want = 'colon';
      } else return 'invalid';
    } else if (want === 'colon') {
      if (c !== ':') return 'invalid';
      i++;
      want = 'value';
    } else {
      const open = stack[stack.length - 1];
      if (c === ',') {
        i++;
        want = open === '{' ? 'key' : 'value';
      } else if ((c === '}' && open === '{') || (c === ']' && open === '[')) {
        stack.pop();
        i++;
        closeValue();
      } else return 'invalid';
    }
  }
  return docs > 1 || (docs === 1 && stack.length > 0) ? 'jsonl' : 'json';
}

const EXT: Record<ResultKind, string> = { json: 'json', jsonl: 'jsonl', csv: 'csv', text: 'txt' };

function schemaOf(kind: ResultKind, head: string): string[] | undefined {
  try {
    if (kind === 'csv')
      return head
        .split('\n', 1)[0]!
        .split(',')
        .map((s) => s.trim().replace(/^"|"$/g, ''))
        .slice(0, 200);
    if (kind === 'jsonl') {
      const first = JSON.parse(head.split('\n', 1)[0]!) as unknown;
      if (first && typeof first === 'object' && !Array.isArray(first)) return Object.keys(first).slice(0, 200);
    }
  } catch {
    /* no schema */
  }
  return undefined;
}

/**
 * A new ref file, created through the confinement module: relative to a
 * handle on the results directory, exclusively, never through a link. Its
 * entry is charged to the run's budget up front (an empty ref is not free).
 */
interface RefFile {
  id: number;
  dirFd: number;
  tmpName: string;
  fd: number;
  /** Bytes the payload may still take (per-file cap and the budget left after the entry). */
  limit: number;
}

function openRefFile(store: ResultStore): RefFile {
  if (store.budget.remainingBytes < ENTRY_COST_BYTES) {
    throw new CapCallError('result_too_large', `the result exceeds this run's remaining results budget (${store.budget.remainingBytes} bytes); narrow the request`);
  }
  const id = store.nextId++;
  const root = openRoot(store.dir);
  const tmpName = `.ref-${id}.partial`;
  let fd: number;
  try {
    fd = createFile(root, tmpName, 0o644);
  } catch (err) {
    closeSync(root.fd);
    throw new CapCallError('io_error', `cannot create a ResultRef (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  store.budget.remainingBytes -= ENTRY_COST_BYTES;
  return { id, dirFd: root.fd, tmpName, fd, limit: Math.min(store.maxFileBytes, store.budget.remainingBytes) };
}

function tooLarge(store: ResultStore, total: number): CapCallError {
  const which = total > store.maxFileBytes ? `the per-file cap of ${store.maxFileBytes} bytes` : `this run's remaining results budget (${store.budget.remainingBytes} bytes)`;
  return new CapCallError('result_too_large', `the result exceeds ${which}; narrow the request`);
}

/** Tracks what a payload needs for its handle while it streams through. */
class Tally {
  bytes = 0;
  newlines = 0;
  lastByte = 0x0a;
  head = Buffer.alloc(0);
  add(chunk: Buffer): void {
    if (this.head.length < 64 * 1024) this.head = Buffer.concat([this.head, chunk.subarray(0, 64 * 1024 - this.head.length)]);
    for (let i = chunk.indexOf(0x0a); i !== -1; i = chunk.indexOf(0x0a, i + 1)) this.newlines++;
    if (chunk.length > 0) this.lastByte = chunk[chunk.length - 1]!;
    this.bytes += chunk.length;
  }
}

function abandon(store: ResultStore, file: RefFile): void {
  closeSync(file.fd);
  rmSync(procPath(file.dirFd, file.tmpName), { force: true });
  closeSync(file.dirFd);
  store.budget.remainingBytes += ENTRY_COST_BYTES;
}

/** `known`: the kind the producer knows (web_fetch: from the Content-Type); otherwise guessed from the head. */
function finish(store: ResultStore, file: RefFile, nameHint: string, tally: Tally, known?: ResultKind): ResultRefHandle {
  closeSync(file.fd);
  const headText = tally.head.toString('utf8');
  const kind = known ?? detectKind(headText, nameHint);
  const name = `ref-${file.id}.${EXT[kind]}`;
  try {
    renameSync(procPath(file.dirFd, file.tmpName), procPath(file.dirFd, name));
  } finally {
    closeSync(file.dirFd);
  }
  store.budget.remainingBytes -= tally.bytes;
  return register(store, name, kind, tally, headText);
}

/** A ref file now in place under `name`: counted, its handle built and remembered. Its bytes are already charged. */
function register(store: ResultStore, name: string, kind: ResultKind, tally: { bytes: number; newlines: number; lastByte: number; head: Buffer }, headText = tally.head.toString('utf8')): ResultRefHandle {
  const ref = `results/${name}`;
  const bytes = tally.bytes;
  store.materialized.count++;
  store.materialized.bytes += bytes;
  const handle: ResultRefHandle = { type: 'ResultRef', ref, kind, bytes, preview: previewOf(tally.head), expiresAt: Date.now() + store.ttlMs };
  const lines = tally.newlines + (tally.lastByte === 0x0a || bytes === 0 ? 0 : 1);
  if (kind === 'jsonl') handle.rows = lines;
  if (kind === 'csv') handle.rows = Math.max(0, lines - 1);
  const schema = schemaOf(kind, headText);
  if (schema) handle.schema = schema;
  store.refs.set(ref, handle);
  return handle;
}

/**
 * Bytes queued before a RefStream hands them to the thread pool in one writev.
 * Queued chunks are the producer's own buffers (web_fetch's body chunks, which
 * it keeps until the call ends anyway), so a large batch holds no extra
 * memory; each writev is a thread-pool round trip (~30-100 µs of CPU on this
 * VM), which is what a 1 MB body's eight 128 KiB writes cost more than the
 * bytes themselves. A 1 MB payload written at once is one writev at commit.
 */
const STREAM_FLUSH_BYTES = 4 * 1024 * 1024;
/**
 * A last batch up to this size (a text page's payload, ~50 KB) is written at
 * commit in place, one writev on the loop (~30-80 µs here): the thread pool's
 * round trip cost more than that, and under load its wake-up waited for a core
 * (the web_fetch bench: ~0.13 ms of wall and CPU per 50 KB call). Bigger
 * batches still go through the pool: a megabyte never holds the event loop. A
 * stream whose bytes arrive over time writes each batch of this size in place
 * as it fills ({@link RefStream.writeQueued}).
 */
const SYNC_WRITE_BYTES = 256 * 1024;
const HEAD_BYTES = 64 * 1024;

/** `bufs` past their first `written` bytes: where a short write goes on from (empty when all were written). */
function unwritten(bufs: Buffer[], written: number): Buffer[] {
  const rest: Buffer[] = [];
  let skip = written;
  for (const b of bufs) {
    if (skip >= b.length) skip -= b.length;
    else {
      rest.push(skip > 0 ? b.subarray(skip) : b);
      skip = 0;
    }
  }
  return rest;
}

function ioError(err: unknown): CapCallError {
  return err instanceof CapCallError ? err : new CapCallError('io_error', `cannot write a ResultRef (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
}

/**
 * A ResultRef written while its bytes arrive (web_fetch streams a body into
 * it as the network delivers it). The file is created exclusively under a
 * temp name through the confinement module (one sync open, like `read`'s) and
 * its bytes written through libuv's thread pool in batches of up to 4 MiB (a
 * last batch of up to 256 KiB in place at commit; a producer whose bytes
 * arrive over time writes each 256 KiB batch in place as it fills, see
 * {@link writeQueued}), so a megabyte of writes never holds the event loop;
 * each chunk is checked against the per-file cap and reserved from the run's
 * budget as it is queued (concurrent streams cannot overrun it together). {@link commit} renames the file into place and returns its
 * handle; {@link abort} (or a failed commit) deletes it and gives the
 * reservation back: a cut or failed stream never leaves a ref behind.
 */
export class RefStream {
  private readonly id: number;
  private readonly dirFd: number;
  private readonly tmpName: string;
  private fd: number | undefined;
  /** The open, then each writev in order. */
  private chain: Promise<void>;
  /** Operations queued on `chain` and not settled yet: while any is, a write in place would overtake it. */
  private inFlight = 0;
  private failure: CapCallError | undefined;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private flushed = 0;
  private state: 'open' | 'committed' | 'aborted' = 'open';
  private readonly headParts: Buffer[] = [];
  private headBytes = 0;
  /** Bytes queued so far (all reserved from the budget). */
  bytes = 0;
  newlines = 0;
  lastByte = 0x0a;

  constructor(private readonly store: ResultStore) {
    if (store.budget.remainingBytes < ENTRY_COST_BYTES) {
      throw new CapCallError('result_too_large', `the result exceeds this run's remaining results budget (${store.budget.remainingBytes} bytes); narrow the request`);
    }
    const spare = store.spare;
    store.spare = undefined;
    if (spare) {
      // A spare made after an earlier call: this ref's file exists already.
      this.id = store.nextId++;
      this.dirFd = spare.dirFd;
      this.tmpName = spare.name;
      this.fd = spare.fd;
      store.budget.remainingBytes -= ENTRY_COST_BYTES;
      this.chain = Promise.resolve();
      scheduleSpare(store);
      return;
    }
    let root;
    try {
      root = openRoot(store.dir);
    } catch (err) {
      throw new CapCallError('io_error', `cannot create a ResultRef (${(err as { code?: string }).code ?? 'error'})`);
    }
    this.id = store.nextId++;
    this.dirFd = root.fd;
    this.tmpName = `.ref-${this.id}.partial`;
    // The create is one sync syscall (~30 µs here): through the thread pool it cost the event
    // loop more than that (the request, the worker's wake-up and the completion, 60-120 µs).
    try {
      this.fd = createFile(root, this.tmpName, 0o644);
    } catch (err) {
      closeSync(this.dirFd);
      throw new CapCallError('io_error', `cannot create a ResultRef (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    store.budget.remainingBytes -= ENTRY_COST_BYTES;
    this.chain = Promise.resolve();
    scheduleSpare(store);
  }

  /**
   * Queues `chunk` (not copied: the caller must not reuse it). Throws
   * result_too_large, with nothing queued, when it would pass the per-file
   * cap or the run's budget; `newlines`, when the caller counted them already.
   */
  write(chunk: Buffer, newlines?: number): void {
    if (this.state !== 'open') throw new CapCallError('io_error', 'this ResultRef is no longer being written');
    if (this.failure) throw this.failure;
    if (this.bytes + chunk.length > this.store.maxFileBytes || chunk.length > this.store.budget.remainingBytes) throw tooLarge(this.store, this.bytes + chunk.length);
    if (chunk.length === 0) return;
    this.store.budget.remainingBytes -= chunk.length;
    this.bytes += chunk.length;
    if (newlines !== undefined) this.newlines += newlines;
    else for (let i = chunk.indexOf(0x0a); i !== -1; i = chunk.indexOf(0x0a, i + 1)) this.newlines++;
    this.lastByte = chunk[chunk.length - 1]!;
    if (this.headBytes < HEAD_BYTES) {
      const part = chunk.subarray(0, HEAD_BYTES - this.headBytes);
      this.headParts.push(part);
      this.headBytes += part.length;
    }
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    if (this.pendingBytes >= STREAM_FLUSH_BYTES) this.flush();
  }

  /**
   * Drops every byte past `length`: the caller cuts a partial last row and
   * knows the dropped bytes hold no LF and byte `length - 1` is one.
   */
  cutAfterLine(length: number): void {
    if (length >= this.bytes) return;
    this.flush();
    this.store.budget.remainingBytes += this.bytes - length;
    this.bytes = length;
    this.lastByte = 0x0a;
    if (this.headBytes > length) {
      const head = Buffer.concat(this.headParts).subarray(0, length);
      this.headParts.splice(0, this.headParts.length, head);
      this.headBytes = length;
    }
    this.enqueue(() => ftruncateAsync(this.fd!, length));
  }

  /** Empties the file (a streamed body left the clean path): the next byte written is its first again. */
  reset(): void {
    if (this.state !== 'open') return;
    this.pending = [];
    this.pendingBytes = 0;
    this.store.budget.remainingBytes += this.bytes;
    this.bytes = 0;
    this.flushed = 0;
    this.newlines = 0;
    this.lastByte = 0x0a;
    this.headParts.length = 0;
    this.headBytes = 0;
    this.enqueue(() => ftruncateAsync(this.fd!, 0));
  }

  /** Runs `op` on the open file after everything queued before it; its error is the stream's failure (the commit's). */
  private enqueue(op: () => Promise<unknown>): void {
    this.inFlight++;
    this.chain = this.chain.then(async () => {
      try {
        if (!this.failure && this.fd !== undefined) await op();
      } catch (err) {
        this.failure ??= ioError(err);
      } finally {
        this.inFlight--;
      }
    });
  }

  /**
   * Writes the queued bytes in place once they reach SYNC_WRITE_BYTES and
   * nothing queued before them is still in flight: for a producer whose
   * bytes arrive over time (web_fetch's streamed CSV), each in-place write
   * holds the loop for one batch (~30 µs here) between two reads of the
   * body, while a thread-pool write cost the loop more than the write itself
   * (its submission took ~0.25 ms of a 1 MB commit under load, the worker
   * waking on the loop's own core) and the reply waited for it.
   */
  writeQueued(): void {
    if (this.state === 'open' && this.inFlight === 0 && this.pendingBytes >= SYNC_WRITE_BYTES) this.flushSync();
  }

  private flush(): void {
    if (this.pending.length === 0) return;
    const bufs = this.pending;
    const position = this.flushed;
    this.pending = [];
    this.flushed += this.pendingBytes;
    this.pendingBytes = 0;
    this.enqueue(async () => {
      for (let rest = bufs, pos = position; rest.length > 0;) {
        const { bytesWritten } = await writevAsync(this.fd!, rest, pos);
        if (bytesWritten === 0) throw new CapCallError('io_error', 'cannot write a ResultRef (short write)');
        pos += bytesWritten;
        rest = unwritten(rest, bytesWritten);
      }
    });
  }

  /** Writes what is queued in place, after everything queued before it (nothing is in flight). */
  private flushSync(): void {
    const bufs = this.pending;
    let pos = this.flushed;
    this.pending = [];
    this.flushed += this.pendingBytes;
    this.pendingBytes = 0;
    if (this.failure || this.fd === undefined) return;
    try {
      for (let rest = bufs; rest.length > 0;) {
        const bytesWritten = writevSync(this.fd, rest, pos);
        if (bytesWritten === 0) throw new CapCallError('io_error', 'cannot write a ResultRef (short write)');
        pos += bytesWritten;
        rest = unwritten(rest, bytesWritten);
      }
    } catch (err) {
      this.failure ??= ioError(err);
    }
  }

  /** Writes what is queued, renames the file into place as `ref-N.<ext>` and returns its handle. */
  async commit(kind: ResultKind): Promise<ResultRefHandle> {
    if (this.state !== 'open') throw new CapCallError('io_error', 'this ResultRef is no longer being written');
    if (this.pendingBytes > SYNC_WRITE_BYTES) this.flush();
    await this.chain;
    if (this.pending.length > 0) this.flushSync();
    if (this.failure) {
      await this.abort();
      throw this.failure;
    }
    this.state = 'committed';
    const name = `ref-${this.id}.${EXT[kind]}`;
    const fd = this.fd!;
    this.fd = undefined;
    // The rename and the close are sync: two syscalls of a few µs each, cheaper for the event
    // loop than two thread-pool round trips.
    let failed: unknown;
    let renamed = false;
    try {
      renameSync(procPath(this.dirFd, this.tmpName), procPath(this.dirFd, name));
      renamed = true;
    } catch (err) {
      failed = err;
    }
    try {
      closeSync(fd);
    } catch (err) {
      failed ??= err;
    }
    if (failed !== undefined) {
      rmSync(procPath(this.dirFd, renamed ? name : this.tmpName), { force: true });
      closeSync(this.dirFd);
      this.store.budget.remainingBytes += this.bytes + ENTRY_COST_BYTES;
      throw ioError(failed);
    }
    closeSync(this.dirFd);
    // The handle needs the preview's bytes and, for CSV and JSONL, the first line's text (the
    // schema): only those are joined and decoded, not the whole 64 KiB head. One byte past the
    // preview lets previewOf cut at the same UTF-8 boundary; a line decoded through its LF is the
    // same text as the whole head decoded (nothing before an ASCII byte depends on what follows).
    const preview = this.headPrefix(RESULTREF_DEFAULTS.previewBytes + 1);
    const headText = kind === 'csv' || kind === 'jsonl' ? this.headPrefix(this.firstLineEnd()).toString('utf8') : '';
    return register(this.store, name, kind, { bytes: this.bytes, newlines: this.newlines, lastByte: this.lastByte, head: preview }, headText);
  }

  /** The first `n` bytes of the head (all of it when shorter). */
  private headPrefix(n: number): Buffer {
    const first = this.headParts[0];
    if (first && first.length >= n) return first.subarray(0, n);
    return Buffer.concat(this.headParts, Math.min(n, this.headBytes));
  }

  /** Bytes of the head through its first LF (the whole head when it has none). */
  private firstLineEnd(): number {
    let at = 0;
    for (const part of this.headParts) {
      const lf = part.indexOf(0x0a);
      if (lf !== -1) return at + lf + 1;
      at += part.length;
    }
    return this.headBytes;
  }

  /** Deletes the temp file and gives its reservation back; safe to call more than once, and after a failed commit. */
  async abort(): Promise<void> {
    if (this.state !== 'open') return;
    this.state = 'aborted';
    this.pending = [];
    await this.chain.catch(() => undefined);
    if (this.fd !== undefined) await closeAsync(this.fd).catch(() => undefined);
    this.fd = undefined;
    await rmAsync(procPath(this.dirFd, this.tmpName), { force: true }).catch(() => undefined);
    closeSync(this.dirFd);
    this.store.budget.remainingBytes += this.bytes + ENTRY_COST_BYTES;
  }
}

/**
 * `data` as a new ResultRef of `kind`, written through a {@link RefStream}
 * (the event loop never waits on it): `into`, an empty one opened already
 * (web_fetch opens it while the body is still arriving), or a new one.
 * `newlines`: the LFs in `data`, when the producer counted them already.
 */
export async function materializeAsync(store: ResultStore, data: Buffer, kind: ResultKind, into?: RefStream, newlines?: number): Promise<ResultRefHandle> {
  const out = into ?? new RefStream(store);
  try {
    // The whole count goes with the first chunk: only the total is kept.
    for (let off = 0; off < data.length; off += 1 << 18) out.write(data.subarray(off, off + (1 << 18)), newlines === undefined ? undefined : off === 0 ? newlines : 0);
    return await out.commit(kind);
  } catch (err) {
    await out.abort();
    throw err;
  }
}

/**
 * Streams `source(write)` into a new ref file, enforcing the caps as bytes
 * arrive; on any cap the partial file is deleted and a tool error thrown.
 */
export function materialize(store: ResultStore, nameHint: string, produce: (write: (chunk: Buffer) => void) => void, kind?: ResultKind): ResultRefHandle {
  const file = openRefFile(store);
  const tally = new Tally();
  try {
    produce((chunk) => {
      if (tally.bytes + chunk.length > file.limit) {
        throw tooLarge(store, tally.bytes + chunk.length);
      }
      let off = 0;
      while (off < chunk.length) off += writeSync(file.fd, chunk, off, chunk.length - off);
      tally.add(chunk);
    });
  } catch (err) {
    abandon(store, file);
    throw err;
  }
  return finish(store, file, nameHint, tally, kind);
}

/** Materializes an in-memory value when its serialized size is over the threshold; else returns it as is. */
export function maybeMaterializeValue<T>(store: ResultStore, value: T, serialize: () => { text: string; nameHint: string }): T | ResultRefHandle {
  const { text, nameHint } = serialize();
  if (Buffer.byteLength(text, 'utf8') <= store.thresholdBytes) return value;
  const data = Buffer.from(text, 'utf8');
  return materialize(store, nameHint, (write) => {
    for (let off = 0; off < data.length; off += 1 << 20) write(data.subarray(off, off + (1 << 20)));
  });
}

/** Copies an open file descriptor into a ref, in chunks: the payload never sits whole in memory. */
export function materializeFd(store: ResultStore, fd: number, nameHint: string): ResultRefHandle {
  return materialize(store, nameHint, (write) => {
    const buf = Buffer.allocUnsafe(1 << 20);
    let pos = 0;
    for (;;) {
      const n = readSync(fd, buf, 0, buf.length, pos);
      if (n === 0) break;
      pos += n;
      write(buf.subarray(0, n));
    }
  });
}

/**
 * The same copy without blocking the event loop: reads and writes go
 * through libuv in 256 KiB chunks. A file whose size (known from fstat) is
 * already over the caps is refused before a byte is copied; the budget is
 * reserved up front, so concurrent copies cannot overrun it together.
 */
export async function materializeFdAsync(store: ResultStore, fd: number, size: number, nameHint: string): Promise<ResultRefHandle> {
  const limit = Math.min(store.maxFileBytes, store.budget.remainingBytes - ENTRY_COST_BYTES);
  if (size > limit) throw tooLarge(store, size);
  const file = openRefFile(store);
  store.budget.remainingBytes -= size; // reservation; settled in finish()
  const tally = new Tally();
  try {
    const buf = Buffer.allocUnsafe(256 * 1024);
    for (;;) {
      const { bytesRead } = await readAsync(fd, buf, 0, buf.length, tally.bytes);
      if (bytesRead === 0) break;
      // The file may have grown since fstat: never past the reservation.
      if (tally.bytes + bytesRead > size) throw new CapCallError('result_too_large', 'the file grew while it was copied; read it again');
      const chunk = buf.subarray(0, bytesRead);
      let off = 0;
      while (off < chunk.length) off += (await writeAsync(file.fd, chunk, off, chunk.length - off)).bytesWritten;
      tally.add(chunk);
    }
  } catch (err) {
    store.budget.remainingBytes += size;
    abandon(store, file);
    throw err;
  }
  store.budget.remainingBytes += size;
  return finish(store, file, nameHint, tally);
}

/** Looks up a live ref of this run; refuses unknown or expired ones. */
export function liveRef(store: ResultStore, ref: unknown): ResultRefHandle {
  const handle = typeof ref === 'string' ? store.refs.get(ref) : undefined;
  if (!handle) throw new CapCallError('unknown_ref', 'no such ResultRef in this run');
  if (Date.now() >= handle.expiresAt) throw new CapCallError('ref_expired', 'this ResultRef has expired (TTL passed); fetch it again');
  return handle;
}

/** The savings estimate of seed 001: materialized bytes minus stdout re-entered, over ~4 bytes per token. */
export function estimateSavings(materializedBytes: number, stdoutChars: number): { estSavedTokens: number; savedRatio?: number } | undefined {
  if (materializedBytes <= 0) return undefined;
  const estSavedTokens = Math.max(0, Math.floor((materializedBytes - stdoutChars) / 4));
  const wouldBe = materializedBytes / 4;
  return { estSavedTokens, savedRatio: Math.round((estSavedTokens / wouldBe) * 1000) / 1000 };
}
