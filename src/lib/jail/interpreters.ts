/**
 * The programs a jail runs scripts with — node, python3, jq — resolved to
 * their real host files, with the read-only mounts each needs inside the
 * jail. Nothing here ever runs a SCRIPT outside the jail: python3 is run once
 * on the host only to ask where it really lives (a pyenv shim or a venv
 * python is not the interpreter binary).
 */
import { spawnSync } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { dirname, sep } from 'node:path';

import { ComisError } from '../errors.js';
import { findOnPath } from './host.js';
import type { JailMount, ResolvedInterpreter } from './types.js';

export type InterpreterName = 'node' | 'python3';

/** Directories the jail's system base already provides read-only. */
function providedByBase(path: string): boolean {
  return path === '/usr' || path.startsWith(`/usr${sep}`);
}

function inside(child: string, parent: string): boolean {
  return child === parent || child.startsWith(parent.endsWith(sep) ? parent : parent + sep);
}

/** A read-only bind of `path` at the same place, unless the system base has it already. */
function sameTargetMount(path: string): JailMount[] {
  return providedByBase(path) ? [] : [{ kind: 'ro', source: path, target: path }];
}

const cache = new Map<string, ResolvedInterpreter>();

function missing(name: string, why: string, hint: string): ComisError {
  return new ComisError('INTERPRETER_MISSING', `${name} ${why}`, { hint });
}

function resolveNode(): ResolvedInterpreter {
  // The node running comis: known-good, and the jail must not depend on PATH order.
  let hostPath: string;
  try {
    hostPath = realpathSync(process.execPath);
  } catch {
    const onPath = findOnPath('node');
    if (!onPath) throw missing('node', 'was not found (neither this process nor PATH).', 'Install Node.js 20 or newer (apt-get install nodejs).');
    hostPath = realpathSync(onPath);
  }
  // Without it, WebAssembly.Memory needs ~10 GiB of address space and fails under RLIMIT_AS.
  const args = process.allowedNodeEnvironmentFlags.has('--disable-wasm-trap-handler') ? ['--disable-wasm-trap-handler'] : [];
  return { hostPath, jailPath: hostPath, mounts: sameTargetMount(hostPath), args, version: process.version };
}

const PY_QUERY = 'import json,sys;print(json.dumps([sys.executable,sys.base_prefix,"%d.%d.%d"%sys.version_info[:3]]))';

function resolvePython(pathEnv: string | undefined): ResolvedInterpreter {
  const onPath = findOnPath('python3', pathEnv);
  if (!onPath) throw missing('python3', 'is not on PATH; Python scripts need it.', 'apt-get install python3');
  // cwd '/' so a pyenv shim picks the global version, not one from wherever comis was started.
  const res = spawnSync(onPath, ['-I', '-c', PY_QUERY], {
    cwd: '/',
    env: { ...process.env, ...(pathEnv === undefined ? {} : { PATH: pathEnv }) },
    encoding: 'utf8',
    timeout: 15_000,
  });
  let answer: unknown;
  try {
    answer = JSON.parse(res.stdout ?? '');
  } catch {
    answer = undefined;
  }
  if (res.status !== 0 || !Array.isArray(answer) || answer.length !== 3 || !answer.every((x) => typeof x === 'string' && x.length > 0)) {
    const err = (res.stderr ?? '').trim().split('\n').pop() ?? res.error?.message ?? 'no answer';
    throw missing('python3', `at ${onPath} does not run (${err}).`, 'Fix or reinstall it: apt-get install python3');
  }
  const [executable, basePrefix, version] = answer as [string, string, string];
  let hostPath: string;
  let base: string;
  try {
    hostPath = realpathSync(executable);
    base = realpathSync(basePrefix);
  } catch {
    throw missing('python3', `at ${onPath} reports an executable or prefix that does not exist (${executable}).`, 'apt-get install python3');
  }
  if (base === '/') base = dirname(dirname(hostPath));
  const mounts: JailMount[] = [...sameTargetMount(base)];
  if (!inside(hostPath, base)) mounts.push(...sameTargetMount(hostPath));
  return { hostPath, jailPath: hostPath, mounts, args: [], version };
}

/**
 * The interpreter for `name`, resolved once per process (per PATH).
 *
 * - node: the real path of the node running comis (`process.execPath`).
 * - python3: the python3 found on PATH, run once on the host to learn its
 *   real `sys.executable` and `sys.base_prefix`; the prefix is bound
 *   read-only at the same path when it is outside /usr (pyenv, conda).
 *
 * Throws ComisError INTERPRETER_MISSING (with an install hint) when it is
 * absent or broken. Security property: never falls back to running a
 * script outside the jail; `mounts` are read-only and the binary is bound
 * at its own path, never copied anywhere writable.
 */
export function resolveInterpreter(name: InterpreterName, opts: { pathEnv?: string } = {}): ResolvedInterpreter {
  const key = `${name}\0${opts.pathEnv ?? process.env.PATH ?? ''}`;
  const hit = cache.get(key);
  if (hit) return hit;
  const resolved = name === 'node' ? resolveNode() : resolvePython(opts.pathEnv);
  cache.set(key, resolved);
  return resolved;
}

/**
 * jq, as for {@link resolveInterpreter}: the jq on PATH, symlinks resolved,
 * bound read-only at its own path when outside /usr. Throws
 * INTERPRETER_MISSING (hint: apt-get install jq) when absent.
 */
export function resolveJq(opts: { pathEnv?: string } = {}): ResolvedInterpreter {
  const key = `jq\0${opts.pathEnv ?? process.env.PATH ?? ''}`;
  const hit = cache.get(key);
  if (hit) return hit;
  const onPath = findOnPath('jq', opts.pathEnv);
  if (!onPath) throw missing('jq', 'is not on PATH; slicing ResultRefs with jq needs it.', 'apt-get install jq');
  const hostPath = realpathSync(onPath);
  const res = spawnSync(hostPath, ['--version'], { env: {}, encoding: 'utf8', timeout: 10_000 });
  if (res.status !== 0) throw missing('jq', `at ${hostPath} does not run.`, 'Reinstall it: apt-get install jq');
  const resolved: ResolvedInterpreter = { hostPath, jailPath: hostPath, mounts: sameTargetMount(hostPath), args: [], version: (res.stdout ?? '').trim() };
  cache.set(key, resolved);
  return resolved;
}
