/**
 * Host-side checks and preparation of what gets bound into a jail.
 */
import { chmodSync, chownSync, lstatSync, realpathSync, statSync } from 'node:fs';
import { isAbsolute, resolve as resolvePath, sep } from 'node:path';

import { ComisError } from '../errors.js';
import { isRoot } from './host.js';

/** Whether `child` lies strictly below `parent` (every path is below `/` but `/` itself). */
export function inside(child: string, parent: string): boolean {
  return parent === '/' ? child !== '/' : child.startsWith(parent + sep);
}

/** The real path of `path`, or `path` itself when it cannot be resolved (yet). */
export function realOr(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

/**
 * Screens a USER-CONFIGURED bind source (e.g. `execSandbox.readOnlyAllowPaths`).
 *
 * Refuses, with an INPUT_INVALID error naming the path and the reason, a
 * source that is — lexically or after resolving symlinks — the host root,
 * `/etc`, `/proc`, `/sys`, `/dev`, `/boot`, `/run`, `/var/run`, `/root`,
 * `~/.ssh`, `~/.aws`, `~/.gnupg`, `~/.config`, `~/.netrc`, `$COMIS_HOME`,
 * anything inside one of those, or an ancestor of one (binding `/home` would
 * expose `~/.ssh`). A unix socket is refused too: a read-only bind of a socket
 * still lets the jail connect() to it. Returns the real path to bind.
 *
 * Security property: a config value cannot hand the jail the host's secrets
 * or its control plane, whichever symlink it goes through. It does not look
 * inside an accepted directory for sockets or secrets; bind narrow paths.
 */
export function screenBindSource(path: string, ctx: { comisHome: string; home: string }): string {
  const refuse = (why: string): never => {
    throw new ComisError('INPUT_INVALID', `Refusing to bind ${path} into the jail: ${why}.`, {
      hint: 'Bind a narrow directory that holds only what scripts need to read; secrets, system and comis state stay outside the jail.',
      details: { path },
    });
  };
  if (typeof path !== 'string' || path.length === 0 || path.includes('\0')) refuse('not a valid path');
  if (!isAbsolute(path)) refuse('it is not an absolute path');
  const lexical = resolvePath(path);
  const home = resolvePath(ctx.home);
  const named: [string, string][] = [
    ['/', 'it is the host root'],
    ['/etc', 'host configuration (/etc)'],
    ['/proc', 'the host /proc'],
    ['/sys', 'the host /sys'],
    ['/dev', 'host devices (/dev)'],
    ['/boot', 'the host /boot'],
    ['/run', 'host runtime state and daemon sockets (/run)'],
    ['/var/run', 'host runtime state and daemon sockets (/var/run)'],
    ['/root', "root's home (/root)"],
    [`${home}/.ssh`, 'SSH keys (~/.ssh)'],
    [`${home}/.aws`, 'cloud credentials (~/.aws)'],
    [`${home}/.gnupg`, 'GnuPG keys (~/.gnupg)'],
    [`${home}/.config`, 'application config and tokens (~/.config)'],
    [`${home}/.netrc`, 'stored passwords (~/.netrc)'],
    [resolvePath(ctx.comisHome), 'comis state, config and secrets ($COMIS_HOME)'],
  ];
  const protectedPaths: [string, string][] = [];
  for (const [p, why] of named) {
    protectedPaths.push([p, why]);
    const r = realOr(p);
    if (r !== p) protectedPaths.push([r, why]);
  }
  const screen = (candidate: string): void => {
    // What it IS first (the clearest reason), then what it lies in, then what it holds.
    for (const [p, why] of protectedPaths) if (candidate === p) refuse(`it is ${why}`);
    for (const [p, why] of protectedPaths) if (p !== '/' && inside(candidate, p)) refuse(`it is inside ${why}`);
    for (const [p, why] of protectedPaths) if (inside(p, candidate)) refuse(`it contains ${why}`);
  };
  // Lexically first: a protected path is refused as such, even where we cannot see whether it exists.
  screen(lexical);
  let real: string;
  try {
    real = realpathSync(lexical);
  } catch {
    return refuse('it does not exist');
  }
  screen(real);
  if (lstatSync(real).isSocket()) refuse('it is a unix socket, which the jail could connect to even when bound read-only');
  return real;
}

/**
 * Makes `path` (an existing directory, not a symlink) the jail's writable
 * area: when comis runs as root, chowns the directory itself to the jail's
 * unprivileged `hostUid` and sets 0700; not root, it only checks the path.
 * Returns the real path.
 *
 * Contract for callers: as root the jail runs as `hostUid`, so every rw
 * mount source must be writable by that uid — files comis itself (root)
 * later writes inside stay root-owned and read-only to the jail. Security
 * property: never follows a symlink planted at `path`, never chowns anything
 * but the directory itself.
 */
export function prepareWritableDir(path: string, hostUid: number): string {
  const st = lstatSync(path);
  if (st.isSymbolicLink() || !st.isDirectory()) {
    throw new ComisError('INPUT_INVALID', `The jail's writable area ${path} must be a real directory (not a symlink or file).`, {
      hint: 'Remove whatever is there and let comis create the directory.',
    });
  }
  const real = realpathSync(path);
  if (isRoot()) {
    if (!Number.isInteger(hostUid) || hostUid < 1) throw new ComisError('INPUT_INVALID', `Cannot hand ${real} to uid ${hostUid}: not an unprivileged uid.`);
    const again = lstatSync(real);
    if (!again.isDirectory() || again.ino !== statSync(path).ino) throw new ComisError('INPUT_INVALID', `${path} changed while it was prepared.`);
    chownSync(real, hostUid, hostUid);
    chmodSync(real, 0o700);
  }
  return real;
}
