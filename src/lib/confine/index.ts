/**
 * The one path-confinement module: how daemon-side code (read, grep and its
 * worker, write, ResultRef materialisation, the DuckDB results audit) turns
 * a path into an open file without ever touching anything outside a root.
 *
 * The jail can swap any component for a symlink at any moment, and comis may
 * run as root, so neither `realpath` nor "open, then look where it points"
 * is enough: both open (or stat) the outside object first — a host FIFO's
 * blocked writer is released, a root-only directory answers differently
 * from a missing one. Instead every component is looked up on its own:
 *
 * - from a directory fd, through `/proc/<pid>/fd/<dirfd>/<name>` (Node has no
 *   openat), with `O_PATH | O_NOFOLLOW`: the kernel resolves exactly one
 *   name in exactly that directory and opens nothing (no FIFO, device or
 *   driver open, no read, no automount of the final name);
 * - `fstat` on that handle decides: a symlink is answered exactly like a
 *   missing name (so a link out of the root is no oracle on host paths),
 *   only directories and regular files go on;
 * - the permission bits are checked against the JAIL's identity, because
 *   comis as root would otherwise read files the jail uid itself cannot;
 * - only then is a regular file reopened for real (`O_NONBLOCK`) through
 *   its own handle, so the object read is the object checked.
 *
 * The last name of a file to read (`openConfinedFile`) is the exception: it
 * is opened for reading at once, `O_NOFOLLOW | O_NONBLOCK`, from its confined
 * directory, and its fstat then decides. That name can only be what the
 * jail made in a directory of its own (no device node with a driver, no link
 * to a host FIFO across its mounts), so the open has no effect outside the jail's
 * own objects, and a `read` pays one open through `/proc` instead of two.
 *
 * Imports nothing but `node:fs`: the grep worker bundles this file as is.
 */
import { chmodSync, closeSync, constants, copyFileSync, fstatSync, lstatSync, mkdirSync, openSync, readdirSync, type Stats } from 'node:fs';

/** `O_PATH` on Linux (absent from Node's constants). */
export const O_PATH = 0o10000000;
const O_DIRECTORY = constants.O_DIRECTORY ?? 0o200000;
const O_CLOEXEC = 0o2000000;

/** Deepest path (in components) any daemon-side tool resolves or creates. */
export const MAX_PATH_DEPTH = 32;

/** What the results budget is charged for each entry (directory or file) comis creates: one block. */
export const ENTRY_COST_BYTES = 4096;

/** A refusal with a stable code; the tool layer turns it into a reply for the script. */
export class ConfineError extends Error {
  constructor(
    readonly code: 'not_found' | 'permission_denied' | 'not_a_file' | 'path_outside' | 'invalid_path' | 'too_deep' | 'io_error',
    message: string,
  ) {
    super(message);
    this.name = 'ConfineError';
  }
}

/** The host identity whose view the tools act with (the run's jail uid/gid). */
export interface Identity {
  uid: number;
  gid: number;
}

/** An `O_PATH` handle and what fstat said of it. The caller closes `fd`. */
export interface Handle {
  fd: number;
  stat: Stats;
  /** Components from the root, joined with "/" ("." for the root). */
  rel: string;
}

/**
 * This process's fd directory, named by its pid rather than through the `/proc/self` link: one
 * link less to resolve on every confined lookup (~0.3 µs of each open, two opens a `read`).
 */
const FD_DIR = `/proc/${process.pid}/fd`;

export function procPath(dirFd: number, name?: string): string {
  return name === undefined ? `${FD_DIR}/${dirFd}` : `${FD_DIR}/${dirFd}/${name}`;
}

/**
 * Splits a script-given path into components under the root. Accepts
 * relative paths and absolute paths under `jailRoot` (the root as the script
 * sees it); refuses NUL, `..` escapes and any other absolute path. Purely
 * lexical: it reveals nothing about the host.
 */
