/**
 * `memory_search` and `memory_get` (orch:read): the agent's memory is the
 * Markdown under `<workspace>/memory/`.
 *
 * Confined exactly like `read`: every path is walked component by component
 * through the confinement module (O_PATH|O_NOFOLLOW, the jail's permissions),
 * so a symlink anywhere under memory/ is answered like a missing name — it
 * is neither indexed nor followed — and a file swapped for a link between
 * the walk and the open is refused by the open itself.
 *
 * Indexing is incremental (a file is re-read only when its mtime, size or
 * inode changed) and bounded per call so the comis event loop is never held
 * for long: at most {@link MEMORY_BOUNDS}.filesPerCall files and
 * bytesPerCall bytes are (re)indexed per call, each file read in 64 KiB
 * async chunks and only its first fileBytes; what is left is reported as
 * `pending` and picked up by the next call. Results are the agent's own
 * files, so no untrusted envelope; snippets are one line, cut.
 */
import { close, read } from 'node:fs';
import { promisify } from 'node:util';

import { CapCallError } from '../capsocket/protocol.js';
import { closeSafe, walkMemory, type MemoryFile } from './memory-walk.js';
import { ConfineError, openConfinedFile, splitConfined } from '../confine/index.js';
import { maybeMaterializeValue } from '../resultref/materialize.js';
import type { ToolContext } from './context.js';
import { bestLine, chunkMarkdown, ftsQuery, queryTerms, type Chunk } from './memory-chunks.js';
import { readTool } from './read.js';

const readAsync = promisify(read);
const closeAsync = promisify(close);

export const MEMORY_BOUNDS = {
  /** Files (re)indexed by one call at most. */
  filesPerCall: 64,
  /** Bytes read for indexing by one call at most. */
  bytesPerCall: 4 * 1024 * 1024,
  /** Bytes of one file indexed at most (its head; the rest is not searchable). */
  fileBytes: 1024 * 1024,
  /** Directory entries the walk looks at per call. */
  walkEntries: 10_000,
  /** Snippet length, in characters. */
  snippetChars: 240,
};

export interface MemorySearchArgs {
  query: string;
  limit?: number | undefined;
}

export interface MemoryMatch {
  path: string;
  line: number;
  snippet: string;
  score: number;
}

/** A file as the index last saw it: a file is re-read only when one of these changed. */
export interface IndexedFile {
  path: string;
  mtimeMs: number;
  size: number;
  ino: number;
}

/** One ranked match of the index: where the chunk is in its file. */
export interface ChunkHit {
  path: string;
  line: number;
  byteStart: number;
  byteLen: number;
  /** bm25(): lower is better (negative). */
  rank: number;
}

/**
 * The memory index of one workspace, open for one call. Tools never reach the
 * store: orchestrate injects an opener over it (orchestrate/memory-index.ts),
 * and the tool closes what it opened before the call returns, so nothing holds
 * the store open across calls.
 */
export interface MemoryIndex {
  indexedFiles(workspace: string): Map<string, IndexedFile>;
  /** Replaces one file's chunks at once: a concurrent search sees the old rows or the new, never half. */
  replaceFile(workspace: string, file: IndexedFile, indexedBytes: number, chunks: readonly Chunk[]): void;
  dropFiles(workspace: string, paths: readonly string[]): void;
  /** The best chunks of this workspace for an FTS5 query (built by ftsQuery from plain terms). */
  matchChunks(workspace: string, ftsQuery: string, limit: number): ChunkHit[];
  close(): void;
}

export type OpenMemoryIndex = () => Promise<MemoryIndex>;

// One indexing pass per workspace at a time in this process: a script's parallel calls wait, not redo.
const inFlight = new Map<string, Promise<unknown>>();

async function serialized<T>(key: string, work: () => Promise<T>): Promise<T> {
  const before = inFlight.get(key) ?? Promise.resolve();
  const next = before.then(work, work);
  const settled = next.then(
    () => undefined,
    () => undefined,
  );
  inFlight.set(key, settled);
  try {
    return await next;
  } finally {
    if (inFlight.get(key) === settled) inFlight.delete(key);
  }
}

async function readHead(fd: number, max: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  let got = 0;
  while (got < max) {
    const buf = Buffer.allocUnsafe(Math.min(64 * 1024, max - got));
    const { bytesRead } = await readAsync(fd, buf, 0, buf.length, got);
    if (bytesRead === 0) break;
    parts.push(buf.subarray(0, bytesRead));
    got += bytesRead;
  }
  return Buffer.concat(parts, got);
}

/** Cuts a head at its last newline, so the last indexed line is whole. */
function wholeLines(data: Buffer, complete: boolean): Buffer {
  if (complete) return data;
  const nl = data.lastIndexOf(0x0a);
  return nl === -1 ? data : data.subarray(0, nl + 1);
}

function sameFile(a: { mtimeMs: number; size: number; ino: number }, b: { mtimeMs: number; size: number; ino: number }): boolean {
  return a.mtimeMs === b.mtimeMs && a.size === b.size && a.ino === b.ino;
}

