/**
 * Unit tests of the SQL pre-filter's tables and of the parse-tree walk on
 * synthetic trees (the DuckDB-backed checks are in test/security/duckdb-prefilter.test.ts).
 */
import { describe, expect, it } from 'vitest';

import { checkSqlAllowed, DENIED_KEYWORDS, deniedFunctionReason, findDeniedInParseTree, looksLikeUrl } from '../../src/lib/resultref/duckdb/sql-policy.js';

// Written out here, not read from the module: a keyword dropped from the table must fail this test.
const KEYWORDS = ['install', 'load', 'attach', 'detach', 'copy', 'export', 'import', 'pragma', 'set', 'reset', 'call', 'create', 'insert', 'update', 'delete', 'drop', 'alter', 'truncate', 'merge', 'vacuum', 'checkpoint', 'use', 'prepare', 'execute', 'deallocate', 'begin', 'commit', 'rollback', 'abort', 'grant', 'revoke'];

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
  });

  it('gives up on a tree too large to walk, as a refusal', () => {
    const wide = Array.from({ length: 1_000_001 }, () => 0);
    expect(findDeniedInParseTree(wide)).toBe('the query is too complex');
    expect(findDeniedInParseTree(Array.from({ length: 999_998 }, () => 0))).toBeUndefined();
  });
});
