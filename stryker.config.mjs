// Mutation testing of the pure security modules (`npm run mutate`, not in CI: too slow for
// 2 cores). scripts/mutate.mjs runs one module at a time: COMIS_MUTATE names it, and only
// that module's own unit test files run against its mutants (vitest.stryker.config.ts).
import { MUTATION_MODULES } from './scripts/mutation-modules.mjs';

const name = process.env.COMIS_MUTATE ?? 'lease';
const module = MUTATION_MODULES[name];
if (!module) throw new Error(`COMIS_MUTATE must be one of ${Object.keys(MUTATION_MODULES).join(', ')}`);
process.env.COMIS_MUTATE_TESTS = module.tests.join(',');

export default {
  testRunner: 'vitest',
  plugins: ['@stryker-mutator/vitest-runner'],
  vitest: { configFile: 'vitest.stryker.config.mjs', related: false },
  mutate: [module.file],
  // 'all': the seccomp and BPF tests build their filter at collection time (static mutants), which
  // per-test coverage cannot attribute; each module's own test files are small enough to run whole.
  coverageAnalysis: 'all',
  incremental: true,
  incrementalFile: `reports/mutation/${name}.incremental.json`,
  reporters: ['clear-text', 'json', 'progress'],
  jsonReporter: { fileName: `reports/mutation/${name}.json` },
  concurrency: 1,
  timeoutMS: 20_000,
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
  thresholds: { high: 90, low: 85, break: null },
};