export function splitConfined(given: string, jailRoot: string): string[] {
  if (given.includes('\0')) throw new ConfineError('invalid_path', 'path contains a NUL byte');
  let rel = given;
  if (given.startsWith('/')) {
    const root = jailRoot.endsWith('/') ? jailRoot.slice(0, -1) : jailRoot;
    if (given !== root && !given.startsWith(`${root}/`)) {
      throw new ConfineError('path_outside', `absolute path outside the workspace: use a path relative to ${jailRoot}`);
    }
    rel = given.slice(root.length);
  }
  const parts: string[] = [];
  for (const p of rel.split('/')) {
    if (p === '' || p === '.') continue;
    if (p === '..') {
      if (parts.length === 0) throw new ConfineError('path_outside', 'path escapes the workspace ("..")');
      parts.pop();
    } else parts.push(p);
  }
  if (parts.length > MAX_PATH_DEPTH) throw new ConfineError('too_deep', `path is ${parts.length} components deep; the limit is ${MAX_PATH_DEPTH}`);
  return parts;
}

/** May `who` do `bit` (4 read, 2 write, 1 search) on an object with this stat? The kernel's DAC rule, without groups beyond the primary. */
export function permits(stat: Stats, who: Identity | undefined, bit: 4 | 2 | 1): boolean {
  if (!who || who.uid === 0) return true;
  const mode = stat.mode;
  if (stat.uid === who.uid) return ((mode >> 6) & bit) !== 0;
  if (stat.gid === who.gid) return ((mode >> 3) & bit) !== 0;
  return (mode & bit) !== 0;
}

