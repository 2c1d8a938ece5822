/**
 * Queries of the memory index (migration 7). Pure SQL over a store handle:
 * what is indexed for a workspace, replacing one file's chunks, dropping a
 * file, and the ranked FTS5 match. The store never sees note text beyond
 * the FTS5 insert itself (the table is contentless).
 */
import type { Database } from './store.js';

export interface IndexedFile {
  path: string;
  mtimeMs: number;
  size: number;
  ino: number;
}

export interface Chunk {
  line: number;
  byteStart: number;
  byteLen: number;
  text: string;
}

export interface ChunkHit {
  path: string;
  line: number;
  byteStart: number;
  byteLen: number;
  /** bm25(): lower is better (negative). */
  rank: number;
}

export function indexedFiles(db: Database, workspace: string): Map<string, IndexedFile> {
  const rows = db.prepare('SELECT path, mtime_ms AS mtimeMs, size, ino FROM memory_files WHERE workspace = ?').all(workspace) as IndexedFile[];
  return new Map(rows.map((r) => [r.path, r]));
}

function dropChunks(db: Database, workspace: string, path: string): void {
  db.prepare('DELETE FROM memory_fts WHERE rowid IN (SELECT id FROM memory_chunks WHERE workspace = ? AND path = ?)').run(workspace, path);
  db.prepare('DELETE FROM memory_chunks WHERE workspace = ? AND path = ?').run(workspace, path);
}

/** Replaces one file's chunks in one transaction: a concurrent search sees the old rows or the new, never half. */
export function replaceFile(db: Database, workspace: string, file: IndexedFile, indexedBytes: number, chunks: readonly Chunk[]): void {
  const insertChunk = db.prepare('INSERT INTO memory_chunks (workspace, path, line, byte_start, byte_len) VALUES (?, ?, ?, ?, ?)');
  const insertText = db.prepare('INSERT INTO memory_fts (rowid, text) VALUES (?, ?)');
  db.transaction(() => {
    dropChunks(db, workspace, file.path);
    for (const c of chunks) {
      const id = insertChunk.run(workspace, file.path, c.line, c.byteStart, c.byteLen).lastInsertRowid;
      insertText.run(id, c.text);
    }
    db.prepare(
      `INSERT INTO memory_files (workspace, path, mtime_ms, size, ino, indexed_bytes, indexed_at) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (workspace, path) DO UPDATE SET mtime_ms = excluded.mtime_ms, size = excluded.size, ino = excluded.ino,
         indexed_bytes = excluded.indexed_bytes, indexed_at = excluded.indexed_at`,
    ).run(workspace, file.path, file.mtimeMs, file.size, file.ino, indexedBytes, Date.now());
  })();
}

/** Forgets files that are gone (or became unreadable to the jail, or links). */
export function dropFiles(db: Database, workspace: string, paths: readonly string[]): void {
  if (paths.length === 0) return;
  db.transaction(() => {
    for (const path of paths) {
      dropChunks(db, workspace, path);
      db.prepare('DELETE FROM memory_files WHERE workspace = ? AND path = ?').run(workspace, path);
    }
  })();
}

/** The best chunks of this workspace for an FTS5 query (already built from plain terms). */
export function matchChunks(db: Database, workspace: string, ftsQuery: string, limit: number): ChunkHit[] {
  return db
    .prepare(
      `SELECT c.path AS path, c.line AS line, c.byte_start AS byteStart, c.byte_len AS byteLen, bm25(memory_fts) AS rank
       FROM memory_fts JOIN memory_chunks c ON c.id = memory_fts.rowid
       WHERE memory_fts MATCH ? AND c.workspace = ?
       ORDER BY rank, c.path, c.line LIMIT ?`,
    )
    .all(ftsQuery, workspace, limit) as ChunkHit[];
}
