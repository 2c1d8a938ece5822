import { describe, expect, it } from 'vitest';

import { checkRefPath, compileJsonPath, JsonPathError, parseJsonPath, toDuckDbPath } from '../../src/lib/resultref/jsonpath.js';
import { checkSqlAllowed } from '../../src/lib/resultref/duckdb/sql-policy.js';

describe('parseJsonPath', () => {
  it('parses the accepted subset', () => {
    expect(parseJsonPath('$')).toEqual([]);
    expect(parseJsonPath('$.items[0].price')).toEqual([
      { kind: 'member', name: 'items' },
      { kind: 'index', index: 0 },
      { kind: 'member', name: 'price' },
    ]);
    expect(parseJsonPath(`$["a b"]['c\\'d']["e\\\\f"]`)).toEqual([
      { kind: 'member', name: 'a b' },
      { kind: 'member', name: "c'd" },
      { kind: 'member', name: 'e\\f' },
    ]);
    expect(parseJsonPath('$.a[*].b.*[-1]')).toEqual([
      { kind: 'member', name: 'a' },
      { kind: 'wildcard', of: 'array' },
      { kind: 'member', name: 'b' },
      { kind: 'wildcard', of: 'object' },
      { kind: 'index', index: -1 },
    ]);
    expect(parseJsonPath('$.content-type.$ref._x1')).toEqual([
      { kind: 'member', name: 'content-type' },
      { kind: 'member', name: '$ref' },
      { kind: 'member', name: '_x1' },
    ]);
  });

  it.each([
    ['items', /start with \$/],
    ['$..price', /recursive descent/],
    ['$.a[?(@.x > 1)]', /inside \[ \]/],
    ['$.a[0:2]', /inside \[ \]/],
    ['$.a[0,1]', /inside \[ \]/],
    ['$.a[ 0 ]', /inside \[ \]/],
    ['$.a[01]', /inside \[ \]/],
    ['$.a[-0]', /-0/],
    ['$.1a', /expected a name/],
    ['$.a b', /unexpected/],
    ['$["a"', /expected \]|unterminated/],
    ['$["a\\n"]', /unsupported escape/],
    ['$["a\nb"]', /control character/],
    ['$.a()', /unexpected/],
    [`$${'.a'.repeat(65)}`, /more than 64 steps/],
    [`$.${'a'.repeat(1100)}`, /longer than/],
  ])('refuses %j', (expr, message) => {
    expect(() => parseJsonPath(expr)).toThrow(JsonPathError);
    expect(() => parseJsonPath(expr)).toThrow(message);
  });

  it('refuses a non-string', () => {
    expect(() => parseJsonPath(42)).toThrow(/must be a string/);
  });
});

describe('toDuckDbPath', () => {
  it('quotes every member and escapes quotes and backslashes', () => {
    expect(toDuckDbPath(parseJsonPath(`$.items[0]["a \\"b\\" \\\\ c"][*].*[-2]`))).toBe('$."items"[0]."a \\"b\\" \\\\ c"[*].*[#-2]');
  });
  it('refuses member names DuckDB cannot address', () => {
    expect(() => toDuckDbPath(parseJsonPath('$[""]'))).toThrow(/cannot be addressed/);
    expect(() => toDuckDbPath(parseJsonPath('$["*"]'))).toThrow(/cannot be addressed/);
  });
});

describe('compileJsonPath', () => {
  it('emits one read-only query that passes the pre-filter, with literals quoted', () => {
    const sql = compileJsonPath(`$["it's"].x`, 'results/ref-1.json');
    expect(sql).toContain(`json_extract(doc, '$."it''s"."x"')`);
    expect(sql).toContain(`read_json_objects('results/ref-1.json', format = 'unstructured'`);
    expect(checkSqlAllowed(sql)).toEqual({ ok: true });
  });

  it.each(['/etc/passwd', 'results/../x.json', 'results/./x.json', 'results//x.json', "results/x'.json", 'results/x.json\u0000', 'ref-1.json', '', 'results/a b.json'])('refuses the ref path %j', (ref) => {
    expect(() => compileJsonPath('$.a', ref)).toThrow(JsonPathError);
  });

  it('accepts nested ref paths under results/', () => {
    expect(checkRefPath('results/writes/out-1.json')).toBe('results/writes/out-1.json');
  });
});
