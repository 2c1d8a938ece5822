/**
 * Unit tests of the SQL pre-filter's tables and of the parse-tree walk on
 * synthetic trees (the DuckDB-backed checks are in test/security/duckdb-prefilter.test.ts).
 */
import { describe, expect, it } from 'vitest';

import { checkSqlAllowed, DENIED_FUNCTIONS, DENIED_KEYWORDS, deniedFunctionReason, findDeniedInParseTree, looksLikeUrl, MAX_QUERY_CHARS } from '../../src/lib/resultref/duckdb/sql-policy.js';

// Written out here, not read from the module: a keyword dropped from the table must fail this test.
const KEYWORDS = [
  'install',
  'load',
  'attach',
  'detach',
  'copy',
  'export',
  'import',
  'pragma',
  'set',
  'reset',
  'call',
  'create',
  'insert',
  'update',
  'delete',
  'drop',
  'alter',
  'truncate',
  'merge',
  'vacuum',
  'checkpoint',
  'use',
  'prepare',
  'execute',
  'deallocate',
  'begin',
  'commit',
  'rollback',
  'abort',
  'grant',
  'revoke',
];

describe('sql policy tables', () => {
  it('denies exactly the statement keywords that change state, load code or reach outside', () => {
    expect([...DENIED_KEYWORDS].sort()).toEqual([...KEYWORDS].sort());
    for (const kw of KEYWORDS) {
      const r = checkSqlAllowed(`SELECT 1 AS a, ${kw} AS b`);
      expect(r.ok, kw).toBe(false);
      expect(checkSqlAllowed(`SELECT 1 AS a, "${kw}" AS b`).ok, `"${kw}" quoted`).toBe(true);
    }
  });

  it('refuses empty, non-string and URL-bearing input with its reason', () => {
    expect(checkSqlAllowed(5)).toEqual({ ok: false, reason: 'the query must be a string' });
    expect(checkSqlAllowed('   ')).toEqual({ ok: false, reason: 'the query is empty' });
    expect(looksLikeUrl('s3://bucket/x')).toBe(true);
    expect(looksLikeUrl('results/ref-1.json')).toBe(false);
  });

  it('names denied functions case-insensitively, and never an inherited property', () => {
    expect(deniedFunctionReason('READ_TEXT')).toBeDefined();
    expect(deniedFunctionReason('read_text')).toBe(deniedFunctionReason('Read_Text'));
    expect(deniedFunctionReason('toString')).toBeUndefined();
    expect(deniedFunctionReason('constructor')).toBeUndefined();
    expect(deniedFunctionReason('lower')).toBeUndefined();
  });
});

// Written out here too, each with the reason a script sees: an entry dropped (or its reason emptied) must fail.
const FUNCTIONS: Record<string, string> = {
  read_text: 'reads raw files',
  read_blob: 'reads raw files',
  glob: 'lists files',
  read_duckdb: 'opens database files',
  sniff_csv: 'probes files',
  parquet_metadata: 'reads file metadata',
  parquet_schema: 'reads file metadata',
  parquet_file_metadata: 'reads file metadata',
  parquet_kv_metadata: 'reads file metadata',
  parquet_full_metadata: 'reads file metadata',
  parquet_bloom_probe: 'reads file metadata',
  getenv: 'reads the environment',
  current_setting: 'reads engine settings',
  which_secret: 'reads secrets',
  query: 'runs dynamic SQL',
  query_table: 'runs dynamic SQL',
  json_execute_serialized_sql: 'runs dynamic SQL',
  checkpoint: 'changes engine state',
  force_checkpoint: 'changes engine state',
  enable_logging: 'changes engine state',
  disable_logging: 'changes engine state',
  truncate_duckdb_logs: 'changes engine state',
  enable_profiling: 'changes engine state',
  disable_profiling: 'changes engine state',
  enable_peg_parser: 'changes engine state',
  disable_peg_parser: 'changes engine state',
  arrow_scan: 'scans raw memory',
  arrow_scan_dumb: 'scans raw memory',
};

