/**
 * Attack battery for the slicer's SQL pre-filter (no process is started by the
 * filter itself). Every refused verb and reader in several spellings; URL
 * tricks; lexical tricks; and a differential test against DuckDB's own parser:
 * no query the filter accepts may, in DuckDB's parse, call a denied function
 * or hold more than one statement.
 */
import { describe, expect, it } from 'vitest';

import { checkSqlAllowed, DENIED_FUNCTIONS, findDeniedInParseTree } from '../../src/lib/resultref/duckdb/sql-policy.js';
import { SqlLexError, tokenizeSql } from '../../src/lib/resultref/duckdb/sql-lexer.js';
import { compileJsonPath } from '../../src/lib/resultref/jsonpath.js';
import { requireDuckDbInCi, skipWithoutDuckDb } from '../helpers/duckdb.js';

requireDuckDbInCi();

function refused(sql: string): string {
  const result = checkSqlAllowed(sql);
  if (result.ok) throw new Error(`accepted, but must be refused: ${JSON.stringify(sql)}`);
  return result.reason;
}

function accepted(sql: string): void {
  const result = checkSqlAllowed(sql);
  if (!result.ok) throw new Error(`refused (${result.reason}), but must be accepted: ${JSON.stringify(sql)}`);
}

/** The same statement spelled with case changes, comments and odd whitespace around its words. */
function spellings(sql: string): string[] {
  const words = sql.split(' ');
  return [
    sql,
    sql.toLowerCase(),
    words.map((w, i) => (i % 2 ? w.toLowerCase() : w.toUpperCase())).join(' '),
    `/* leading */ ${sql}`,
    `-- leading\n${sql}`,
    `/* nested /* comment */ still */ ${sql}`,
    words.join('\n\t '),
    words.join(' /**/ '),
    words.join('\r\n'),
    words.join('\f'),
    `${sql};`,
    `  ${sql}  ;  -- trailing`,
  ];
}

describe('refused verbs: anything but a single read-only query', () => {
  const statements = [
    'INSTALL httpfs',
    'FORCE INSTALL httpfs',
    'LOAD httpfs',
    "LOAD 'results/evil.duckdb_extension'",
    "ATTACH 'results/x.db' AS x",
    "ATTACH ':memory:' AS m",
    'DETACH m',
    "COPY (SELECT 1) TO 'results/out.csv'",
    "COPY t FROM 'results/in.csv'",
    "EXPORT DATABASE 'results/dump'",
    "IMPORT DATABASE 'results/dump'",
    'PRAGMA database_list',
    'PRAGMA version',
    'SET enable_external_access = true',
    'SET GLOBAL enable_external_access = true',
    "SET allowed_directories = ['/']",
    'SET lock_configuration = false',
    'SET VARIABLE x = 1',
    'RESET enable_external_access',
    'RESET ALL',
    'CALL pragma_version()',
    "CALL enable_logging(storage = 'file', storage_path = 'results/log')",
    "CREATE SECRET (TYPE s3, KEY_ID 'k', SECRET 's')",
    'CREATE TABLE t AS SELECT 1',
    'CREATE MACRO m() AS 1',
    'CREATE VIEW v AS SELECT 1',
    'INSERT INTO t VALUES (1)',
    'UPDATE t SET a = 1',
    'DELETE FROM t',
    'DROP TABLE t',
    'ALTER TABLE t ADD COLUMN b INT',
    'TRUNCATE t',
    'CHECKPOINT',
    'FORCE CHECKPOINT',
    'USE memory',
    'VACUUM',
    'BEGIN TRANSACTION',
    'COMMIT',
    'ROLLBACK',
    'PREPARE p AS SELECT 1',
    'EXECUTE p',
    'DEALLOCATE p',
    'EXPLAIN SELECT 1',
    'EXPLAIN ANALYZE SELECT 1',
    'DESCRIBE SELECT 1',
    'SHOW TABLES',
    'SUMMARIZE SELECT 1',
    'PIVOT t ON a',
    'ANALYZE',
  ];
  it.each(statements)('%s, in every spelling', (sql) => {
    for (const variant of spellings(sql)) expect(refused(variant)).toMatch(/not allowed|not accepted/);
  });

  it('refuses them after a query, inside CTEs and subqueries, and as second statements', () => {
    for (const sql of [
      'SELECT 1; LOAD httpfs',
      'SELECT 1 ; SET enable_external_access = true',
      "SELECT 1 /* ; */ ; COPY (SELECT 1) TO 'results/x.csv'",
      'SELECT 1; SELECT 2',
      'SELECT 1;;SELECT 2',
      'WITH t AS (SELECT 1) INSERT INTO x SELECT * FROM t',
      "WITH t AS (SELECT 1) COPY t TO 'results/x.csv'",
      'SELECT * FROM (SELECT 1) WHERE 1 = (SELECT 1); DROP TABLE x',
      "(SELECT 1) ; ATTACH 'x'",
      'SELECT (SELECT 1 FROM (INSERT INTO t VALUES (1) RETURNING *))',
      'VALUES (1); SET threads = 64',
    ]) {
      expect(refused(sql)).toMatch(/not allowed|not accepted/);
    }
  });

  it('says how to name a column that shares a verb name', () => {
    expect(refused("SELECT load FROM read_json_auto('results/x.jsonl')")).toMatch(/double-quoted/);
    accepted(`SELECT "load", "set", "copy" FROM read_json_auto('results/x.jsonl')`);
  });
});

