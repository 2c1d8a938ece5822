// The pure security modules under mutation testing, each with only its own unit tests
// (so a run stays affordable), fast ones first (they run in this order: vitest.stryker.config.mjs):
// used by stryker.config.mjs and scripts/mutate.mjs.
export const MUTATION_MODULES = {
  confine: { file: 'src/lib/confine/index.ts', tests: ['test/confine/confine.test.ts'] },
  lease: { file: 'src/lib/capabilities/lease.ts', tests: ['test/capabilities/lease.test.ts'] },
  'sql-lexer': { file: 'src/lib/resultref/duckdb/sql-lexer.ts', tests: ['test/resultref/sql-lexer.test.ts'] },
  'sql-policy': { file: 'src/lib/resultref/duckdb/sql-policy.ts', tests: ['test/resultref/sql-policy.test.ts'] },
  'slice-policy': { file: 'src/lib/resultref/slice-policy.ts', tests: ['test/resultref/slice-policy.test.ts'] },
  seccomp: { file: 'src/lib/jail/seccomp.ts', tests: ['test/jail/seccomp.test.ts'] },
  bpf: { file: 'src/lib/jail/bpf.ts', tests: ['test/jail/seccomp.test.ts'] },
  // ssrf-load first: it imports the guard inside a test, so a range-table mutant that breaks the
  // module's load fails a test (a static import would only be a collection error: see docs/mutation.md).
  ssrf: { file: 'src/lib/net/ssrf.ts', tests: ['test/web/ssrf-load.test.ts', 'test/web/ssrf.test.ts'] },
};
