/**
 * Unit tests of the one path-confinement module on real files: lexical
 * splitting, the DAC rule it applies for the jail's identity, and lookups
 * that never follow a link (answered exactly like a missing name).
 */
import { chmodSync, closeSync, fstatSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, readSync, renameSync, symlinkSync, writeFileSync, writeSync, type Stats } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import {
  ConfineError,
  copyTreeInto,
  createFile,
  HeldRoot,
  listDir,
  lookup,
  makeDir,
  MAX_PATH_DEPTH,
  openConfinedFile,
  openFileForRead,
  openFileForWrite,
  openRoot,
  permits,
  procPath,
  resolve,
  splitConfined,
  type Handle,
} from '../../src/lib/confine/index.js';
import { tempDir } from '../helpers/temp.js';

const stat = (mode: number, uid: number, gid: number): Stats => ({ mode, uid, gid }) as Stats;
const who = { uid: 1000, gid: 1000 };

function tree(): string {
  const root = tempDir('comis-confine-');
  mkdirSync(join(root, 'd'));
  writeFileSync(join(root, 'd', 'f.txt'), 'inside');
  writeFileSync(join(root, 'top.txt'), 'top');
  const outside = tempDir('comis-outside-');
  writeFileSync(join(outside, 'secret'), 'SECRET');
  symlinkSync(join(outside, 'secret'), join(root, 'link'));
  symlinkSync(outside, join(root, 'dirlink'));
  return root;
}

function withRoot<T>(root: string, fn: (h: Handle) => T): T {
  const h = openRoot(root);
  try {
    return fn(h);
  } finally {
    closeSync(h.fd);
  }
}

const codeOf = (fn: () => unknown): string | undefined => {
  try {
    fn();
  } catch (err) {
    return err instanceof ConfineError ? err.code : `not a ConfineError: ${String(err)}`;
  }
  return undefined;
};

describe('splitConfined', () => {
  it('folds ., empty and inner .. lexically, for relative and jail-absolute paths', () => {
    expect(splitConfined('a/./b//c', '/workspace')).toEqual(['a', 'b', 'c']);
    expect(splitConfined('a/b/../c', '/workspace')).toEqual(['a', 'c']);
    expect(splitConfined('/workspace', '/workspace')).toEqual([]);
    expect(splitConfined('/workspace/', '/workspace')).toEqual([]);
    expect(splitConfined('/workspace/a/b', '/workspace')).toEqual(['a', 'b']);
    expect(splitConfined('/workspace/a', '/workspace/')).toEqual(['a']);
    expect(splitConfined('', '/workspace')).toEqual([]);
    expect(splitConfined('.', '/workspace')).toEqual([]);
    expect(splitConfined('a/..', '/workspace')).toEqual([]);
  });

  it('refuses NUL, escapes, other absolute paths and depth past the limit, with stable codes and messages', () => {
    expect(codeOf(() => splitConfined('a\0b', '/workspace'))).toBe('invalid_path');
    expect(() => splitConfined('a\0b', '/workspace')).toThrow('path contains a NUL byte');
    expect(codeOf(() => splitConfined('..', '/workspace'))).toBe('path_outside');
    expect(() => splitConfined('a/../../b', '/workspace')).toThrow('path escapes the workspace ("..")');
    expect(codeOf(() => splitConfined('/etc/passwd', '/workspace'))).toBe('path_outside');
    expect(() => splitConfined('/workspacex/a', '/workspace')).toThrow('absolute path outside the workspace: use a path relative to /workspace');
    const deep = Array.from({ length: MAX_PATH_DEPTH + 1 }, () => 'd').join('/');
    expect(codeOf(() => splitConfined(deep, '/workspace'))).toBe('too_deep');
    expect(() => splitConfined(deep, '/workspace')).toThrow(`path is ${MAX_PATH_DEPTH + 1} components deep; the limit is ${MAX_PATH_DEPTH}`);
    expect(splitConfined(Array.from({ length: MAX_PATH_DEPTH }, () => 'd').join('/'), '/workspace')).toHaveLength(MAX_PATH_DEPTH);
    // ".." that stays inside after folding is fine; it is only the escape that is refused.
    expect(splitConfined(`${Array.from({ length: MAX_PATH_DEPTH + 1 }, () => 'd').join('/')}/..`, '/workspace')).toHaveLength(MAX_PATH_DEPTH);
  });
});

