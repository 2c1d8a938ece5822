/**
 * DuckDB is an optional dependency: where it failed to install, its tests
 * would pass by skipping. Locally they skip, saying why; in CI
 * (`process.env.CI` set) they run and fail, and {@link requireDuckDbInCi}
 * adds one test that names the cause.
 */
import { it } from 'vitest';

import { isDuckDbAvailable } from '../../src/lib/resultref/duckdb/run-slice-query.js';

// COMIS_TEST_PRETEND_NO_DUCKDB=1 checks this guard on a machine that has DuckDB.
export const hasDuckDb = isDuckDbAvailable() && process.env.COMIS_TEST_PRETEND_NO_DUCKDB !== '1';
const inCi = Boolean(process.env.CI);

/** For `describe.skipIf(...)`: true only when DuckDB is missing AND this is not CI. */
export const skipWithoutDuckDb = !hasDuckDb && !inCi;

/** Registers the test that fails in CI when DuckDB is missing, or a skipped one that says why locally. */
export function requireDuckDbInCi(): void {
  if (hasDuckDb) return;
  if (inCi) {
    it('DuckDB (@duckdb/node-api) is installed: CI must not skip the DuckDB tests', () => {
      throw new Error('@duckdb/node-api is not installed (the optional dependency failed to install); the DuckDB tests cannot be skipped in CI');
    });
  } else {
    it.skip('SKIPPED: @duckdb/node-api is not installed (optional dependency); in CI (CI set) these tests fail instead');
  }
}
