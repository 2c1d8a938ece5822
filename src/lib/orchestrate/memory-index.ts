/**
 * The memory index that `memory_search` is given: the store's memory tables
 * (migration 7, store/memory-index.ts) behind the tool's own MemoryIndex
 * interface, so the tool never reaches the store (DESIGN.md §9). One store
 * handle per call, closed by the tool when the call ends. The store's modules
 * load on the first memory_search of a process, never on a run's hot path.
 */
import type { MemoryIndex } from '../tools/memory.js';

export async function openMemoryIndex(home: string): Promise<MemoryIndex> {
  const [{ openStore }, rows] = await Promise.all([import('../store/store.js'), import('../store/memory-index.js')]);
  const store = openStore({ home });
  const { db } = store;
  return {
    indexedFiles: (workspace) => rows.indexedFiles(db, workspace),
    replaceFile: (workspace, file, indexedBytes, chunks) => rows.replaceFile(db, workspace, file, indexedBytes, chunks),
    dropFiles: (workspace, paths) => rows.dropFiles(db, workspace, paths),
    matchChunks: (workspace, ftsQuery, limit) => rows.matchChunks(db, workspace, ftsQuery, limit),
    close: () => store.close(),
  };
}