describe('refused readers and functions', () => {
  const names = [
    'read_text',
    'read_blob',
    'glob',
    'getenv',
    'parquet_metadata',
    'parquet_schema',
    'parquet_file_metadata',
    'parquet_kv_metadata',
    'parquet_full_metadata',
    'query',
    'query_table',
    'duckdb_secrets',
    'duckdb_settings',
    'duckdb_extensions',
    'duckdb_databases',
    'which_secret',
    'sniff_csv',
    'current_setting',
    'json_execute_serialized_sql',
    'read_duckdb',
    'pragma_version',
    'pragma_database_list',
    'enable_logging',
    'enable_profiling',
    'checkpoint',
    'arrow_scan',
  ];
  const shapes = (f: string, F: string): string[] => [
    `SELECT * FROM ${f}('results/x')`,
    `select * from ${F}('results/x')`,
    `SELECT * FROM "${f}"('results/x')`,
    `SELECT * FROM "${F}"('results/x')`,
    `SELECT * FROM main.${f}('results/x')`,
    `SELECT * FROM system.main."${f}"('results/x')`,
    `SELECT * FROM ${f} /* gap */ ('results/x')`,
    `SELECT * FROM ${f}\n\t(\n'results/x')`,
    `SELECT * FROM ${f} -- gap\n('results/x')`,
    `FROM ${f}('results/x')`,
    `WITH t AS (SELECT * FROM ${f}('/etc/passwd')) SELECT * FROM t`,
    `WITH RECURSIVE t AS (SELECT 1 AS n UNION ALL SELECT n FROM ${f}('x'), t) SELECT * FROM t`,
    `SELECT (SELECT count(*) FROM ${f}('/etc/passwd')) AS n`,
    `SELECT * FROM range(1) WHERE EXISTS (SELECT 1 FROM ${f}('/etc/passwd'))`,
    `SELECT * FROM read_csv('results/a.csv') JOIN ${f}('/etc/passwd') ON true`,
    `SELECT ${f}('HOME') AS v`,
    `SELECT list_transform(['x'], p -> ${f}(p)) AS v`,
    `(SELECT * FROM ${f}('x'))`,
    `VALUES ((SELECT 1 FROM ${f}('x')))`,
  ];
  it.each(names)('%s() in every shape', (f) => {
    for (const sql of shapes(f, f.toUpperCase())) expect(refused(sql)).toMatch(/not allowed/);
  });

  it('refuses building SQL at run time through query() and friends', () => {
    for (const sql of [
      "SELECT * FROM query('SELECT * FROM rea' || 'd_text(''/etc/passwd'')')",
      "SELECT * FROM query_table('duckdb_' || 'settings')",
      "SELECT * FROM json_execute_serialized_sql(json_serialize_sql('SELECT 1'))",
      'SELECT * FROM "QUERY"($q$SELECT 1$q$)',
    ]) {
      expect(refused(sql)).toMatch(/dynamic SQL/);
    }
  });

  it('lets the same names through where they are not calls', () => {
    accepted("SELECT query, glob, read_text FROM read_json_auto('results/ref-1.jsonl')");
    accepted("SELECT 'read_text(''/etc/passwd'')' AS s");
    accepted("SELECT 1 AS a -- read_text('/etc/passwd')");
    accepted("SELECT 1 AS a /* read_text('/etc/passwd') /* nested */ glob('*') */");
    accepted("SELECT $$ read_text('/etc/passwd') $$ AS s");
  });
});