describe('denied functions', () => {
  it('refuses exactly these functions, each called by name, with its reason', () => {
    expect(Object.keys(DENIED_FUNCTIONS).sort()).toEqual(Object.keys(FUNCTIONS).sort());
    for (const [name, why] of Object.entries(FUNCTIONS)) {
      expect(deniedFunctionReason(name), name).toBe(why);
      // checkpoint is a statement verb as well: unquoted, the keyword refusal comes first.
      const unquoted = DENIED_KEYWORDS.has(name) ? `${name.toUpperCase()} is not allowed: only a single read-only SELECT query is accepted (a column of that name must be double-quoted)` : `${name}() is not allowed: it ${why}`;
      expect(checkSqlAllowed(`SELECT * FROM ${name}('results/x')`), name).toEqual({ ok: false, reason: unquoted });
      expect(checkSqlAllowed(`SELECT * FROM "${name.toUpperCase()}"('results/x')`), `"${name}"`).toEqual({ ok: false, reason: `${name.toUpperCase()}() is not allowed: it ${why}` });
      expect(checkSqlAllowed(`SELECT "${name}" FROM t`).ok, `${name} as a column`).toBe(true);
    }
  });

  it('refuses the duckdb_ and pragma_ families by prefix, and only at the start of a name', () => {
    expect(deniedFunctionReason('duckdb_settings')).toBe('reads engine internals');
    expect(deniedFunctionReason('DUCKDB_anything_new')).toBe('reads engine internals');
    expect(deniedFunctionReason('pragma_version')).toBe('runs a PRAGMA');
    expect(checkSqlAllowed('SELECT * FROM pragma_table_info(1)')).toEqual({ ok: false, reason: 'pragma_table_info() is not allowed: it runs a PRAGMA' });
    expect(deniedFunctionReason('my_duckdb_settings')).toBeUndefined();
    expect(deniedFunctionReason('duckdb')).toBeUndefined();
    expect(deniedFunctionReason('pragma')).toBeUndefined();
  });

  it('judges a quoted identifier as a name but a string never as one', () => {
    expect(checkSqlAllowed(`SELECT "glob"('x')`)).toEqual({ ok: false, reason: 'glob() is not allowed: it lists files' });
    expect(checkSqlAllowed(`SELECT 'glob' ('x') AS a`)).toEqual({ ok: true });
    expect(checkSqlAllowed(`SELECT glob AS a, ('x') AS b`)).toEqual({ ok: true });
  });
});

describe('checkSqlAllowed', () => {
  const ONLY_READ = 'only a single read-only SELECT query is accepted';

  it('accepts exactly the five ways a read-only query starts, behind any parentheses', () => {
    for (const sql of ['SELECT 1', 'WITH a AS (SELECT 1) SELECT * FROM a', 'VALUES (1)', 'FROM t', 'TABLE t', '((SELECT 1))', 'select 1']) {
      expect(checkSqlAllowed(sql), sql).toEqual({ ok: true });
    }
    expect(checkSqlAllowed('SHOW TABLES')).toEqual({ ok: false, reason: `SHOW is not allowed: ${ONLY_READ}` });
    expect(checkSqlAllowed('describe t')).toEqual({ ok: false, reason: `DESCRIBE is not allowed: ${ONLY_READ}` });
    expect(checkSqlAllowed('"select" 1')).toEqual({ ok: false, reason: `this statement is not allowed: ${ONLY_READ}` });
    expect(checkSqlAllowed("'select'")).toEqual({ ok: false, reason: `this statement is not allowed: ${ONLY_READ}` });
    expect(checkSqlAllowed('1')).toEqual({ ok: false, reason: `this statement is not allowed: ${ONLY_READ}` });
    expect(checkSqlAllowed('((')).toEqual({ ok: false, reason: `this statement is not allowed: ${ONLY_READ}` });
    expect(checkSqlAllowed('(')).toEqual({ ok: false, reason: `this statement is not allowed: ${ONLY_READ}` });
  });

  it('names a denied keyword as written, upper-cased, and how to use it as a column', () => {
    expect(checkSqlAllowed('SELECT 1 AS a, Load AS b')).toEqual({ ok: false, reason: `LOAD is not allowed: ${ONLY_READ} (a column of that name must be double-quoted)` });
    expect(checkSqlAllowed('(LOAD x)')).toEqual({ ok: false, reason: `LOAD is not allowed: ${ONLY_READ}` });
  });

  it('takes semicolons only at the very end', () => {
    expect(checkSqlAllowed('SELECT 1;;')).toEqual({ ok: true });
    expect(checkSqlAllowed(';')).toEqual({ ok: false, reason: 'the query is empty' });
    expect(checkSqlAllowed(';;')).toEqual({ ok: false, reason: 'the query is empty' });
    expect(checkSqlAllowed('-- nothing')).toEqual({ ok: false, reason: 'the query is empty' });
    expect(checkSqlAllowed('SELECT 1; SELECT 2')).toEqual({ ok: false, reason: `multiple statements are not accepted: ${ONLY_READ}` });
    expect(checkSqlAllowed(';SELECT 1')).toEqual({ ok: false, reason: `multiple statements are not accepted: ${ONLY_READ}` });
    expect(checkSqlAllowed("SELECT ';' AS a;")).toEqual({ ok: true });
  });

  it(`accepts a query of exactly ${MAX_QUERY_CHARS} characters and refuses one more`, () => {
    const exact = `SELECT 1${' '.repeat(MAX_QUERY_CHARS - 8)}`;
    expect(exact).toHaveLength(MAX_QUERY_CHARS);
    expect(checkSqlAllowed(exact)).toEqual({ ok: true });
    expect(checkSqlAllowed(`${exact} `)).toEqual({ ok: false, reason: `the query is longer than ${MAX_QUERY_CHARS} characters` });
    expect(MAX_QUERY_CHARS).toBe(65_536);
  });

  it('calls blank text empty before anything else, whatever its length or kind of space', () => {
    expect(checkSqlAllowed('\u00a0\u3000')).toEqual({ ok: false, reason: 'the query is empty' });
    expect(checkSqlAllowed(' '.repeat(MAX_QUERY_CHARS + 1))).toEqual({ ok: false, reason: 'the query is empty' });
  });

  it('refuses at the first offending token, in query order', () => {
    expect(checkSqlAllowed("SELECT 'http://x' AS a, load AS b")).toEqual({ ok: false, reason: 'URLs are not allowed: the query may read only files under results/' });
    expect(checkSqlAllowed("SELECT load AS b, 'http://x' AS a")).toEqual({ ok: false, reason: `LOAD is not allowed: ${ONLY_READ} (a column of that name must be double-quoted)` });
  });

  it('passes the lexer refusal on, with its message', () => {
    expect(checkSqlAllowed("SELECT 'x")).toEqual({ ok: false, reason: 'the query cannot be read safely: unterminated quoted string' });
    expect(checkSqlAllowed('\t\n')).toEqual({ ok: false, reason: 'the query is empty' });
  });

  it('refuses a URL in a string or a quoted identifier, and in literals joined in order only', () => {
    const URL_REASON = 'URLs are not allowed: the query may read only files under results/';
    expect(checkSqlAllowed(`SELECT * FROM "s3://b/x"`)).toEqual({ ok: false, reason: URL_REASON });
    expect(checkSqlAllowed(`SELECT 'http://x' AS a`)).toEqual({ ok: false, reason: URL_REASON });
    expect(checkSqlAllowed(`SELECT 'a:' || '//b' AS a`)).toEqual({ ok: false, reason: URL_REASON });
    expect(checkSqlAllowed(`SELECT '//b' || 'a:' AS a`)).toEqual({ ok: true });
    expect(checkSqlAllowed(`SELECT "a:" || "//b" FROM t`)).toEqual({ ok: true });
    expect(looksLikeUrl('a:/b')).toBe(false);
    expect(looksLikeUrl('://')).toBe(true);
  });
});

