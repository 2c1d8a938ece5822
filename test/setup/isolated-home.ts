/**
 * Global setup: the whole suite runs with HOME pointing at an empty private
 * directory and COMIS_HOME unset by default, so nothing a test (or the code under
 * test, e.g. the logger's `~/.comis` fallback) does can touch the real `~/.comis`.
 * At the end the directory must still be empty: a test that wrote to HOME fails
 * the run here, naming what it left.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export default function setup(): () => void {
  const home = mkdtempSync(join(tmpdir(), 'comis-test-home-'));
  process.env.HOME = home;
  process.env.COMIS_TEST_HOME = home;
  delete process.env.COMIS_HOME;
  return () => {
    const left = readdirSync(home);
    rmSync(home, { recursive: true, force: true });
    if (left.length > 0) {
      // vitest only logs an error thrown here; the exit code is what CI reads.
      process.exitCode = 1;
      throw new Error(`the test suite wrote into HOME (${left.join(', ')}): tests must use a temp COMIS_HOME, never ~/.comis`);
    }
  };
}