describe('refused URLs, however the string is written', () => {
  const schemes = ['http', 'https', 'HTTPS', 's3', 'S3A', 's3n', 'gcs', 'gs', 'r2', 'azure', 'az', 'abfss', 'hf', 'file'];
  it.each(schemes)('%s://', (scheme) => {
    const url = `${scheme}://bucket/data.parquet`;
    for (const sql of [
      `SELECT * FROM read_parquet('${url}')`,
      `SELECT * FROM read_csv(['results/a.csv', '${url}'])`,
      `SELECT * FROM '${url}'`,
      `SELECT * FROM "${url}"`,
      `SELECT * FROM read_csv(E'${url}')`,
      `SELECT * FROM read_csv(N'${url}')`,
      `SELECT * FROM read_csv($$${url}$$)`,
      `SELECT * FROM read_csv($u$${url}$u$)`,
      `SELECT * FROM read_csv('${scheme}:' || '//bucket/x')`,
      `SELECT * FROM read_csv(concat('${scheme}', ':/', '/bucket/x'))`,
      `SELECT * FROM read_csv('${scheme}:'\n'//bucket/x')`,
    ]) {
      expect(refused(sql)).toMatch(/URLs are not allowed/);
    }
  });

  it('decodes E-string escapes before judging', () => {
    expect(refused("SELECT * FROM read_csv(E'http\\x3a//x/y')")).toMatch(/URLs/);
    expect(refused("SELECT * FROM read_csv(E'\\150ttps://x/y')")).toMatch(/URLs/);
    expect(refused("SELECT * FROM read_csv(E'https:\\/\\/x/y')")).toMatch(/URLs/);
    expect(refused("SELECT * FROM read_csv('it''s://x')")).toMatch(/URLs/);
  });
});

describe('lexical tricks are refused rather than guessed', () => {
  it.each([
    ['NUL byte', 'SELECT 1 AS a\u0000; LOAD httpfs'],
    ['vertical tab', 'SELECT 1\u000bAS a'],
    ['non-breaking space outside quotes', "SELECT\u00a0*\u00a0FROM read_text('x')"],
    ['ideographic space', 'SELECT 1\u3000AS a'],
    ['byte-order mark', '\ufeffSELECT 1'],
    ['unicode letters outside quotes', 'SELECT 1 AS ä'],
    ['U& identifier', 'SELECT * FROM U&"read\\0074ext"(\'x\')'],
    ['U& string', "SELECT * FROM read_csv(U&'\\0068ttp://x')"],
    ['Unicode escape in an E-string', "SELECT E'\\u0041' AS a"],
    ['unterminated string', "SELECT 'abc"],
    ['unterminated E-string', "SELECT E'abc\\'"],
    ['unterminated identifier', 'SELECT "abc'],
    ['unterminated dollar quote', 'SELECT $a$ abc $b$'],
    ['unterminated comment', 'SELECT 1 /* abc'],
    ['unterminated nested comment', 'SELECT 1 /* /* */ abc'],
    ['string glued to a number', "SELECT 1e'\\' , read_text('x') , '' AS a"],
    ['dollar quote glued to a number', 'SELECT 1$a$ x $a$'],
    ['quoted identifier glued to a word', 'SELECT a"b" FROM t'],
    ['lone surrogate', "SELECT '\ud800' AS a"],
  ])('%s', (_name, sql) => {
    expect(refused(sql)).toMatch(/cannot be read safely|not allowed|not accepted/);
  });

  it('follows DuckDB where strings and comments end', () => {
    // Plain strings take backslash literally: the call is code, not string.
    expect(refused("SELECT '\\' AS a, read_text('x') --'")).toMatch(/read_text/);
    // E-strings take \' as a quote: the call is inside the string.
    accepted("SELECT E'\\' AS a, read_text(x) --' AS b");
    // '' is a quote inside a string.
    expect(refused("SELECT 'it''s' AS a, glob('*')")).toMatch(/glob/);
    // B'' and X'' strings end at the first quote (DuckDB: syntax error at or near '0').
    expect(
      tokenizeSql("SELECT B'1''0', X'4''1'")
        .filter((t) => t.kind === 'string')
        .map((t) => t.value),
    ).toEqual(['1', '0', '4', '1']);
    // CR ends a -- comment.
    expect(refused('SELECT 1 AS a --\rLOAD httpfs')).toMatch(/LOAD/);
    // Block comments nest.
    expect(refused("SELECT 1 AS a /* /* */ */ , read_text('x')")).toMatch(/read_text/);
    accepted("SELECT 1 AS a /* /* */ read_text('x') */");
    // Dollar-quote tags are case-sensitive.
    accepted("SELECT $a$ $A$ read_text('x') $A$ $a$ AS s");
    expect(refused("SELECT $a$ x $a$ AS s, read_text('x')")).toMatch(/read_text/);
  });

  it('tokenizes quoted identifiers and strings to their values', () => {
    const tokens = tokenizeSql(`SELECT "Read_""Text" , E'a\\x41\\n' , $t$x$t$ , 'it''s' FROM t`);
    expect(tokens.map((t) => [t.kind, t.value])).toEqual([
      ['word', 'select'],
      ['quoted_ident', 'Read_"Text'],
      ['punct', ','],
      ['string', 'aA\n'],
      ['punct', ','],
      ['string', 'x'],
      ['punct', ','],
      ['string', "it's"],
      ['word', 'from'],
      ['word', 't'],
    ]);
    expect(() => tokenizeSql("SELECT 'x")).toThrow(SqlLexError);
  });
});

