/**
 * Daemon-side file access confined to a directory the jail can write to.
 *
 * The jail can swap any path component for a symlink at any moment, so a
 * check-then-open (`realpath`, then `open`) is a race it wins. Instead we
 * open first — without following a final symlink, without blocking on FIFOs —
 * then ask the kernel where the descriptor really points
 * (`/proc/self/fd/N`) and read only when that is inside the root. Whatever
 * the jail swaps after the open no longer matters: we read the descriptor.
 */
import { closeSync, constants, fstatSync, openSync, readlinkSync, readSync, type Stats } from 'node:fs';
import { isAbsolute, normalize, posix, relative, sep } from 'node:path';

import { CapCallError } from '../capsocket/server.js';

export interface ConfinedFile {
  fd: number;
  stat: Stats;
  /** Path relative to the root. */
  relPath: string;
}

/**
 * Lexically resolves a script-given path against the root. Accepts relative
 * paths, and absolute paths under `jailRoot` (the root as the script sees it);
 * refuses `..` escapes and any other absolute path.
 */
export function resolveConfined(root: string, given: string, jailRoot: string): string {
  if (given.includes('\0')) throw new CapCallError('invalid_path', 'path contains a NUL byte');
  let rel = given;
  if (isAbsolute(given)) {
    const inside = posix.relative(jailRoot, posix.normalize(given));
    if (inside.startsWith('..') || isAbsolute(inside)) throw new CapCallError('path_outside', `absolute path outside the workspace: use a path relative to ${jailRoot}`);
    rel = inside === '' ? '.' : inside;
  }
  const normalized = normalize(rel);
  if (normalized === '..' || normalized.startsWith(`..${sep}`)) throw new CapCallError('path_outside', 'path escapes the workspace ("..")');
  return normalized;
}

function realPathOf(fd: number): string {
  return readlinkSync(`/proc/self/fd/${fd}`);
}

function inside(rootReal: string, real: string): boolean {
  return real === rootReal || real.startsWith(rootReal.endsWith('/') ? rootReal : `${rootReal}/`);
}

/** Opens `rel` under `rootReal` for reading; refuses anything whose real path is outside. */
export function openConfinedRead(rootReal: string, rel: string, expect: 'file' | 'any' = 'file'): ConfinedFile {
  const full = `${rootReal}/${rel}`;
  let fd: number;
  try {
    fd = openSync(full, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') throw new CapCallError('not_found', `no such file: ${rel}`);
    if (code === 'ELOOP') throw new CapCallError('path_outside', `refusing to follow a symlink: ${rel}`);
    if (code === 'EACCES') throw new CapCallError('permission_denied', `permission denied: ${rel}`);
    throw new CapCallError('io_error', `cannot open ${rel} (${code ?? 'error'})`);
  }
  try {
    const real = realPathOf(fd);
    if (!inside(rootReal, real)) throw new CapCallError('path_outside', `path resolves outside the workspace: ${rel}`);
    const stat = fstatSync(fd);
    if (expect === 'file' && !stat.isFile()) throw new CapCallError('not_a_file', `not a regular file: ${rel}`);
    return { fd, stat, relPath: relative(rootReal, real) || '.' };
  } catch (err) {
    closeSync(fd);
    throw err;
  }
}

/** Reads up to `maxBytes` from an open descriptor. */
export function readAllFd(fd: number, size: number, maxBytes: number): Buffer {
  const want = Math.min(size, maxBytes);
  const buf = Buffer.allocUnsafe(want);
  let got = 0;
  while (got < want) {
    const n = readSync(fd, buf, got, want - got, got);
    if (n === 0) break;
    got += n;
  }
  return buf.subarray(0, got);
}

export { realPathOf as descriptorPath };
