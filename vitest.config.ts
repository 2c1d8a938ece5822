import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'test/**/*.test.tsx'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Tests spawn real jails and real processes; two cores here, keep it civil.
    maxWorkers: 2,
    pool: 'forks',
    // HOME is an empty temp dir for the whole run and must stay empty (no test touches ~/.comis).
    globalSetup: ['test/setup/isolated-home.ts'],
  },
});