/** Brings the index of this workspace up to date, within the per-call bounds. */
async function refresh(ctx: ToolContext, index: MemoryIndex): Promise<{ indexed: number; pending: number; current: Map<string, MemoryFile> }> {
  const walk = walkMemory(ctx.workspaceReal, ctx.jail, MEMORY_BOUNDS.walkEntries);
  const known = index.indexedFiles(ctx.workspaceReal);
  // Only a complete walk may conclude that a file is gone.
  if (walk.complete)
    index.dropFiles(
      ctx.workspaceReal,
      [...known.keys()].filter((p) => !walk.files.has(p)),
    );
  let indexed = 0;
  let pending = 0;
  let bytes = 0;
  for (const file of walk.files.values()) {
    const had = known.get(file.path);
    if (had && sameFile(had, file)) continue;
    const cost = Math.min(file.size, MEMORY_BOUNDS.fileBytes);
    if (indexed >= MEMORY_BOUNDS.filesPerCall || (indexed > 0 && bytes + cost > MEMORY_BOUNDS.bytesPerCall)) {
      pending++;
      continue;
    }
    let opened: { fd: number; stat: import('node:fs').Stats };
    try {
      opened = openConfinedFile(ctx.workspaceRoot ?? ctx.workspaceReal, file.path.split('/'), ctx.jail);
    } catch (err) {
      // Gone, swapped for a link, or made unreadable since the walk: not indexed (and forgotten).
      if (err instanceof ConfineError) {
        if (had) index.dropFiles(ctx.workspaceReal, [file.path]);
        continue;
      }
      throw err;
    }
    try {
      const stat = { path: file.path, mtimeMs: Math.trunc(opened.stat.mtimeMs), size: opened.stat.size, ino: opened.stat.ino };
      const head = await readHead(opened.fd, MEMORY_BOUNDS.fileBytes);
      const data = wholeLines(head, stat.size <= MEMORY_BOUNDS.fileBytes);
      index.replaceFile(ctx.workspaceReal, stat, data.length, chunkMarkdown(data));
      walk.files.set(file.path, { ...file, ...stat });
      bytes += head.length;
      indexed++;
    } finally {
      await closeAsync(opened.fd);
    }
    // Let other work of this process run between files.
    await new Promise((resolve) => setImmediate(resolve));
  }
  return { indexed, pending, current: walk.files };
}

/** The snippet of a hit, read back from the file through the confinement module; undefined when the file changed. */
async function snippetOf(ctx: ToolContext, hit: ChunkHit, terms: readonly string[], indexed: MemoryFile | undefined): Promise<MemoryMatch | undefined> {
  if (!indexed) return undefined;
  let opened: { fd: number; stat: import('node:fs').Stats };
  try {
    opened = openConfinedFile(ctx.workspaceRoot ?? ctx.workspaceReal, hit.path.split('/'), ctx.jail);
  } catch {
    return undefined;
  }
  try {
    if (!sameFile({ mtimeMs: Math.trunc(opened.stat.mtimeMs), size: opened.stat.size, ino: opened.stat.ino }, indexed)) return undefined;
    const buf = Buffer.alloc(hit.byteLen);
    const { bytesRead } = await readAsync(opened.fd, buf, 0, hit.byteLen, hit.byteStart);
    const best = bestLine(buf.subarray(0, bytesRead).toString('utf8'), terms);
    const text = best.text.trim();
    const snippet = text.length > MEMORY_BOUNDS.snippetChars ? `${text.slice(0, MEMORY_BOUNDS.snippetChars - 1)}…` : text;
    return { path: hit.path, line: hit.line + best.index, snippet, score: Math.round(-hit.rank * 1e6) / 1e6 };
  } finally {
    closeSafe(opened.fd);
  }
}

export async function memorySearchTool(ctx: ToolContext, openIndex: OpenMemoryIndex, args: MemorySearchArgs): Promise<unknown> {
  const terms = queryTerms(args.query);
  if (terms.length === 0) throw new CapCallError('invalid_params', 'memory_search: the query has no words to look for');
  const limit = args.limit ?? 10;
  const result = await serialized(ctx.workspaceReal, async () => {
    const index = await openIndex();
    try {
      const state = await refresh(ctx, index);
      // A few extra rows: a hit whose file changed since it was indexed is dropped, not shown stale.
      const hits = index.matchChunks(ctx.workspaceReal, ftsQuery(terms), limit + 8);
      const matches: MemoryMatch[] = [];
      for (const hit of hits) {
        if (matches.length >= limit) break;
        const m = await snippetOf(ctx, hit, terms, state.current.get(hit.path));
        if (m) matches.push(m);
      }
      return { matches, indexed: state.indexed, pending: state.pending };
    } finally {
      index.close();
    }
  });
  if (!ctx.results) return result;
  return maybeMaterializeValue(ctx.results, result, () => ({ text: JSON.stringify(result), nameHint: 'memory_search.json' }));
}

export const MARKDOWN_FILE = /\.(md|markdown)$/i;

/** `memory_get`: `read` of one Markdown file under memory/, with read's confinement, shape and ResultRef rule. */
export async function memoryGetTool(ctx: ToolContext, args: { path: string }): Promise<unknown> {
  const parts = splitConfined(args.path, ctx.jailWorkspace);
  if (parts.length < 2 || parts[0] !== 'memory') throw new CapCallError('path_outside', 'memory_get reads only files under memory/ (use read for the rest of the workspace)');
  if (!MARKDOWN_FILE.test(parts[parts.length - 1]!)) throw new CapCallError('invalid_path', 'memory_get reads Markdown files (.md, .markdown) only');
  return readTool(ctx, { path: parts.join('/') });
}