/** Opens the root itself (a directory comis chose, never a link). */
export function openRoot(hostPath: string): Handle {
  let fd: number;
  try {
    fd = openSync(hostPath, O_PATH | O_DIRECTORY | constants.O_NOFOLLOW | O_CLOEXEC);
  } catch (err) {
    throw new ConfineError('io_error', `the root directory is not available (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  return { fd, stat: fstatSync(fd), rel: '.' };
}

/** One plain name: "..", "." or a slash would walk somewhere else than into the directory it is looked up in. */
function requirePlainName(name: string): void {
  if (name === '' || name === '.' || name === '..' || name.includes('/') || name.includes('\0')) {
    throw new ConfineError('invalid_path', 'a path component must be a plain name');
  }
}

/**
 * Looks up one name in a directory handle without following it. Returns
 * undefined for a missing name AND for a symlink: callers cannot tell them
 * apart, by design.
 */
export function lookup(dirFd: number, name: string): { fd: number; stat: Stats } | undefined {
  requirePlainName(name);
  let fd: number;
  try {
    fd = openSync(procPath(dirFd, name), O_PATH | constants.O_NOFOLLOW | O_CLOEXEC);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP' || code === 'EACCES' || code === 'ENAMETOOLONG') return undefined;
    throw new ConfineError('io_error', `lookup failed (${code ?? 'error'})`);
  }
  const stat = fstatSync(fd);
  if (stat.isSymbolicLink()) {
    closeSync(fd);
    return undefined;
  }
  return { fd, stat };
}

const notFound = (prefix: string): ConfineError => new ConfineError('not_found', `no such file or directory: ${prefix}`);
const denied = (prefix: string): ConfineError => new ConfineError('permission_denied', `permission denied: ${prefix}`);

/**
 * Resolves components under a root handle, as `who` would: every directory
 * on the way must be searchable by `who`. A missing component, a symlink and
 * a non-directory in the middle all answer `not_found` naming the path up to
 * that component. The root handle stays open (the caller's); the returned
 * handle is new (or the root's own fd duplicated by reopening, for `[]`).
 */
export function resolve(root: Handle, parts: readonly string[], who: Identity | undefined): Handle {
  if (!root.stat.isDirectory() || !permits(root.stat, who, 1)) throw denied('.');
  let dir = { fd: root.fd, stat: root.stat };
  let owned = false;
  try {
    if (parts.length === 0) {
      const fd = openSync(procPath(root.fd), O_PATH | O_DIRECTORY | O_CLOEXEC);
      return { fd, stat: fstatSync(fd), rel: '.' };
    }
    for (let i = 0; i < parts.length; i++) {
      // The messages' path prefixes are built only for a refusal (no string work on the way).
      if (!dir.stat.isDirectory()) throw notFound(parts.slice(0, i + 1).join('/'));
      if (!permits(dir.stat, who, 1)) throw denied(parts.slice(0, i).join('/') || '.');
      const next = lookup(dir.fd, parts[i]!);
      if (!next) throw notFound(parts.slice(0, i + 1).join('/'));
      if (owned) closeSync(dir.fd);
      dir = next;
      owned = true;
    }
    owned = false;
    return { fd: dir.fd, stat: dir.stat, rel: parts.join('/') };
  } finally {
    if (owned) closeSync(dir.fd);
  }
}

/**
 * Opens a resolved handle for reading: only a regular file `who` may read,
 * reopened through the handle itself (the same inode), non-blocking.
 */
export function openFileForRead(handle: Handle, who: Identity | undefined): number {
  if (!handle.stat.isFile()) throw new ConfineError('not_a_file', `not a regular file: ${handle.rel}`);
  if (!permits(handle.stat, who, 4)) throw denied(handle.rel);
  // The magic link of the handle's own fd: the open reaches that very inode, whatever the name
  // points to now (no second fstat to compare inodes: they cannot differ).
  return openSync(procPath(handle.fd), constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY | O_CLOEXEC);
}

/**
 * A root held open across calls (a run's workspace, for `read` and `memory_*`):
 * opened once with `openRoot`, so later calls skip its open and close, and its
 * stat refreshed by an `fstat` of the held fd on every use, so a chmod of the
 * root counts at once, as it would for the jail. The fd pins the directory that
 * was there when the run first used it, the one the jail has bound (a directory
 * renamed over that path afterwards is not followed). After `close()` each use
 * opens the root afresh, as without a holder.
 */
export class HeldRoot {
  private fd: number | undefined;
  private closed = false;
  constructor(readonly hostPath: string) {}

  /** A handle on the root with a fresh stat; `owned` when the caller must close its fd (the holder is closed). */
  use(): { handle: Handle; owned: boolean } {
    if (this.closed) return { handle: openRoot(this.hostPath), owned: true };
    if (this.fd === undefined) {
      const opened = openRoot(this.hostPath);
      this.fd = opened.fd;
      return { handle: opened, owned: false };
    }
    return { handle: { fd: this.fd, stat: fstatSync(this.fd), rel: '.' }, owned: false };
  }

  close(): void {
    this.closed = true;
    if (this.fd === undefined) return;
    const fd = this.fd;
    this.fd = undefined;
    closeSync(fd);
  }
}

/**
 * Resolves and opens a regular file for reading in one step; returns the fd
 * and its stat. `root` is the root's host path (opened and closed here) or a
 * HeldRoot (its fd reused, its stat refreshed).
 */
export function openConfinedFile(root: string | HeldRoot, parts: readonly string[], who: Identity | undefined): { fd: number; stat: Stats; rel: string } {
  const { handle, owned } = typeof root === 'string' ? { handle: openRoot(root), owned: true } : root.use();
  try {
    if (parts.length === 0) {
      const h = resolve(handle, parts, who);
      try {
        return { fd: openFileForRead(h, who), stat: h.stat, rel: h.rel };
      } finally {
        closeSync(h.fd);
      }
    }
    // The directories on the way as handles; the last name is opened for reading at once.
    const dir = parts.length === 1 ? handle : resolve(handle, parts.slice(0, -1), who);
    try {
      return openLeafForRead(dir, parts, who);
    } finally {
      if (dir !== handle) closeSync(dir.fd);
    }
  } finally {
    if (owned) closeSync(handle.fd);
  }
}

/**
 * Opens the last of `parts` in `dir` (the handle of the ones before it) for reading, in one open:
 * `O_NOFOLLOW` (a link is answered as a missing name, as {@link lookup} answers it) and
 * `O_NONBLOCK` (a FIFO the jail made opens at once, and is then refused as not a file). Safe
 * without the `O_PATH` look first, because this name is in a directory already confined: what it
 * can name is only what the jail itself made there — a regular file, a directory, a FIFO or a
 * socket (the jail cannot make a device node with a driver: the 0:0 whiteout it may make opens as
 * ENXIO; nor link to a host FIFO across its mounts).
 * The file's stat then decides as for a looked-up handle: a regular file `who` may read, or the
 * fd is closed and the call refused. Saves the second open through `/proc` and its close.
 */
function openLeafForRead(dir: Handle, parts: readonly string[], who: Identity | undefined): { fd: number; stat: Stats; rel: string } {
  const last = parts.length - 1;
  const name = parts[last]!;
  requirePlainName(name);
  const rel = last === 0 ? name : parts.join('/');
  if (!dir.stat.isDirectory()) throw notFound(rel);
  if (!permits(dir.stat, who, 1)) throw denied(parts.slice(0, last).join('/') || '.');
  let fd: number;
  try {
    fd = openSync(procPath(dir.fd, name), constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY | constants.O_NOFOLLOW | O_CLOEXEC);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP' || code === 'ENAMETOOLONG') throw notFound(rel);
    // A socket or a 0:0 whiteout answers ENXIO, a file under a write lease EWOULDBLOCK: none is a file to read.
    if (code === 'ENXIO' || code === 'EWOULDBLOCK' || code === 'EAGAIN') throw new ConfineError('not_a_file', `not a regular file: ${rel}`);
    if (code === 'EACCES' || code === 'EPERM') throw denied(rel);
    throw new ConfineError('io_error', `open failed (${code ?? 'error'})`);
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw new ConfineError('not_a_file', `not a regular file: ${rel}`);
    if (!permits(stat, who, 4)) throw denied(rel);
    return { fd, stat, rel };
  } catch (err) {
    closeSync(fd);
    throw err;
  }
}

/** Names in a directory handle (sorted), or undefined when `who` may not list it. */
export function listDir(dir: Handle, who: Identity | undefined): string[] | undefined {
  if (!dir.stat.isDirectory() || !permits(dir.stat, who, 4) || !permits(dir.stat, who, 1)) return undefined;
  try {
    // Opening /proc/self/fd/N re-resolves the magic link to the very directory the handle holds.
    return readdirSync(procPath(dir.fd)).sort();
  } catch {
    return undefined;
  }
}

/** Creates a directory in a directory handle and returns its handle (refuses if the name appeared meanwhile as anything else). */
export function makeDir(dir: Handle, name: string, mode: number): Handle {
  const rel = dir.rel === '.' ? name : `${dir.rel}/${name}`;
  try {
    mkdirSync(procPath(dir.fd, name), { mode });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw new ConfineError('io_error', `cannot create ${rel} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  const h = lookup(dir.fd, name);
  if (!h) throw notFound(rel);
  if (!h.stat.isDirectory()) {
    closeSync(h.fd);
    throw notFound(rel);
  }
  return { ...h, rel };
}

/** How a new file is created in a directory: never an existing name (O_EXCL), no links followed. */
const CREATE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW | O_CLOEXEC;

/** Creates a new file in a directory handle; never opens an existing name (O_EXCL, no links followed). */
export function createFile(dir: Handle, name: string, mode: number): number {
  return openSync(procPath(dir.fd, name), CREATE_FLAGS, mode);
}

/** Opens an existing regular file (a handle from lookup) for writing without truncating it. */
export function openFileForWrite(handle: Handle): number {
  const fd = openSync(procPath(handle.fd), constants.O_WRONLY | constants.O_NONBLOCK | constants.O_NOCTTY | O_CLOEXEC);
  const st = fstatSync(fd);
  if (st.ino !== handle.stat.ino || st.dev !== handle.stat.dev || !st.isFile()) {
    closeSync(fd);
    throw new ConfineError('io_error', `${handle.rel} changed while it was opened`);
  }
  return fd;
}

/** Deepest directory level {@link copyTreeInto} copies (a run's kept results: its ResultRefs and `writes/`). */
const MAX_COPY_DEPTH = 2 * MAX_PATH_DEPTH;

/**
 * Copies the tree at `source`, a path only comis writes (walked by path), to a new entry `name` of
 * the held directory `dir`, which another user may be writing to at the same time. Nothing below
 * `dir` is ever reached by a path through a name that user could swap: each directory is made and
 * then held (`makeDir`: never through a link), each file is copied exclusively into its held
 * directory through its held fd (`procPath(dir, name)`: a link or any existing name there is refused,
 * never followed) with its mode, and each directory gets its mode through its own fd. Regular
 * files and directories only: anything else in the source is left out. Throws on the first
 * refusal; what was copied until then stays.
 */
export function copyTreeInto(source: string, dir: Handle, name: string, depth = 0): void {
  if (depth >= MAX_COPY_DEPTH) throw new ConfineError('too_deep', `a tree to copy is deeper than ${MAX_COPY_DEPTH} levels`);
  const st = lstatSync(source);
  if (st.isFile()) {
    copyFileSync(source, procPath(dir.fd, name), constants.COPYFILE_EXCL);
    return;
  }
  if (!st.isDirectory()) return;
  const made = makeDir(dir, name, 0o700);
  try {
    for (const entry of readdirSync(source)) copyTreeInto(`${source}/${entry}`, made, entry, depth + 1);
    chmodSync(procPath(made.fd), st.mode & 0o777);
  } finally {
    closeSync(made.fd);
  }
}
