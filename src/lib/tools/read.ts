import { close, closeSync, read, readSync } from 'node:fs';
import { promisify } from 'node:util';

import { CapCallError } from '../capsocket/protocol.js';
import { openConfinedFile, splitConfined } from '../confine/index.js';
import { materializeFdAsync, maybeMaterializeValue } from '../resultref/materialize.js';
import type { ToolContext } from './context.js';

const readAsync = promisify(read);
const closeAsync = promisify(close);

/** Files up to this size are always read to the end, so their slices carry `totalLines`. */
export const COUNT_ALL_LINES_BYTES = 1024 * 1024;
const CHUNK_BYTES = 64 * 1024;
/**
 * Files up to this size are read and closed with synchronous calls: from the
 * page cache that takes microseconds, while each hop through libuv's thread
 * pool costs tens (hundreds on a busy machine), and a tool call is mostly
 * small reads. Bigger files keep the asynchronous path (never blocking the loop).
 */
export const SYNC_READ_BYTES = 64 * 1024;

export interface ReadArgs {
  path: string;
  offset?: number | undefined;
  limit?: number | undefined;
}

/**
 * `read`: lines of a workspace file, resolved through the confinement module
 * (no link followed, the jail's own permissions). A whole-file read over the
 * inline threshold is copied into a ResultRef; a slice is streamed from the
 * fd in 64 KiB chunks, through libuv, and stops as soon as it has its lines:
 * `limit: 1` of an 8 MiB file reads one chunk and never blocks the event
 * loop. Only files up to 1 MiB are read to the end to count `totalLines`.
 */
export async function readTool(ctx: ToolContext, args: ReadArgs): Promise<unknown> {
  const parts = splitConfined(args.path, ctx.jailWorkspace);
  const file = openConfinedFile(ctx.workspaceRoot ?? ctx.workspaceReal, parts, ctx.jail);
  const rel = file.rel;
  const small = file.stat.size <= SYNC_READ_BYTES;
  try {
    const whole = args.offset === undefined && args.limit === undefined;
    if (ctx.results && whole && file.stat.size > ctx.results.thresholdBytes) {
      return await materializeFdAsync(ctx.results, file.fd, file.stat.size, rel);
    }
    if (whole && file.stat.size > ctx.maxReadBytes) {
      throw new CapCallError('too_large', `file is ${file.stat.size} bytes, over the ${ctx.maxReadBytes}-byte read cap: slice it with offset/limit`);
    }
    const slice = (small && whole ? readWholeSmall(file.fd, file.stat.size, ctx.maxReadBytes) : undefined) ?? (await readLines(file.fd, args.offset ?? 0, args.limit, file.stat.size, ctx.maxReadBytes, small));
    const result: Record<string, unknown> = {
      path: rel,
      content: slice.content,
      offset: args.offset ?? 0,
      lines: slice.lines,
    };
    if (slice.totalLines !== undefined) result.totalLines = slice.totalLines;
    result.bytes = file.stat.size;
    result.truncated = slice.truncated;
    if (!ctx.results) return result;
    return maybeMaterializeValue(ctx.results, result, () => ({ text: slice.content, nameHint: rel }));
  } finally {
    if (small) closeSync(file.fd);
    else await closeAsync(file.fd);
  }
}

interface Lines {
  content: string;
  lines: number;
  totalLines?: number;
  truncated: boolean;
}

/**
 * A whole small file, as `readLines` answers it, from one read and one decode:
 * its lines are the text's (no per-line copies, decodes and join, which cost
 * more than the read itself once a file has more than a few lines). Undefined
 * when the file grew past its fstat size: `readLines` then reads on to its end.
 */
function readWholeSmall(fd: number, size: number, maxBytes: number): Lines | undefined {
  const buf = Buffer.allocUnsafe(size + 1);
  const n = readSync(fd, buf, 0, buf.length, 0);
  if (n > size) return undefined;
  const data = buf.subarray(0, n);
  let newlines = 0;
  for (let nl = data.indexOf(0x0a); nl !== -1; nl = data.indexOf(0x0a, nl + 1)) newlines++;
  const endsWithNewline = n > 0 && data[n - 1] === 0x0a;
  const lines = endsWithNewline || n === 0 ? newlines : newlines + 1;
  // What readLines charges against the cap: each line's bytes and one for its newline.
  if (n + (endsWithNewline || n === 0 ? 0 : 1) > maxBytes) throw new CapCallError('too_large', `the requested lines are over the ${maxBytes}-byte read cap: ask for fewer (limit)`);
  return { content: data.toString('utf8', 0, endsWithNewline ? n - 1 : n), lines, totalLines: lines, truncated: false };
}

/**
 * Lines [offset, offset+limit) of the fd, the way `text.split('\n')` counts
 * them (a final newline ends the last line, it does not start one).
 */
async function readLines(fd: number, offset: number, limit: number | undefined, size: number, maxBytes: number, sync: boolean): Promise<Lines> {
  const end = limit === undefined ? Infinity : offset + limit;
  const countAll = size <= COUNT_ALL_LINES_BYTES;
  const kept: Buffer[] = [];
  let keptBytes = 0;
  let line = 0; // index of the line being scanned
  let pos = 0;
  let pendingLine = false; // bytes seen after the last newline
  // A small file needs no 64 KiB buffer: one byte over its size sees the end in the same read.
  const buf = Buffer.allocUnsafe(sync ? Math.min(CHUNK_BYTES, size + 1) : CHUNK_BYTES);
  const keep = (piece: Buffer): void => {
    keptBytes += piece.length + 1;
    if (keptBytes > maxBytes) throw new CapCallError('too_large', `the requested lines are over the ${maxBytes}-byte read cap: ask for fewer (limit)`);
    kept.push(Buffer.from(piece));
  };
  let current: Buffer[] = [];
  for (;;) {
    if (!countAll && line >= end) {
      // Enough lines: anything left in the file is at least one more line.
      return { content: joinLines(kept), lines: kept.length, truncated: pos < size };
    }
    const bytesRead = sync ? readSync(fd, buf, 0, buf.length, pos) : (await readAsync(fd, buf, 0, buf.length, pos)).bytesRead;
    if (bytesRead === 0) break;
    pos += bytesRead;
    const chunk = buf.subarray(0, bytesRead);
    let start = 0;
    for (let nl = chunk.indexOf(0x0a); nl !== -1; nl = chunk.indexOf(0x0a, start)) {
      if (line >= offset && line < end) {
        current.push(chunk.subarray(start, nl));
        keep(current.length === 1 ? current[0]! : Buffer.concat(current));
      }
      current = [];
      line++;
      start = nl + 1;
      if (!countAll && line >= end) {
        pendingLine = start < chunk.length;
        break;
      }
    }
    if (!countAll && line >= end) {
      return { content: joinLines(kept), lines: kept.length, truncated: pendingLine || pos < size };
    }
    if (start < chunk.length) {
      if (line >= offset && line < end) {
        current.push(Buffer.from(chunk.subarray(start)));
        if (current.reduce((n, b) => n + b.length, 0) + keptBytes > maxBytes) keep(Buffer.concat(current));
      }
      pendingLine = true;
    } else pendingLine = false;
    // A short read of a regular file is its end: no second read to be told so (a small file is one pread).
    if (bytesRead < buf.length) break;
  }
  if (pendingLine) {
    if (line >= offset && line < end) keep(Buffer.concat(current));
    line++;
  }
  return { content: joinLines(kept), lines: kept.length, totalLines: line, truncated: end < line };
}

function joinLines(lines: Buffer[]): string {
  return lines.map((l) => l.toString('utf8')).join('\n');
}
