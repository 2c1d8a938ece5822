/**
 * Writing and checking emitted SDK files on disk. Writes are atomic (temp
 * file + rename), so a failed emit never leaves a half-written SDK behind.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { ComisError } from '../errors.js';

export interface SdkDrift {
  file: string;
  status: 'missing' | 'changed';
  /** 1-based first line that differs, for `changed`. */
  line?: number;
}

export function writeSdkFiles(dir: string, files: Map<string, string>): string[] {
  try {
    mkdirSync(dir, { recursive: true });
  } catch (err) {
    throw new ComisError('IO_ERROR', `Cannot create directory ${dir}: ${(err as NodeJS.ErrnoException).code ?? String(err)}.`, {
      hint: 'Pass --out with a writable directory.',
    });
  }
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