describe('accepted queries', () => {
  it.each([
    "SELECT id, price FROM read_json_auto('results/ref-1.jsonl') WHERE price > 990 ORDER BY price DESC LIMIT 5",
    "select count(*) from read_csv('results/ref-2.csv', header = true)",
    "SELECT * FROM read_csv_auto('results/ref-2.csv')",
    "SELECT * FROM read_json('results/ref-3.json', format = 'array')",
    "SELECT * FROM read_ndjson('results/ref-3.jsonl')",
    "SELECT * FROM read_parquet('results/ref-4.parquet')",
    "SELECT * FROM 'results/ref-4.parquet'",
    "WITH t AS (SELECT * FROM read_csv('results/a.csv')) SELECT count(*) FROM t",
    'WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 10) SELECT sum(n) FROM r',
    "FROM read_json_auto('results/ref-1.jsonl') SELECT id WHERE price > 5",
    'VALUES (1, 2), (3, 4)',
    '(SELECT 1) UNION ALL (SELECT 2)',
    '((SELECT 1))',
    'TABLE t',
    "SELECT url FROM read_json_auto('results/x.jsonl') WHERE url LIKE '/api/%'",
    "SELECT 'a' || 'b' AS s, [1, 2][1] AS i, {'k': 1} AS st, 1::BIGINT AS b, x->>'$.a' AS j FROM (SELECT '{}'::JSON AS x)",
    'SELECT 1;',
    'SELECT 1 ; ; -- done',
    compileJsonPath('$.items[0].price', 'results/ref-1.json'),
    compileJsonPath('$["it\'s"][*]', 'results/ref-1.json'),
  ])('%s', (sql) => accepted(sql));

  it('refuses empty, oversized and non-string queries', () => {
    expect(refused('')).toMatch(/empty/);
    expect(refused(' ;; ')).toMatch(/empty|not allowed/);
    expect(refused(`SELECT '${'x'.repeat(70_000)}'`)).toMatch(/longer/);
    expect(checkSqlAllowed(42 as unknown as string)).toEqual({ ok: false, reason: 'the query must be a string' });
  });
});