describe('permits (the DAC rule for the jail identity)', () => {
  it('no identity or root may do anything', () => {
    expect(permits(stat(0o000, 5, 5), undefined, 4)).toBe(true);
    expect(permits(stat(0o000, 5, 5), { uid: 0, gid: 0 }, 2)).toBe(true);
  });

  it('the owner bits decide for the owner, and only them', () => {
    expect(permits(stat(0o400, 1000, 7), who, 4)).toBe(true);
    expect(permits(stat(0o044, 1000, 1000), who, 4)).toBe(false);
    expect(permits(stat(0o200, 1000, 7), who, 2)).toBe(true);
    expect(permits(stat(0o100, 1000, 7), who, 1)).toBe(true);
    expect(permits(stat(0o600, 1000, 7), who, 1)).toBe(false);
  });

  it('the group bits decide for the group, then the other bits', () => {
    expect(permits(stat(0o040, 7, 1000), who, 4)).toBe(true);
    expect(permits(stat(0o404, 7, 1000), who, 4)).toBe(false);
    expect(permits(stat(0o010, 7, 1000), who, 1)).toBe(true);
    expect(permits(stat(0o020, 7, 1000), who, 2)).toBe(true);
    expect(permits(stat(0o004, 7, 7), who, 4)).toBe(true);
    expect(permits(stat(0o440, 7, 7), who, 4)).toBe(false);
    expect(permits(stat(0o002, 7, 7), who, 2)).toBe(true);
    expect(permits(stat(0o001, 7, 7), who, 1)).toBe(true);
    expect(permits(stat(0o006, 7, 7), who, 1)).toBe(false);
  });
});

/** Open file descriptors of this process. */
const openFds = (): number => readdirSync('/proc/self/fd').length;

