/**
 * Where web_fetch's body goes while it arrives. Every decoded chunk is kept
 * (by reference, never copied: at most maxResponseBytes, the cut guardedGet
 * applies) for the extraction of HTML, JSON, JSONL and text at the end. A CSV
 * body is data returned whole: while its chunks are clean ASCII (the
 * sanitizer would return them unchanged; see isCleanAscii, checked by the
 * SIMD kernel of clean-scan.ts) they are written
 * straight into the ResultRef file as they arrive, their rows counted in the
 * same pass, so at the end there is nothing left to join, decode, sanitize or
 * write. The check runs per chunk and across each chunk boundary (the last
 * eight bytes before it with the next chunk's first eight: "untrusted" split
 * over two chunks, or over several tiny ones, is still seen). The first chunk
 * that is not clean ends the streaming: the partial file is deleted and the
 * whole body takes the exact path of today (joined, decoded, sanitized), so a
 * sequence split across a boundary (a combining mark, a marker, a tag
 * character's surrogates) is sanitized as one text.
 */
import { CapCallError } from '../capsocket/protocol.js';
import { RefStream, type ResultRefHandle, type ResultStore } from '../resultref/materialize.js';
import { cleanLines } from './clean-scan.js';
import { bodyKindOf, decodesAsUtf8, headOf, type BodyKind } from './extract.js';

const EMPTY = Buffer.alloc(0);
/** One byte short of "untrusted": what a boundary window takes from each side. */
const WINDOW = 8;
/** More than an envelope's head and tail take (an origin is quoted at most 512 chars). */
const ENVELOPE_ROOM = 2048;

function unsupported(contentType: string): CapCallError {
  return new CapCallError('unsupported_content_type', `web_fetch: ${contentType.split(';', 1)[0] || 'this content'} is not text or data; web_fetch returns HTML, JSON, JSONL, CSV and text`);
}

/** What a streamed CSV body came to: its ResultRef, or (at or under the threshold) its bytes to return inline. */
export type StreamedCsv = { handle: ResultRefHandle } | { inline: Buffer };

export class PageSink {
  /** The decoded body as it arrived. */
  readonly chunks: Buffer[] = [];
  size = 0;
  contentType = '';
  private kind: BodyKind | undefined;
  /** Streaming a clean CSV body into `ref` (false once a chunk is not clean, or the stream was refused). */
  private streaming = false;
  private lines = 0;
  /** The last (up to) WINDOW bytes of the body so far. */
  private tail: Buffer = EMPTY;
  private ref: RefStream | undefined;
  /** Chunks already written into `ref`. */
  private written = 0;
  /** LFs in the last chunk checked. */
  private lastLines = 0;
  /** The run's results budget had no room for a ref when one was wanted. */
  private noRef = false;

  /**
   * `results`: the run's ResultRef store (absent: everything inline, nothing
   * streamed); `maxChars`: the call's text bound (a text payload that cannot
   * pass the threshold never gets a file opened early). `fast: false` sends
   * every body down the slow path (tests).
   */
  constructor(
    private readonly results: ResultStore | undefined,
    private readonly maxChars: number,
    private readonly fast = true,
  ) {}

  /** The kind its Content-Type declared (undefined before open(), or for a response without one). */
  get declaredKind(): BodyKind | undefined {
    return this.kind;
  }

  /** The BodySink of guardedGet: a typed body that is not text or data is refused before it is read. */
  open(contentType: string): (chunk: Buffer) => void {
    this.contentType = contentType;
    if (contentType.split(';', 1)[0]!.trim() !== '') {
      this.kind = bodyKindOf(contentType, EMPTY);
      if (!this.kind) throw unsupported(contentType);
    }
    this.streaming = this.fast && this.kind === 'csv' && this.results !== undefined && decodesAsUtf8(contentType);
    // Text (html, text) is cut at maxChars: at most 3 bytes a char and the envelope.
    if (this.results && (this.kind === 'html' || this.kind === 'text') && this.maxChars * 3 + ENVELOPE_ROOM <= this.results.thresholdBytes) this.noRef = true;
    return (chunk) => this.push(chunk);
  }