describe('findDeniedInParseTree', () => {
  it('finds a denied function anywhere in objects and arrays, naming it in lower case', () => {
    const why = deniedFunctionReason('read_text')!;
    expect(findDeniedInParseTree({ a: [{ b: { function_name: 'READ_TEXT' } }] })).toBe(`read_text() is not allowed: it ${why}`);
    expect(findDeniedInParseTree([1, null, true, [{ function_name: 'lower' }, { children: [{ function_name: 'read_text' }] }]])).toBe(`read_text() is not allowed: it ${why}`);
  });

  it('finds a URL in any string, key values included', () => {
    expect(findDeniedInParseTree({ x: { y: ['ok', 'https://example.test/a'] } })).toBe('URLs are not allowed: the query may read only files under results/');
    expect(findDeniedInParseTree('file:///etc/passwd')).toBe('URLs are not allowed: the query may read only files under results/');
  });

  it('accepts a clean tree, numbers, nulls and allowed functions', () => {
    expect(findDeniedInParseTree({ function_name: 'lower', children: [{ function_name: 'sum' }, 3, null, 'results/ref-1.json'] })).toBeUndefined();
    expect(findDeniedInParseTree(null)).toBeUndefined();
    expect(findDeniedInParseTree(42)).toBeUndefined();
    expect(findDeniedInParseTree({ function_name: 7 })).toBeUndefined();
    // Catalog views read as tables, in DuckDB's own shape of a table reference.
    const table = (table_name: string, schema_name = ''): unknown => ({ statements: [{ node: { from_table: { type: 'BASE_TABLE', table_name, schema_name, catalog_name: '' } } }] });
    for (const [name, schema] of [
      ['pg_settings', ''],
      ['PRAGMA_DATABASE_LIST', ''],
      ['duckdb_databases', 'main'],
      ['tables', 'information_schema'],
      ['pg_proc', 'pg_catalog'],
    ] as const) {
      expect(findDeniedInParseTree(table(name, schema)), name).toMatch(/is not allowed: it reads engine internals/);
    }
    expect(findDeniedInParseTree(table('results/ref-1.csv'))).toBeUndefined();
    expect(findDeniedInParseTree(table('x'))).toBeUndefined();
  });

  it('gives up on a tree too large to walk, as a refusal', () => {
    const wide = Array.from({ length: 1_000_001 }, () => 0);
    expect(findDeniedInParseTree(wide)).toBe('the query is too complex');
    // The root and 999,999 items: exactly 1,000,000 nodes are still walked.
    expect(findDeniedInParseTree(Array.from({ length: 999_999 }, () => 0))).toBeUndefined();
  });
});