describe('lookup, resolve and open', () => {
  it('ConfineError carries its name and code', () => {
    const err = new ConfineError('not_found', 'x');
    expect(err.name).toBe('ConfineError');
    expect(err.code).toBe('not_found');
    expect(err).toBeInstanceOf(Error);
  });

  it('leaks no descriptor, on success or refusal', () => {
    const root = tree();
    mkdirSync(join(root, 'd', 'e', 'f'), { recursive: true });
    writeFileSync(join(root, 'd', 'e', 'f', 'g.txt'), 'g');
    const before = openFds();
    for (let i = 0; i < 20; i++) {
      withRoot(root, (h) => {
        closeSync(resolve(h, ['d', 'e', 'f', 'g.txt'], undefined).fd);
        closeSync(resolve(h, [], undefined).fd);
        expect(() => resolve(h, ['d', 'e', 'nope', 'x'], undefined)).toThrow();
        expect(() => resolve(h, ['d', 'e', 'f', 'g.txt', 'x'], undefined)).toThrow();
      });
      closeSync(openConfinedFile(root, ['d', 'e', 'f', 'g.txt'], undefined).fd);
      expect(() => openConfinedFile(root, ['d', 'e'], undefined)).toThrow();
    }
    expect(openFds()).toBe(before);
  });

  it('a refusal names the path up to the failing component, not beyond', () => {
    const root = tree();
    mkdirSync(join(root, 'd', 'locked'), { mode: 0o700 });
    withRoot(root, (h) => {
      expect(() => resolve(h, ['d', 'nope', 'x'], undefined)).toThrow(/^no such file or directory: d\/nope$/);
      const open = { ...h, stat: altered(h.stat, { mode: 0o40755 }) };
      const stranger = { uid: 4242, gid: 4242 };
      const d = resolve(open, ['d'], stranger);
      closeSync(d.fd);
      let msg = '';
      try {
        resolve(open, ['d', 'locked', 'x', 'y'], stranger);
      } catch (err) {
        msg = (err as Error).message;
      }
      // d/ is owned by us and 0755 (searchable); d/locked is 0700: the refusal is for d/locked itself.
      expect(msg).toBe('permission denied: d/locked');
    });
  });

  it('makeDir reports a failure other than an existing name as io_error, naming the path', () => {
    const root = tree();
    withRoot(root, (h) => {
      const long = 'n'.repeat(300);
      expect(() => makeDir(h, long, 0o700)).toThrow(`cannot create ${long} (ENAMETOOLONG)`);
      expect(codeOf(() => makeDir(h, long, 0o700))).toBe('io_error');
    });
  });

  it('procPath names a directory fd or a name in it', () => {
    // This process's fd directory by its pid (not through the /proc/self link).
    expect(procPath(7)).toBe(`/proc/${process.pid}/fd/7`);
    expect(procPath(7, 'x')).toBe(`/proc/${process.pid}/fd/7/x`);
  });

  it('openRoot opens a directory, refuses a link or a missing root', () => {
    const root = tree();
    withRoot(root, (h) => {
      expect(h.rel).toBe('.');
      expect(h.stat.isDirectory()).toBe(true);
    });
    expect(codeOf(() => openRoot(join(root, 'dirlink')))).toBe('io_error');
    expect(() => openRoot(join(root, 'missing'))).toThrow('the root directory is not available (ENOENT)');
  });

  it('lookup answers a symlink exactly like a missing name, and refuses non-plain names', () => {
    const root = tree();
    withRoot(root, (h) => {
      expect(lookup(h.fd, 'link')).toBeUndefined();
      expect(lookup(h.fd, 'dirlink')).toBeUndefined();
      expect(lookup(h.fd, 'missing')).toBeUndefined();
      const found = lookup(h.fd, 'top.txt')!;
      expect(found.stat.isFile()).toBe(true);
      // A name under a regular file is ENOTDIR, a name too long ENAMETOOLONG: both answered as missing.
      expect(lookup(found.fd, 'x')).toBeUndefined();
      expect(lookup(h.fd, 'n'.repeat(300))).toBeUndefined();
      closeSync(found.fd);
      for (const bad of ['', '.', '..', 'a/b', 'a\0b']) {
        expect(
          codeOf(() => lookup(h.fd, bad)),
          JSON.stringify(bad),
        ).toBe('invalid_path');
      }
      expect(() => lookup(h.fd, '..')).toThrow('a path component must be a plain name');
    });
  });

  it('resolve walks components without following links; a link or a file mid-path is not_found naming the prefix', () => {
    const root = tree();
    withRoot(root, (h) => {
      const f = resolve(h, ['d', 'f.txt'], undefined);
      expect(f.rel).toBe('d/f.txt');
      expect(f.stat.isFile()).toBe(true);
      const fd = openFileForRead(f, undefined);
      const buf = Buffer.alloc(16);
      expect(buf.subarray(0, readSync(fd, buf)).toString()).toBe('inside');
      closeSync(fd);
      closeSync(f.fd);
      const self = resolve(h, [], undefined);
      expect(self.rel).toBe('.');
      expect(self.fd).not.toBe(h.fd);
      expect(self.stat.ino).toBe(h.stat.ino);
      closeSync(self.fd);
      expect(() => resolve(h, ['dirlink', 'secret'], undefined)).toThrow('no such file or directory: dirlink');
      expect(() => resolve(h, ['top.txt', 'x'], undefined)).toThrow('no such file or directory: top.txt/x');
      expect(() => resolve(h, ['d', 'nope'], undefined)).toThrow('no such file or directory: d/nope');
      expect(codeOf(() => resolve(h, ['link'], undefined))).toBe('not_found');
    });
  });

  it('resolve and open apply the identity: an unsearchable directory or unreadable file is permission_denied', () => {
    const root = tree();
    const locked = join(root, 'locked');
    mkdirSync(locked, { mode: 0o700 });
    writeFileSync(join(locked, 'x'), 'x');
    writeFileSync(join(root, 'private.txt'), 'p', { mode: 0o600 });
    const stranger = { uid: 4242, gid: 4242 };
    withRoot(root, (h) => {
      // The root itself must be searchable: a 0700 root owned by us is not, for a stranger.
      const rootMode = h.stat.mode & 0o777;
      if ((rootMode & 0o001) === 0) expect(() => resolve(h, ['d'], stranger)).toThrow('permission denied: .');
      const open = { ...h, stat: altered(h.stat, { mode: 0o40755 }) };
      expect(() => resolve(open, ['locked', 'x'], stranger)).toThrow('permission denied: locked');
      const priv = resolve(open, ['private.txt'], stranger);
      expect(() => openFileForRead(priv, stranger)).toThrow('permission denied: private.txt');
      expect(codeOf(() => openFileForRead(priv, stranger))).toBe('permission_denied');
      closeSync(priv.fd);
      const dir = resolve(open, ['d'], stranger);
      expect(() => openFileForRead(dir, undefined)).toThrow('not a regular file: d');
      closeSync(dir.fd);
      // A file mid-path is not_found for a stranger too: its mode says nothing about searching into it.
      chmodSync(join(root, 'top.txt'), 0o644);
      expect(() => resolve(open, ['top.txt', 'x'], stranger)).toThrow('no such file or directory: top.txt/x');
      const notDir = { ...h, stat: Object.assign(altered(h.stat, {}), { isDirectory: () => false }) };
      expect(() => resolve(notDir, ['d'], undefined)).toThrow('permission denied: .');
    });
  });

  it('openConfinedFile resolves and opens in one step; a FIFO in the root is not_a_file and never blocks the open', () => {
    const root = tree();
    const r = openConfinedFile(root, ['top.txt'], undefined);
    expect(r.rel).toBe('top.txt');
    expect(r.stat.size).toBe(3);
    closeSync(r.fd);
    execFileSync('mkfifo', [join(root, 'fifo')]);
    expect(codeOf(() => openConfinedFile(root, ['fifo'], undefined))).toBe('not_a_file');
    expect(codeOf(() => openConfinedFile(root, ['link'], undefined))).toBe('not_found');
  });

  it('openConfinedFile answers each kind of last name as a looked-up handle would', async () => {
    const root = tree();
    const stranger = { uid: 4242, gid: 4242 };
    // Deeper names: the directories on the way are looked up, the last name opened for reading.
    const deep = openConfinedFile(root, ['d', 'f.txt'], undefined);
    expect(readFileSync(deep.fd, 'utf8')).toBe('inside');
    closeSync(deep.fd);
    expect(codeOf(() => openConfinedFile(root, ['d'], undefined))).toBe('not_a_file');
    expect(codeOf(() => openConfinedFile(root, ['dirlink', 'secret'], undefined))).toBe('not_found');
    expect(codeOf(() => openConfinedFile(root, ['top.txt', 'x'], undefined))).toBe('not_found');
    expect(codeOf(() => openConfinedFile(root, ['d', 'missing'], undefined))).toBe('not_found');
    // A unix socket cannot be opened (ENXIO): not a file, not an I/O error.
    const server = createServer();
    await new Promise<void>((r) => server.listen(join(root, 'sock'), r));
    try {
      expect(codeOf(() => openConfinedFile(root, ['sock'], undefined))).toBe('not_a_file');
    } finally {
      server.close();
    }
    // The one device node the jail can make, as anyone can since Linux 5.8: a 0:0 whiteout. No driver: ENXIO.
    execFileSync('mknod', [join(root, 'whiteout'), 'c', '0', '0']);
    expect(codeOf(() => openConfinedFile(root, ['whiteout'], undefined))).toBe('not_a_file');
    // A file its owner alone may read: refused to anyone else, whoever comis runs as.
    chmodSync(join(root, 'top.txt'), 0o600);
    chmodSync(root, 0o755);
    const own = openConfinedFile(root, ['top.txt'], undefined);
    closeSync(own.fd);
    expect(own.stat.size).toBe(3);
    expect(codeOf(() => openConfinedFile(root, ['top.txt'], stranger))).toBe('permission_denied');
    // A directory the identity cannot search: refused before its names are looked at.
    chmodSync(join(root, 'd'), 0o700);
    expect(codeOf(() => openConfinedFile(root, ['d', 'f.txt'], stranger))).toBe('permission_denied');
  });

  it('a HeldRoot opens the root once, sees a chmod of it at once, stays on the directory it opened, and leaks nothing', () => {
    const root = tree();
    const stranger = { uid: 4242, gid: 4242 };
    chmodSync(root, 0o755);
    const before = openFds();
    const held = new HeldRoot(root);
    const readTop = (): string => {
      const r = openConfinedFile(held, ['top.txt'], stranger);
      try {
        const buf = Buffer.alloc(16);
        return buf.subarray(0, readSync(r.fd, buf, 0, 16, 0)).toString();
      } finally {
        closeSync(r.fd);
      }
    };
    expect(readTop()).toBe('top');
    const withHeld = openFds();
    expect(withHeld).toBe(before + 1);
    for (let i = 0; i < 20; i++) expect(readTop()).toBe('top');
    expect(openFds()).toBe(withHeld);
    // The root's stat is taken afresh on every use: a root the stranger may not search refuses at once.
    chmodSync(root, 0o700);
    expect(() => readTop()).toThrow('permission denied: .');
    chmodSync(root, 0o755);
    expect(readTop()).toBe('top');
    // Links stay refused through a held root, exactly as through a path.
    expect(codeOf(() => openConfinedFile(held, ['link'], stranger))).toBe('not_found');
    expect(codeOf(() => openConfinedFile(held, ['dirlink', 'secret'], stranger))).toBe('not_found');
    // A directory renamed over the root's path is not followed: the held fd is the directory first opened.
    renameSync(root, join(tempDir('comis-confine-moved-'), 'root')); // inside a temp dir, so the test removes it
    mkdirSync(root, { mode: 0o755 });
    writeFileSync(join(root, 'top.txt'), 'swapped');
    expect(readTop()).toBe('top');
    held.close();
    expect(openFds()).toBe(before);
    // Closed: each use opens the root's path afresh (and closes it).
    expect(readTop()).toBe('swapped');
    expect(openFds()).toBe(before);
    held.close();
  });

  it('listDir lists sorted names of a directory the identity may read and search', () => {
    const root = tree();
    for (const n of ['zeta', 'a.txt', 'mid', 'beta', 'omega', 'kappa']) writeFileSync(join(root, 'd', n), '');
    withRoot(root, (h) => {
      const d = resolve(h, ['d'], undefined);
      expect(listDir(d, undefined)).toEqual(['a.txt', 'beta', 'f.txt', 'kappa', 'mid', 'omega', 'zeta']);
      const stranger = { uid: 4242, gid: 4242 };
      expect(listDir({ ...d, stat: altered(d.stat, { mode: 0o40751, uid: 1, gid: 1 }) }, stranger)).toBeUndefined();
      expect(listDir({ ...d, stat: altered(d.stat, { mode: 0o40754, uid: 1, gid: 1 }) }, stranger)).toBeUndefined();
      expect(listDir({ ...d, stat: altered(d.stat, { mode: 0o40755, uid: 1, gid: 1 }) }, stranger)).toEqual(['a.txt', 'beta', 'f.txt', 'kappa', 'mid', 'omega', 'zeta']);
      const f = resolve(h, ['top.txt'], undefined);
      expect(listDir(f, undefined)).toBeUndefined();
      // Sorted as JavaScript compares strings (UTF-16 units), not as readdir's byte order would have it.
      mkdirSync(join(root, 'u'));
      for (const n of ['\uff01', '\u{1f600}']) writeFileSync(join(root, 'u', n), '');
      const u = resolve(h, ['u'], undefined);
      expect(listDir(u, undefined)).toEqual(['\u{1f600}', '\uff01']);
      closeSync(u.fd);
      closeSync(f.fd);
      closeSync(d.fd);
    });
  });

  it('makeDir creates or reuses a directory, never a link or a file in its place; createFile never opens an existing name', () => {
    const root = tree();
    withRoot(root, (h) => {
      const made = makeDir(h, 'new', 0o750);
      expect(made.rel).toBe('new');
      expect(made.stat.isDirectory()).toBe(true);
      expect(made.stat.mode & 0o777).toBe(0o750 & ~process.umask());
      const again = makeDir(h, 'new', 0o700);
      expect(again.stat.ino).toBe(made.stat.ino);
      const nested = makeDir(made, 'sub', 0o700);
      expect(nested.rel).toBe('new/sub');
      for (const x of [made, again, nested]) closeSync(x.fd);
      expect(() => makeDir(h, 'dirlink', 0o700)).toThrow('no such file or directory: dirlink');
      expect(() => makeDir(h, 'top.txt', 0o700)).toThrow('no such file or directory: top.txt');
      expect(codeOf(() => makeDir(h, 'top.txt', 0o700))).toBe('not_found');

      const fd = createFile(h, 'created.txt', 0o640);
      writeSync(fd, 'new');
      closeSync(fd);
      expect(readFileSync(join(root, 'created.txt'), 'utf8')).toBe('new');
      expect(() => createFile(h, 'created.txt', 0o640)).toThrow(/EEXIST/);
      expect(() => createFile(h, 'link', 0o640)).toThrow(/EEXIST/);
      expect(readFileSync(join(tempDirOf(root), 'secret'), 'utf8')).toBe('SECRET');
    });
  });

  it('openFileForWrite opens the very file the handle holds, without truncating', () => {
    const root = tree();
    withRoot(root, (h) => {
      const f = resolve(h, ['top.txt'], undefined);
      const fd = openFileForWrite(f);
      expect(fstatSync(fd).ino).toBe(f.stat.ino);
      writeSync(fd, 'T');
      closeSync(fd);
      expect(readFileSync(join(root, 'top.txt'), 'utf8')).toBe('Top');
      const swapped = { ...f, stat: altered(f.stat, { ino: f.stat.ino + 1 }) };
      expect(() => openFileForWrite(swapped)).toThrow('top.txt changed while it was opened');
      const otherDev = { ...f, stat: altered(f.stat, { dev: f.stat.dev + 1 }) };
      expect(codeOf(() => openFileForWrite(otherDev))).toBe('io_error');
      closeSync(f.fd);
    });
  });

  it('openFileForRead opens the inode the handle holds, not what its name points to now', () => {
    const root = tree();
    withRoot(root, (h) => {
      const f = resolve(h, ['top.txt'], undefined);
      // The name is swapped after the lookup: for a file (rename over it) and for a link out.
      writeFileSync(join(root, 'other.txt'), 'OTHER');
      renameSync(join(root, 'other.txt'), join(root, 'top.txt'));
      let fd = openFileForRead(f, undefined);
      expect(fstatSync(fd).ino).toBe(f.stat.ino);
      const buf = Buffer.alloc(16);
      expect(buf.toString('utf8', 0, readSync(fd, buf, 0, 16, 0))).toBe('top');
      closeSync(fd);
      const g = resolve(h, ['top.txt'], undefined);
      renameSync(join(root, 'top.txt'), join(root, 'moved.txt'));
      symlinkSync(join(tempDirOf(root), 'secret'), join(root, 'top.txt'));
      fd = openFileForRead(g, undefined);
      expect(buf.toString('utf8', 0, readSync(fd, buf, 0, 16, 0))).toBe('OTHER');
      closeSync(fd);
      closeSync(f.fd);
      closeSync(g.fd);
    });
  });
});

