import { defineConfig } from 'vitest/config';

// The vitest config of a mutation run: only the test files of the module under mutation
// (COMIS_MUTATE_TESTS, set by stryker.config.mjs), one worker, the suite's isolated home.
export default defineConfig({
  test: {
    include: (process.env.COMIS_MUTATE_TESTS ?? '').split(',').filter(Boolean),
    testTimeout: 60_000,
    hookTimeout: 60_000,
    maxWorkers: 1,
    pool: 'forks',
    globalSetup: ['test/setup/isolated-home.ts'],
  },
});