/** A small deterministic PRNG (mulberry32), so a failure reproduces. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe.skipIf(skipWithoutDuckDb)('catalog views read as tables', () => {
  it("are refused in DuckDB's own parse (control: a bare DuckDB answers each of them with rows)", async () => {
    const { DuckDBInstance } = await import('@duckdb/node-api');
    const instance = await DuckDBInstance.create(':memory:', { autoload_known_extensions: 'false', autoinstall_known_extensions: 'false' });
    const connection = await instance.connect();
    for (const sql of [
      'SELECT name, setting FROM pg_settings',
      'SELECT * FROM pragma_database_list',
      'SELECT database_name FROM duckdb_databases',
      'SELECT count(*) AS n FROM main.duckdb_logs',
      'SELECT schema_name FROM information_schema.schemata',
      'SELECT proname FROM pg_catalog.pg_proc',
    ]) {
      // The attack works where nothing refuses it: the view exists and answers.
      const rows = (await connection.runAndReadAll(sql)).getRows();
      expect(rows.length, sql).toBeGreaterThan(0);
      const reader = await connection.runAndReadAll('SELECT json_serialize_sql($1::VARCHAR) AS tree', [sql]);
      expect(findDeniedInParseTree(JSON.parse(String(reader.getRows()[0]![0]))), sql).toMatch(/is not allowed: it reads engine internals/);
    }
    connection.closeSync();
    instance.closeSync();
  });
});

describe.skipIf(skipWithoutDuckDb)('differential: DuckDB parses nothing the filter missed', () => {
  it('no accepted query calls a denied function or holds two statements in DuckDB’s own parse', async () => {
    const { DuckDBInstance } = await import('@duckdb/node-api');
    const instance = await DuckDBInstance.create(':memory:', { autoload_known_extensions: 'false', autoinstall_known_extensions: 'false' });
    const connection = await instance.connect();
    const parse = async (sql: string): Promise<{ error?: boolean; error_type?: string; error_message?: string; statements?: unknown[] }> => {
      const reader = await connection.runAndReadAll('SELECT json_serialize_sql($1::VARCHAR) AS tree', [sql]);
      return JSON.parse(String(reader.getRows()[0]![0])) as { error?: boolean; error_type?: string; statements?: unknown[] };
    };

    const fragments = [
      "'",
      "''",
      '"',
      '""',
      '$$',
      '$a$',
      '$A$',
      '$1',
      '/*',
      '*/',
      '--',
      '\n',
      '\r',
      ' ',
      '\t',
      'E',
      'e',
      'N',
      'B',
      'X',
      'U&',
      '\\',
      "E'",
      "e'",
      "x'",
      ';',
      '(',
      ')',
      ',',
      '1',
      '1e',
      '.',
      'x',
      'AS',
      'SELECT',
      'FROM',
      'read_text',
      '"read_text"',
      'glob',
      "('results/x')",
      "'/etc/passwd'",
      'LOAD',
      'httpfs',
      'query',
      '||',
      "'ht'",
      "'tp://x'",
      'main.',
      '"',
      '$',
    ];
    const deniedCalls = [...Object.keys(DENIED_FUNCTIONS).slice(0, 6), 'duckdb_settings', 'pragma_version'].map((f) => `${f}('x')`);
    const corpus: string[] = [];
    const random = prng(20_251_130);
    for (let n = 0; n < 4000; n++) {
      const parts: string[] = [];
      const len = 3 + Math.floor(random() * 12);
      for (let k = 0; k < len; k++) parts.push(fragments[Math.floor(random() * fragments.length)]!);
      // Put a denied call somewhere in most of them.
      if (random() < 0.8) parts.splice(Math.floor(random() * parts.length), 0, deniedCalls[Math.floor(random() * deniedCalls.length)]!);
      corpus.push(`SELECT 1 AS a ${parts.join('')}`);
      corpus.push(`SELECT 1 AS a, ${parts.join(' ')}`);
    }

    // Structured: a denied call between an opener and a (possibly mismatched) closer of
    // strings, identifiers, dollar quotes and comments, so that many candidates parse.
    const openers = ["'", "E'", "e'", "N'", "B'", "X'", '"', '$$', '$a$', '$A$', '/*', '/* /*', '--', "'\\", "E'\\", "''", '', ' '];
    const closers = ["'", "\\'", "''", '"', '""', '$$', '$a$', '$A$', '*/', '*/ */', '\n', '\r', '\f', '', ' '];
    for (let n = 0; n < 4000; n++) {
      const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
      const call = pick(deniedCalls);
      corpus.push(`SELECT 1 AS a, ${pick(openers)} ${call} ${pick(closers)} AS b ${pick(closers)}${pick(['', ' , 2 AS c', ' -- end', ' /* x */'])}`);
      corpus.push(`SELECT ${pick(openers)}x${pick(closers)} AS a, ${pick(openers)}${call}${pick(closers)}`);
    }

    let acceptedCount = 0;
    let parsedCount = 0;
    const violations: string[] = [];
    for (const sql of corpus) {
      if (!checkSqlAllowed(sql).ok) continue;
      acceptedCount++;
      const tree = await parse(sql);
      if (tree.error) {
        // A parser error is safe (DuckDB would not run it); anything else is a statement we misjudged.
        if (tree.error_type !== 'parser') violations.push(`${JSON.stringify(sql)} → ${tree.error_type}: ${tree.error_message}`);
        continue;
      }
      parsedCount++;
      if ((tree.statements ?? []).length > 1) violations.push(`${JSON.stringify(sql)} → ${tree.statements!.length} statements`);
      const why = findDeniedInParseTree(tree);
      if (why) violations.push(`${JSON.stringify(sql)} → ${why}`);
    }
    connection.closeSync();
    instance.closeSync();
    expect(violations).toEqual([]);
    // The corpus must exercise acceptance too, or it proves nothing.
    expect(acceptedCount).toBeGreaterThan(1000);
    expect(parsedCount).toBeGreaterThan(300);
  });
});