  private push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.size += chunk.length;
    const store = this.results;
    if (!store || this.size <= store.thresholdBytes) {
      if (this.streaming) this.check(chunk);
      return;
    }
    // Past the inline threshold the payload will most likely be a ResultRef: its file is created
    // now, while the rest of the body is on the wire (a small payload at the end deletes it).
    if (!this.ref && !this.noRef) {
      try {
        this.ref = new RefStream(store);
      } catch {
        // No room for another ref: the end decides (and reports) as before.
        this.noRef = true;
        this.streaming = false;
      }
    }
    if (!this.streaming || !this.check(chunk)) return;
    try {
      for (; this.written < this.chunks.length; this.written++) {
        const c = this.chunks[this.written]!;
        this.ref!.write(c, this.written === this.chunks.length - 1 ? this.lastLines : undefined);
      }
      // Each batch goes to the file while the rest of the body is on the wire: at the end only a
      // last partial batch is left to write before the handle is answered.
      this.ref!.writeQueued();
    } catch {
      // Over a cap while streaming: the end decides on the payload the slow way (a cut CSV may
      // still fit), with the same errors as before.
      this.drop();
    }
  }

  /** Checks a chunk of a streamed CSV (and the boundary before it); false, and streaming stops, when not clean. */
  private check(chunk: Buffer): boolean {
    const lines = cleanLines(chunk);
    if (lines < 0 || !this.boundaryClean(chunk)) {
      this.drop();
      return false;
    }
    this.lines += lines;
    this.lastLines = lines;
    this.tail = chunk.length >= WINDOW ? chunk.subarray(chunk.length - WINDOW) : Buffer.concat([this.tail, chunk]).subarray(-WINDOW);
    return true;
  }

  /** No "untrusted" runs across the boundary between the body so far and `chunk` (both clean ASCII). */
  private boundaryClean(chunk: Buffer): boolean {
    if (this.tail.length === 0) return true;
    return cleanLines(Buffer.concat([this.tail, chunk.subarray(0, WINDOW)])) >= 0;
  }

  /** Stops streaming: what was written is dropped (the file emptied), and the body goes down the path of today at the end. */
  private drop(): void {
    this.streaming = false;
    this.ref?.reset();
  }

  /** The body kind, sniffed from the head when the response had no Content-Type. Throws for a binary body. */
  async finalKind(): Promise<BodyKind> {
    this.kind ??= bodyKindOf(this.contentType, headOf(this.chunks, 1024));
    if (!this.kind) throw unsupported(this.contentType);
    return this.kind;
  }

  /**
   * A CSV body streamed whole and clean: its ResultRef (cut after its last
   * full row when the body was cut at maxResponseBytes, as the fast path of
   * extract.ts cuts it), or its bytes when they fit inline. Undefined when
   * the body was not streamed: the caller extracts it.
   */
  async finishCsv(truncated: boolean): Promise<StreamedCsv | undefined> {
    if (!this.streaming) return undefined;
    let end = this.size;
    if (truncated && this.lines > 0) {
      for (let k = this.chunks.length - 1, base = this.size; k >= 0; k--) {
        const c = this.chunks[k]!;
        base -= c.length;
        const nl = c.lastIndexOf(0x0a);
        if (nl !== -1) {
          end = base + nl + 1;
          break;
        }
      }
    }
    const store = this.results!;
    if (end <= store.thresholdBytes || !this.ref) {
      await this.abort();
      return { inline: headOf(this.chunks, end) };
    }
    this.ref.cutAfterLine(end);
    const ref = this.ref;
    this.ref = undefined;
    return { handle: await ref.commit('csv') };
  }

  /**
   * The ref file opened while the body arrived, empty, for the extracted
   * payload (undefined when none was opened). The sink keeps it: abort()
   * still deletes it unless it was committed.
   */
  emptyRef(): RefStream | undefined {
    return this.ref && this.ref.bytes === 0 ? this.ref : undefined;
  }

  /** Deletes a ref file not committed (the call failed, or its payload went inline): nothing partial is left. */
  async abort(): Promise<void> {
    this.streaming = false;
    const ref = this.ref;
    this.ref = undefined;
    if (ref) await ref.abort();
  }
}
