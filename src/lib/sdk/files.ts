/**
 * Writing and checking emitted SDK files on disk. Writes are atomic (temp
 * file + rename), so a failed emit never leaves a half-written SDK behind.
 */
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

import { ComisError } from '../errors.js';

export interface SdkDrift {
  file: string;
  status: 'missing' | 'changed';
  /** 1-based first line that differs, for `changed`. */
  line?: number;
}

/** Kernel pseudo-filesystems: nothing an SDK belongs in, and `mkdir -p` there can loop. */
const PSEUDO_ROOTS = ['/proc', '/sys', '/dev'];

/**
 * Creates `dir` one component at a time (never `mkdir -p`, which spins forever on
 * some pseudo-filesystems) and refuses a target that exists but is not a directory.
 */
function ensureOutputDir(dir: string): void {
  const abs = resolve(dir);
  if (PSEUDO_ROOTS.some((r) => abs === r || abs.startsWith(`${r}/`))) {
    throw new ComisError('USAGE', `--out ${dir} is inside ${PSEUDO_ROOTS.find((r) => abs === r || abs.startsWith(`${r}/`))}, a kernel pseudo-filesystem, not a directory for files.`, {
      hint: 'Pass --out with a regular writable directory, e.g. --out .',
    });
  }
  const missing: string[] = [];
  let at = abs;
  while (true) {
    let st;
    try {
      st = statSync(at);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' || dirname(at) === at) throw ioError(dir, code);
      missing.unshift(at);
      at = dirname(at);
      continue;
    }
    if (!st.isDirectory()) {
      throw new ComisError('USAGE', `--out ${dir}: ${at} exists and is not a directory.`, { hint: 'Pass --out with a directory (it is created if missing).' });
    }
    break;
  }
  for (const component of missing) {
    try {
      mkdirSync(component);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'EEXIST') throw ioError(dir, code);
    }
  }
}

function ioError(dir: string, code: string | undefined): ComisError {
  return new ComisError('IO_ERROR', `Cannot create directory ${dir}: ${code ?? 'error'}.`, { hint: 'Pass --out with a writable directory.' });
}

export function writeSdkFiles(dir: string, files: Map<string, string>): string[] {
  ensureOutputDir(dir);
  const written: string[] = [];
  for (const [name, content] of files) {
    const target = join(dir, name);
    const temp = join(dir, `.${name}.${process.pid}.tmp`);
    try {
      writeFileSync(temp, content, { mode: 0o644 });
      renameSync(temp, target);
    } catch (err) {
      throw new ComisError('IO_ERROR', `Cannot write ${target}: ${(err as NodeJS.ErrnoException).code ?? String(err)}.`, {
        hint: 'Check that the directory is writable.',
      });
    }
    written.push(target);
  }
  return written;
}

/** Compares the files in `dir` with what would be emitted. */
export function checkSdkFiles(dir: string, files: Map<string, string>): SdkDrift[] {
  const drift: SdkDrift[] = [];
  for (const [name, expected] of files) {
    let actual: string;
    try {
      actual = readFileSync(join(dir, name), 'utf8');
    } catch {
      drift.push({ file: name, status: 'missing' });
      continue;
    }
    if (actual === expected) continue;
    const a = actual.split('\n');
    const e = expected.split('\n');
    let line = 0;
    while (line < a.length && line < e.length && a[line] === e[line]) line++;
    drift.push({ file: name, status: 'changed', line: line + 1 });
  }
  return drift;
}
