// The pure security modules under mutation testing, each with only its own unit tests
// (so a run stays affordable): used by stryker.config.mjs and scripts/mutate.mjs.
export const MUTATION_MODULES = {
  confine: { file: 'src/lib/confine/index.ts', tests: ['test/confine/confine.test.ts'] },
  lease: { file: 'src/lib/capabilities/lease.ts', tests: ['test/capabilities/lease.test.ts'] },
  'sql-lexer': { file: 'src/lib/resultref/duckdb/sql-lexer.ts', tests: ['test/security/duckdb-prefilter.test.ts'] },
  'sql-policy': { file: 'src/lib/resultref/duckdb/sql-policy.ts', tests: ['test/security/duckdb-prefilter.test.ts', 'test/resultref/sql-policy.test.ts'] },
  'slice-policy': { file: 'src/lib/resultref/slice-policy.ts', tests: ['test/resultref/slice-policy.test.ts'] },
  seccomp: { file: 'src/lib/jail/seccomp.ts', tests: ['test/jail/seccomp.test.ts'] },
  bpf: { file: 'src/lib/jail/bpf.ts', tests: ['test/jail/seccomp.test.ts'] },
};
