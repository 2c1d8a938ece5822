/**
 * The grep worker: walks and searches under the workspace in its own thread
 * (a catastrophic pattern is stopped by terminating the thread). It does
 * not repeat the confinement logic, it uses the same module as every other
 * daemon-side reader: each name looked up without following links, the
 * jail's permissions, no object but regular files and directories opened.
 */
import { closeSync, readSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';

import { ConfineError, listDir, lookup, MAX_PATH_DEPTH, openFileForRead, openRoot, resolve, type Handle, type Identity } from '../confine/index.js';

interface GrepWorkerData {
  rootReal: string;
  startParts: string[];
  who: Identity;
  source: string;
  flags: string;
  globSource?: string;
  maxMatches: number;
  limits: { maxFiles: number; maxFileBytes: number; maxTotalBytes: number };
}

const data = workerData as GrepWorkerData;
const re = new RegExp(data.source, data.flags);
const globRe = data.globSource ? new RegExp(data.globSource) : null;
const matches: { path: string; line: number; text: string }[] = [];
let filesScanned = 0;
let totalBytes = 0;
let truncated = false;

function full(): boolean {
  if (matches.length >= data.maxMatches || filesScanned >= data.limits.maxFiles || totalBytes >= data.limits.maxTotalBytes) truncated = true;
  return truncated;
}

function scanFile(h: Handle, strict: boolean): void {
  if (full()) return;
  if (h.stat.size > data.limits.maxFileBytes) return;
  let fd: number;
  try {
    fd = openFileForRead(h, data.who);
  } catch (err) {
    if (strict) throw err;
    return; // unreadable by the jail: the jail could not grep it either
  }
  try {
    const size = Math.min(h.stat.size, data.limits.maxFileBytes);
    const buf = Buffer.allocUnsafe(size);
    let got = 0;
    while (got < size) {
      const n = readSync(fd, buf, got, size - got, got);
      if (n === 0) break;
      got += n;
    }
    filesScanned++;
    totalBytes += got;
    const bytes = buf.subarray(0, got);
    if (bytes.subarray(0, 8000).includes(0)) return; // binary
    const lines = bytes.toString('utf8').split('\n');
    for (let i = 0; i < lines.length; i++) {
      re.lastIndex = 0;
      if (re.test(lines[i]!)) {
        const text = lines[i]!;
        matches.push({ path: h.rel, line: i + 1, text: text.length > 1000 ? text.slice(0, 1000) : text });
        if (matches.length >= data.maxMatches) {
          truncated = true;
          return;
        }
      }
    }
  } finally {
    closeSync(fd);
  }
}

function walk(dir: Handle, depth: number): void {
  const names = listDir(dir, data.who);
  if (!names) return;
  for (const name of names) {
    if (full()) return;
    const found = lookup(dir.fd, name);
    if (!found) continue; // a symlink (or gone meanwhile): never followed, never reported
    const child: Handle = { ...found, rel: dir.rel === '.' ? name : `${dir.rel}/${name}` };
    try {
      if (child.stat.isDirectory()) {
        if (depth < MAX_PATH_DEPTH) walk(child, depth + 1);
      } else if (child.stat.isFile() && (!globRe || globRe.test(child.rel))) scanFile(child, false);
    } finally {
      closeSync(child.fd);
    }
  }
}

try {
  const root = openRoot(data.rootReal);
  const start = resolve(root, data.startParts, data.who);
  closeSync(root.fd);
  try {
    if (start.stat.isDirectory()) walk(start, data.startParts.length);
    else if (start.stat.isFile()) scanFile(start, true);
  } finally {
    closeSync(start.fd);
  }
  parentPort!.postMessage({ result: { matches, filesScanned, truncated } });
} catch (err) {
  if (err instanceof ConfineError) parentPort!.postMessage({ error: { code: err.code, message: err.message } });
  else parentPort!.postMessage({ error: { code: 'internal', message: 'grep failed daemon-side' } });
}
