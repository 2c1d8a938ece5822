import { resolve } from 'node:path';

import { BaseSequencer } from 'vitest/node';
import { defineConfig } from 'vitest/config';

// The vitest config of a mutation run: only the test files of the module under mutation
// (COMIS_MUTATE_TESTS, set by stryker.config.mjs), one worker, the suite's isolated home.
const files = (process.env.COMIS_MUTATE_TESTS ?? '').split(',').filter(Boolean);

/**
 * The files run in the order scripts/mutation-modules.mjs lists them: the module's own fast unit
 * tests first, a slow battery last. Stryker stops at the first failing test, so a mutant the unit
 * tests kill never waits for the battery (vitest's default order puts the longest file first).
 */
class ListedOrder extends BaseSequencer {
  async sort(specs) {
    const rank = (spec) => {
      const at = files.findIndex((f) => resolve(f) === resolve(spec.moduleId));
      return at === -1 ? files.length : at;
    };
    return [...specs].sort((a, b) => rank(a) - rank(b));
  }
}

export default defineConfig({
  test: {
    include: files,
    sequence: { sequencer: ListedOrder },
    testTimeout: 60_000,
    hookTimeout: 60_000,
    maxWorkers: 1,
    pool: 'forks',
    globalSetup: ['test/setup/isolated-home.ts'],
  },
});
