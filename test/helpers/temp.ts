import { appendFileSync, chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterEach } from 'vitest';

import { removeTree } from '../../src/lib/orchestrate/run-dir.js';

const made: string[] = [];

/** A fresh real directory (mode 0700) in `parent` (the temp dir by default), removed after the current test. */
export function tempDir(prefix = 'comis-test-', parent = tmpdir()): string {
  const dir = mkdtempSync(join(parent, prefix));
  made.push(dir);
  // Listed for the next suite, which removes it should this one be killed first (test/setup/isolated-home.ts).
  const run = process.env.COMIS_TEST_RUN_DIR;
  if (run) appendFileSync(join(run, `made-${process.pid}`), `${dir}\n`, { mode: 0o600 });
  return dir;
}

/**
 * A TMPDIR for one comis process (mode 0711, like /tmp's search bit, so the
 * jail uid still reaches its stage there), removed after the current test
 * with whatever a comis killed by the test left in it.
 */
export function privateTmpDir(): string {
  const dir = tempDir('comis-tmpdir-');
  chmodSync(dir, 0o711);
  return dir;
}

/**
 * Removes `dir` whatever a jail left in it: jail-uid files as root, and as an
 * unprivileged user directories the jail (our own uid then) made 0000, which
 * a plain rmSync cannot enter ({@link removeTree} gives them back first).
 */
export async function removeTempDir(dir: string): Promise<void> {
  try {
    await removeTree(dir);
  } catch {
    rmSync(dir, { recursive: true, force: true }); // e.g. deeper than removeTree walks; throws if this fails too
  }
}

afterEach(async () => {
  // Every dir is tried even when one fails, so one failure leaves nothing else behind.
  const failed: unknown[] = [];
  while (made.length > 0) await removeTempDir(made.pop()!).catch((err: unknown) => failed.push(err));
  if (failed.length > 0) throw new AggregateError(failed, `could not remove ${failed.length} temp dir(s)`);
});
