/**
 * The walk of `<workspace>/memory/`, through the confinement module only:
 * each directory is listed from its own O_PATH handle and each name looked
 * up in it without following links, with the jail's permissions. A symlink
 * (to a file or a directory, in or out of the workspace) is skipped exactly
 * like a missing name; so is anything but a directory or a regular `.md` /
 * `.markdown` file, and anything the jail uid could not read.
 */
import { closeSync, type Stats } from 'node:fs';

import { ConfineError, listDir, lookup, MAX_PATH_DEPTH, openRoot, permits, resolve, type Handle, type Identity } from '../confine/index.js';

export interface MemoryFile {
  /** Relative to the workspace: `memory/…`. */
  path: string;
  mtimeMs: number;
  size: number;
  ino: number;
}

export interface MemoryWalk {
  files: Map<string, MemoryFile>;
  /** False when the entry bound stopped the walk: absent files may just be unvisited. */
  complete: boolean;
}

const MARKDOWN = /\.(md|markdown)$/i;

export function closeSafe(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    /* already closed */
  }
}

function fileOf(path: string, stat: Stats): MemoryFile {
  return { path, mtimeMs: Math.trunc(stat.mtimeMs), size: stat.size, ino: stat.ino };
}

export function walkMemory(workspaceReal: string, who: Identity, maxEntries: number): MemoryWalk {
  const files = new Map<string, MemoryFile>();
  let budget = maxEntries;
  let complete = true;
  const root = openRoot(workspaceReal);
  let memory: Handle;
  try {
    memory = resolve(root, ['memory'], who);
  } catch (err) {
    if (err instanceof ConfineError) return { files, complete: true }; // no memory/ (or a link, or not the jail's): nothing to index
    throw err;
  } finally {
    closeSync(root.fd);
  }
  const visit = (dir: Handle, depth: number): void => {
    const names = listDir(dir, who);
    if (!names) return;
    for (const name of names) {
      if (budget-- <= 0) {
        complete = false;
        return;
      }
      if (name.includes('\n')) continue; // a path that could not round-trip through the index
      const h = lookup(dir.fd, name);
      if (!h) continue;
      const path = `${dir.rel}/${name}`;
      try {
        if (h.stat.isDirectory()) {
          if (depth + 1 < MAX_PATH_DEPTH && permits(h.stat, who, 1)) visit({ fd: h.fd, stat: h.stat, rel: path }, depth + 1);
        } else if (h.stat.isFile() && MARKDOWN.test(name) && permits(h.stat, who, 4)) {
          files.set(path, fileOf(path, h.stat));
        }
      } finally {
        closeSync(h.fd);
      }
      if (!complete) return;
    }
  };
  try {
    if (memory.stat.isDirectory()) visit({ ...memory, rel: 'memory' }, 1);
  } finally {
    closeSync(memory.fd);
  }
  return { files, complete };
}
