/**
 * Global setup: the whole suite runs with HOME pointing at an empty private
 * directory and COMIS_HOME unset by default, so nothing a test (or the code under
 * test, e.g. the logger's `~/.comis` fallback) does can touch the real `~/.comis`.
 * At the end the directory must still be empty: a test that wrote to HOME fails
 * the run here, naming what it left.
 *
 * A suite killed midway (a CI timeout, ^C twice) runs no afterEach and no
 * teardown: its HOME and the temp dirs its tests had open stayed in /tmp for
 * good. So HOME lives in a run dir named after this process
 * (`comis-test-run-<pid>-<start>-XXXXXX`), where each worker also lists the
 * temp dirs it makes (test/helpers/temp.ts), and the next suite removes a
 * dead run's dir and the listed dirs that are still ours.
 */
import { closeSync, constants, fstatSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';

import { readProcStat } from '../../src/lib/jail/host.js';
import { removeTree } from '../../src/lib/orchestrate/run-dir.js';

const RUN_DIR = /^comis-test-run-(\d+)-(\d+)-[A-Za-z0-9]{6}$/;

/** A directory of ours, not a link (the sticky /tmp keeps others from swapping it after the check). */
function ownDir(path: string): boolean {
  try {
    const fd = openSync(path, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
    try {
      return fstatSync(fd).uid === process.geteuid?.();
    } finally {
      closeSync(fd);
    }
  } catch {
    return false;
  }
}

async function sweepKilledRuns(parent: string): Promise<void> {
  for (const name of readdirSync(parent)) {
    const m = RUN_DIR.exec(name);
    if (!m) continue;
    const st = readProcStat(Number(m[1]));
    if (st && st.startTime === m[2] && st.state !== 'Z' && st.state !== 'X') continue; // a suite still running
    const run = join(parent, name);
    if (!ownDir(run)) continue;
    for (const list of readdirSync(run).filter((n) => n.startsWith('made-'))) {
      for (const dir of readFileSync(join(run, list), 'utf8').split('\n')) {
        if (basename(dir).startsWith('comis-') && ownDir(dir)) await removeTree(dir).catch(() => undefined);
      }
    }
    await removeTree(run).catch(() => undefined);
  }
}

export default async function setup(): Promise<() => Promise<void>> {
  await sweepKilledRuns(tmpdir());
  const start = readProcStat(process.pid)?.startTime ?? '0';
  const run = mkdtempSync(join(tmpdir(), `comis-test-run-${process.pid}-${start}-`));
  const home = join(run, 'home');
  mkdirSync(home, { mode: 0o700 });
  process.env.HOME = home;
  process.env.COMIS_TEST_HOME = home;
  process.env.COMIS_TEST_RUN_DIR = run; // where test/helpers/temp.ts lists the temp dirs it makes
  delete process.env.COMIS_HOME;
  return async () => {
    const left = readdirSync(home);
    await removeTree(run);
    if (left.length > 0) {
      // vitest only logs an error thrown here; the exit code is what CI reads.
      process.exitCode = 1;
      throw new Error(`the test suite wrote into HOME (${left.join(', ')}): tests must use a temp COMIS_HOME, never ~/.comis`);
    }
  };
}
