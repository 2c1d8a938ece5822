/**
 * `write`: the typed write surface (off by default; `autonomy.write: true`).
 *
 * Every path lands under this run's `results/writes/` area, which lives
 * outside the jail-writable workspace and is bound into the jail read-only;
 * the area is reaped at run end. `..`, absolute paths and the
 * skill-discovery/config subtrees are refused, so a jailed turn can never
 * plant a cross-run skill.
 *
 * The path goes through the confinement module: every existing component is
 * looked up without following links and checked BEFORE anything is created
 * or truncated, so a refused write changes nothing. Each directory and file
 * it creates is charged to the run's results budget (one block each) and
 * the depth is capped: empty writes cannot mint directories for free.
 */
import { closeSync, fstatSync, ftruncateSync, lstatSync, writeSync } from 'node:fs';

import { CapCallError } from '../capsocket/protocol.js';
import { createFile, ENTRY_COST_BYTES, lookup, makeDir, MAX_PATH_DEPTH, openFileForWrite, openRoot, procPath, type Handle } from '../confine/index.js';
import type { ToolContext } from './context.js';

const FORBIDDEN_ROOTS = new Set(['skills', '.learned-skills', 'memory', 'config', '.comis']);

export interface WriteArgs {
  path: string;
  content: string;
}

/** Lexical checks: a relative path naming a file, no `..` anywhere, not too deep, no forbidden subtree. */
export function writeComponents(given: string): string[] {
  if (given.includes('\0')) throw new CapCallError('invalid_path', 'path contains a NUL byte');
  if (given.startsWith('/')) throw new CapCallError('path_outside', 'write takes a path relative to results/writes, not an absolute path');
  if (given.endsWith('/')) throw new CapCallError('path_outside', 'write path must name a file inside results/writes (no "..")');
  const parts = given.split('/').filter((p) => p !== '' && p !== '.');
  // Any ".." is refused, even one that would stay inside: a write names its file plainly.
  if (parts.length === 0 || parts.includes('..')) throw new CapCallError('path_outside', 'write path must name a file inside results/writes (no "..")');
  if (parts.length > MAX_PATH_DEPTH) throw new CapCallError('too_deep', `write path is ${parts.length} components deep; the limit is ${MAX_PATH_DEPTH}`);
  if (parts.some((p) => FORBIDDEN_ROOTS.has(p.toLowerCase()))) {
    throw new CapCallError('path_forbidden', 'write may not target the skills/, .learned-skills/, memory or config subtrees');
  }
  return parts;
}

export function writeTool(ctx: ToolContext, args: WriteArgs): unknown {
  const parts = writeComponents(args.path);
  const data = Buffer.from(args.content, 'utf8');
  const handles: Handle[] = [];
  const root = openRoot(ctx.writesDir);
  handles.push(root);
  try {
    // 1. Walk what exists, creating nothing.
    let dir = root;
    let i = 0;
    // lookup() answers a link like a missing name; here a missing name will be created, so tell them apart first.
    const absent = (name: string): boolean => {
      try {
        lstatSync(procPath(dir.fd, name));
      } catch {
        return true;
      }
      return false;
    };
    const refuseLink = (upTo: number): never => {
      throw new CapCallError('not_found', `no such file or directory: results/writes/${parts.slice(0, upTo + 1).join('/')}`);
    };
    for (; i < parts.length - 1; i++) {
      const next = lookup(dir.fd, parts[i]!);
      if (!next) {
        if (!absent(parts[i]!)) refuseLink(i);
        break;
      }
      const h = { ...next, rel: parts.slice(0, i + 1).join('/') };
      handles.push(h);
      if (!h.stat.isDirectory()) throw new CapCallError('path_outside', `results/writes/${h.rel} is not a directory`);
      dir = h;
    }
    let existing: Handle | undefined;
    if (i === parts.length - 1) {
      const last = lookup(dir.fd, parts[i]!);
      if (!last && !absent(parts[i]!)) refuseLink(i);
      if (last) {
        existing = { ...last, rel: parts.join('/') };
        handles.push(existing);
        // A planted hard link (or anything but a plain file of ours) is refused before anything changes.
        if (!last.stat.isFile() || last.stat.nlink !== 1) throw new CapCallError('path_outside', 'refusing to write through a link');
      }
    }
    // 2. Charge everything it will create, then create it.
    const newEntries = existing ? 0 : parts.length - i;
    const cost = data.length + newEntries * ENTRY_COST_BYTES;
    if (cost > ctx.budget.remainingBytes) {
      throw new CapCallError('quota_exceeded', `this run's results area has ${ctx.budget.remainingBytes} bytes left; the write needs ${cost} (${data.length} of content, ${newEntries} new entries at ${ENTRY_COST_BYTES} bytes each)`);
    }
    ctx.budget.remainingBytes -= newEntries * ENTRY_COST_BYTES;
    for (; i < parts.length - 1; i++) {
      dir = makeDir(dir, parts[i]!, 0o755);
      handles.push(dir);
    }
    let fd: number;
    try {
      fd = existing ? openFileForWrite(existing) : createFile(dir, parts[parts.length - 1]!, 0o644);
    } catch (err) {
      if (err instanceof CapCallError) throw err;
      throw new CapCallError('io_error', `cannot write results/writes/${parts.join('/')} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    try {
      const st = fstatSync(fd);
      if (!st.isFile() || st.nlink !== 1) throw new CapCallError('path_outside', 'refusing to write through a link');
      ftruncateSync(fd, 0);
      let off = 0;
      while (off < data.length) off += writeSync(fd, data, off, data.length - off);
    } finally {
      closeSync(fd);
    }
    ctx.budget.remainingBytes -= data.length;
    return { path: `results/writes/${parts.join('/')}`, bytes: data.length };
  } finally {
    for (const h of handles) closeSync(h.fd);
  }
}