/** The outside directory of tree(): where its `dirlink` points. */
function tempDirOf(root: string): string {
  return readlinkSync(join(root, 'dirlink'));
}

/** A Stats with some fields replaced, keeping its methods (isFile, isDirectory). */
function altered(st: Stats, over: Partial<Record<'mode' | 'uid' | 'gid' | 'ino' | 'dev', number>>): Stats {
  return Object.assign(Object.create(Object.getPrototypeOf(st) as object) as Stats, st, over);
}

describe('copyTreeInto', () => {
  it('copies files and directories with their modes, and leaves out links and FIFOs', () => {
    const src = join(tempDir('comis-copy-src-'), 'tree');
    mkdirSync(join(src, 'sub', 'deep'), { recursive: true });
    writeFileSync(join(src, 'a.json'), '{"a":1}');
    chmodSync(join(src, 'a.json'), 0o640);
    writeFileSync(join(src, 'sub', 'deep', 'b.txt'), 'B');
    chmodSync(join(src, 'sub'), 0o750);
    symlinkSync('/etc/passwd', join(src, 'link'));
    execFileSync('mkfifo', [join(src, 'fifo')]);
    const dest = tempDir('comis-copy-dest-');
    const root = openRoot(dest);
    try {
      copyTreeInto(src, root, 'copy');
    } finally {
      closeSync(root.fd);
    }
    expect(readdirSync(join(dest, 'copy')).sort()).toEqual(['a.json', 'sub']);
    expect(readFileSync(join(dest, 'copy', 'a.json'), 'utf8')).toBe('{"a":1}');
    expect(lstatSync(join(dest, 'copy', 'a.json')).mode & 0o777).toBe(0o640);
    expect(lstatSync(join(dest, 'copy', 'sub')).mode & 0o777).toBe(0o750);
    expect(readFileSync(join(dest, 'copy', 'sub', 'deep', 'b.txt'), 'utf8')).toBe('B');
  });

  it('never writes through a name that already exists as a link; the link target is untouched', () => {
    const src = join(tempDir('comis-copy-src-'), 'tree');
    mkdirSync(src);
    writeFileSync(join(src, 'f.txt'), 'NEW');
    const outside = join(tempDir('comis-copy-outside-'), 'victim');
    writeFileSync(outside, 'ORIGINAL');
    const dest = tempDir('comis-copy-dest-');
    mkdirSync(join(dest, 'copy'));
    symlinkSync(outside, join(dest, 'copy', 'f.txt'));
    const root = openRoot(dest);
    try {
      expect(() => copyTreeInto(src, root, 'copy')).toThrow(expect.objectContaining({ code: 'EEXIST' }));
    } finally {
      closeSync(root.fd);
    }
    expect(readFileSync(outside, 'utf8')).toBe('ORIGINAL');
    // Nor into a directory name that is a link: makeDir refuses it as not found.
    const dest2 = tempDir('comis-copy-dest-');
    const outDir = tempDir('comis-copy-outdir-');
    symlinkSync(outDir, join(dest2, 'copy'));
    const root2 = openRoot(dest2);
    try {
      expect(() => copyTreeInto(src, root2, 'copy')).toThrow(ConfineError);
    } finally {
      closeSync(root2.fd);
    }
    expect(readdirSync(outDir)).toEqual([]);
  });
});
