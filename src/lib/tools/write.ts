/**
 * `write`: the typed write surface (off by default; `autonomy.write: true`).
 *
 * Every path lands under this run's `results/writes/` area, which lives
 * outside the jail-writable workspace and is bound into the jail read-only,
 * so the jail cannot race it; the area is reaped at run end. `..`, absolute
 * paths and the skill-discovery/config subtrees are refused, so a jailed turn
 * can never plant a cross-run skill.
 */
import { closeSync, constants, fstatSync, ftruncateSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { dirname, isAbsolute, join, normalize, sep } from 'node:path';

import { CapCallError } from '../capsocket/server.js';
import type { ToolContext } from './context.js';
import { descriptorPath } from './confined-fs.js';

const FORBIDDEN_ROOTS = new Set(['skills', '.learned-skills', 'memory', 'config', '.comis']);

export interface WriteArgs {
  path: string;
  content: string;
}

export function writeTool(ctx: ToolContext, args: WriteArgs): unknown {
  const given = args.path;
  if (given.includes('\0')) throw new CapCallError('invalid_path', 'path contains a NUL byte');
  if (isAbsolute(given)) throw new CapCallError('path_outside', 'write takes a path relative to results/writes, not an absolute path');
  const rel = normalize(given);
  if (rel === '..' || rel.startsWith(`..${sep}`) || rel === '.' || rel.endsWith(sep)) {
    throw new CapCallError('path_outside', 'write path must name a file inside results/writes (no "..")');
  }
  const parts = rel.split(sep);
  if (parts.some((p) => FORBIDDEN_ROOTS.has(p.toLowerCase()))) {
    throw new CapCallError('path_forbidden', 'write may not target the skills/, .learned-skills/, memory or config subtrees');
  }
  const data = Buffer.from(args.content, 'utf8');
  if (data.length > ctx.budget.remainingBytes) {
    throw new CapCallError('quota_exceeded', `this run's results area has ${ctx.budget.remainingBytes} bytes left; the write needs ${data.length}`);
  }
  const target = join(ctx.writesDir, rel);
  mkdirSync(dirname(target), { recursive: true, mode: 0o755 });
  // No O_TRUNC: a planted hard link must be refused before anything is changed.
  const fd = openSync(target, constants.O_WRONLY | constants.O_CREAT | constants.O_NOFOLLOW, 0o644);
  try {
    const real = descriptorPath(fd);
    const st = fstatSync(fd);
    if (!real.startsWith(`${ctx.writesDir}/`) || !st.isFile() || st.nlink !== 1) {
      throw new CapCallError('path_outside', 'refusing to write through a link');
    }
    ftruncateSync(fd, 0);
    let off = 0;
    while (off < data.length) off += writeSync(fd, data, off, data.length - off);
  } finally {
    closeSync(fd);
  }
  ctx.budget.remainingBytes -= data.length;
  return { path: `results/writes/${parts.join('/')}`, bytes: data.length };
}
