/**
 * `.sql()` / `.jsonpath()` over real ResultRef files with real DuckDB in real
 * child processes: what a script gets back, and how each limit answers.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it, vi } from 'vitest';

import { createSliceQueryRunner, isDuckDbAvailable, isSliceError, redactHostPaths, runJsonPath, runSliceQuery, type SliceQueryResult } from '../../src/lib/resultref/duckdb/run-slice-query.js';
import { defaultQuerySpawner, type SpawnQueryProcess } from '../../src/lib/resultref/duckdb/spawn-query-process.js';
import { requireDuckDbInCi, skipWithoutDuckDb } from '../helpers/duckdb.js';
import { tempDir } from '../helpers/temp.js';

requireDuckDbInCi();

/** A run-like layout: `<run>/results/`, as the runner makes it. */
function makeResults(): string {
  const results = join(tempDir('comis-slice-'), 'results');
  mkdirSync(results);
  return results;
}

/** About 5 MB of JSONL: ids 0..n-1, a deterministic price in [0, 1000), a name and tags. */
function writeJsonl(results: string, name: string, rows = 40_000): void {
  const lines: string[] = [];
  for (let id = 0; id < rows; id++) {
    const price = ((id * 7919) % 100_000) / 100;
    lines.push(JSON.stringify({ id, name: `item-${id}-${'x'.repeat(60)}`, price, tags: ['a', `t${id % 7}`], note: 'n'.repeat(20) }));
  }
  writeFileSync(join(results, name), `${lines.join('\n')}\n`);
}

function rowsOf(result: SliceQueryResult): unknown[] {
  if (isSliceError(result)) throw new Error(`expected rows, got ${result.code}: ${result.error}`);
  return result.rows;
}

describe.skipIf(skipWithoutDuckDb)('runSliceQuery over real files', () => {
  it('answers the top-5 query over a 5 MB JSONL ref, with the ref path as scripts write it', async () => {
    const results = makeResults();
    writeJsonl(results, 'ref-1.jsonl');
    const ref = 'results/ref-1.jsonl';
    const result = await runSliceQuery({
      resultsDir: results,
      query: "SELECT id, price FROM read_json_auto('" + ref + "') WHERE price > 990 ORDER BY price DESC, id LIMIT 5",
    });
    const rows = rowsOf(result) as { id: number; price: number }[];
    expect(rows).toHaveLength(5);
    expect(result).toMatchObject({ rowCount: 5, columns: ['id', 'price'], truncated: false });
    // The same top 5, computed here.
    const expected: { id: number; price: number }[] = [];
    for (let id = 0; id < 40_000; id++) expected.push({ id, price: ((id * 7919) % 100_000) / 100 });
    expected.sort((a, b) => b.price - a.price || a.id - b.id);
    expect(rows).toEqual(expected.filter((r) => r.price > 990).slice(0, 5));
    expect(typeof rows[0]!.id).toBe('number');
  });

  it('reads CSV with read_csv and read_csv_auto, and ndjson with read_ndjson', async () => {
    const results = makeResults();
    writeFileSync(join(results, 'ref-2.csv'), 'city,pop\nOslo,709000\nBergen,291000\nTromso,77000\n');
    writeFileSync(join(results, 'ref-3.jsonl'), '{"a":1}\n{"a":2}\n');
    expect(rowsOf(await runSliceQuery({ resultsDir: results, query: "SELECT city FROM read_csv('results/ref-2.csv') WHERE pop > 100000 ORDER BY pop" }))).toEqual([{ city: 'Bergen' }, { city: 'Oslo' }]);
    expect(rowsOf(await runSliceQuery({ resultsDir: results, query: "SELECT sum(pop) AS total FROM read_csv_auto('results/ref-2.csv')" }))).toEqual([{ total: 1077000 }]);
    expect(rowsOf(await runSliceQuery({ resultsDir: results, query: "FROM read_ndjson('results/ref-3.jsonl') SELECT max(a) AS m" }))).toEqual([{ m: 2 }]);
  });

  it('reads parquet that the test writes with an unconfined DuckDB (COPY is denied to scripts)', async () => {
    const results = makeResults();
    const { DuckDBInstance } = await import('@duckdb/node-api');
    const instance = await DuckDBInstance.create(':memory:');
    const connection = await instance.connect();
    const target = join(results, 'ref-4.parquet').replace(/'/g, "''");
    await connection.run(`COPY (SELECT range AS id, range * 2 AS twice FROM range(100)) TO '${target}' (FORMAT parquet)`);
    connection.closeSync();
    instance.closeSync();
    expect(rowsOf(await runSliceQuery({ resultsDir: results, query: "SELECT count(*) AS n, max(twice) AS m FROM read_parquet('results/ref-4.parquet')" }))).toEqual([{ n: 100, m: 198 }]);
    expect(rowsOf(await runSliceQuery({ resultsDir: results, query: "SELECT id FROM 'results/ref-4.parquet' WHERE id = 7" }))).toEqual([{ id: 7 }]);
  });

  it('converts values to JSON: safe bigints as numbers, others as strings, dates as ISO, JSON parsed', async () => {
    const results = makeResults();
    const rows = rowsOf(
      await runSliceQuery({
        resultsDir: results,
        query:
          'SELECT 5::BIGINT AS small, 12345678901234567::BIGINT AS big, 170141183460469231731687303715884105727::HUGEINT AS huge, ' +
          "DATE '2024-01-02' AS d, TIMESTAMP '2024-01-02 03:04:05.123456' AS ts, TIMESTAMPTZ '2024-01-02 03:04:05+02' AS tz, " +
          "1.25::DECIMAL(10,2) AS money, 'infinity'::DATE AS forever, [1, 2]::BIGINT[] AS list, {'k': 1::HUGEINT} AS rec, " +
          "'{\"a\":[1,2]}'::JSON AS doc, 'inf'::DOUBLE AS inf, NULL AS nothing, 'x' AS \"__proto__\"",
      }),
    );
    expect(rows).toHaveLength(1);
    const row = rows[0] as Record<string, unknown>;
    expect(row.small).toBe(5);
    expect(row.big).toBe('12345678901234567');
    expect(row.huge).toBe('170141183460469231731687303715884105727');
    expect(row.d).toBe('2024-01-02');
    expect(row.ts).toBe('2024-01-02T03:04:05.123456');
    expect(row.tz).toBe('2024-01-02T01:04:05.000Z');
    expect(row.money).toBe(1.25);
    expect(row.forever).toBe('infinity');
    expect(row.list).toEqual([1, 2]);
    expect(row.rec).toEqual({ k: 1 });
    expect(row.doc).toEqual({ a: [1, 2] });
    expect(row.inf).toBe('Infinity');
    expect(row.nothing).toBeNull();
    expect(Object.getOwnPropertyDescriptor(row, '__proto__')?.value).toBe('x');
  });

  it('returns an empty result with its columns', async () => {
    const results = makeResults();
    writeJsonl(results, 'ref-1.jsonl', 10);
    const result = await runSliceQuery({ resultsDir: results, query: "SELECT id FROM read_json_auto('results/ref-1.jsonl') WHERE price > 5000" });
    expect(result).toEqual({ rows: [], rowCount: 0, columns: ['id'], truncated: false });
  });

  it('reports SQL errors shortly, with relative paths only', async () => {
    const results = makeResults();
    const missing = await runSliceQuery({ resultsDir: results, query: "SELECT * FROM read_json_auto('results/nope.jsonl')" });
    expect(missing).toMatchObject({ code: 'sql_error' });
    expect((missing as { error: string }).error).not.toContain(results);
    expect((missing as { error: string }).error).not.toMatch(/\n/);
    const typo = await runSliceQuery({ resultsDir: results, query: 'SELEC 1' });
    expect(typo).toMatchObject({ code: 'sql_refused' });
    const bad = await runSliceQuery({ resultsDir: results, query: 'SELECT no_such_column FROM range(1)' });
    expect(bad).toMatchObject({ code: 'sql_error' });
  });

  it('refuses a result over the output limit instead of returning part of it', async () => {
    const results = makeResults();
    const result = await runSliceQuery({ resultsDir: results, query: "SELECT range AS i, repeat('x', 100) AS pad FROM range(100000)", maxOutputBytes: 64 * 1024 });
    expect(result).toMatchObject({ code: 'output_limit' });
    expect('rows' in result).toBe(false);
    const fits = await runSliceQuery({ resultsDir: results, query: 'SELECT range AS i FROM range(100)', maxOutputBytes: 64 * 1024 });
    expect(rowsOf(fits)).toHaveLength(100);
  });

  it('reports a missing results directory without naming it', async () => {
    const gone = join(tempDir('comis-slice-'), 'results');
    const result = await runSliceQuery({ resultsDir: gone, query: 'SELECT 1 AS one' });
    expect(result).toMatchObject({ code: 'results_unavailable' });
    expect((result as { error: string }).error).not.toContain(gone);
  });
});

describe.skipIf(skipWithoutDuckDb)('runJsonPath over real files', () => {
  it('extracts from a JSON document', async () => {
    const results = makeResults();
    writeFileSync(
      join(results, 'ref-1.json'),
      JSON.stringify(
        {
          items: [
            { price: 12.5, name: 'a' },
            { price: 7, name: 'b' },
          ],
          'a b': { 'c"d': true },
          total: 2,
        },
        null,
        2,
      ),
    );
    const at = (expr: string) => runJsonPath({ resultsDir: results, ref: 'results/ref-1.json', expr });
    expect(await at('$.items[0].price')).toEqual({ value: 12.5 });
    expect(await at('$.items[-1].name')).toEqual({ value: 'b' });
    expect(await at('$.items[*].name')).toEqual({ value: ['a', 'b'] });
    expect(await at('$["a b"]["c\\"d"]')).toEqual({ value: true });
    expect(await at('$.missing')).toEqual({ value: null });
    expect(await at('$')).toMatchObject({ value: { total: 2 } });
    expect(await at('$..price')).toMatchObject({ code: 'jsonpath_invalid' });
  });

  it('treats a JSONL ref as the array of its records, in file order', async () => {
    const results = makeResults();
    writeJsonl(results, 'ref-2.jsonl', 500);
    const at = (expr: string) => runJsonPath({ resultsDir: results, ref: 'results/ref-2.jsonl', expr });
    expect(await at('$[0].id')).toEqual({ value: 0 });
    expect(await at('$[499].id')).toEqual({ value: 499 });
    expect(await at('$[-1].tags[1]')).toEqual({ value: 't2' });
  });

  it('refuses a ref path outside results/', async () => {
    const results = makeResults();
    for (const ref of ['/etc/passwd', 'results/../../etc/passwd', "results/x'.json", 'ref-1.json']) {
      expect(await runJsonPath({ resultsDir: results, ref, expr: '$' })).toMatchObject({ code: 'jsonpath_invalid' });
    }
  });
});

describe('redactHostPaths', () => {
  it('maps the results directory to results/, drops the private directory, hides other absolute paths the query did not name', () => {
    const roots = [
      ['/tmp/comis-run-r_1/results', 'results'],
      ['/tmp/comis-duckdb-abc', ''],
      ['/root', '~'],
    ] as const;
    const message = redactHostPaths('IO Error: No files found that match "/tmp/comis-run-r_1/results/x.csv" nor "/tmp/comis-duckdb-abc/y" near /root/.duckdb/ext and /etc/passwd and /srv/data/z\nLINE 1: SELECT', {
      query: "SELECT * FROM read_csv('/etc/passwd')",
      roots,
    });
    expect(message).toBe('IO Error: No files found that match "results/x.csv" nor "y" near ~/.duckdb/ext and /etc/passwd and <path>');
  });
});

describe('without DuckDB installed', () => {
  it('answers .sql() and .jsonpath() with an error that says DuckDB is not installed', async () => {
    const results = makeResults();
    const missing = () => undefined;
    const sql = await runSliceQuery({ resultsDir: results, query: 'SELECT 1', resolveDuckDb: missing });
    expect(sql).toMatchObject({ code: 'duckdb_missing' });
    expect((sql as { error: string }).error).toMatch(/DuckDB is not installed/);
    const path = await runJsonPath({ resultsDir: results, ref: 'results/ref-1.json', expr: '$.a', resolveDuckDb: missing });
    expect(path).toMatchObject({ code: 'duckdb_missing' });
    expect(isDuckDbAvailable(missing)).toBe(false);
  });
});

describe.skipIf(skipWithoutDuckDb)('createSliceQueryRunner: one run, a spare child started ahead', () => {
  /** Wraps the default spawner to count children and remember their processes and private directories. */
  interface Seen {
    gone: boolean;
    cleaned: boolean;
  }
  async function counting(): Promise<{ spawn: SpawnQueryProcess; children: Seen[] }> {
    const inner = await defaultQuerySpawner();
    const children: Seen[] = [];
    const spawn: SpawnQueryProcess = (spec) => {
      const proc = inner(spec);
      const entry: Seen = { gone: false, cleaned: false };
      void proc.exited.then(() => {
        entry.gone = true;
      });
      children.push(entry);
      return {
        ...proc,
        cleanup: () => {
          entry.cleaned = true;
          proc.cleanup();
        },
      };
    };
    return { spawn, children };
  }

  it('answers each query in its own child, starts the next one ahead, and stops it on close', async () => {
    const results = makeResults();
    writeJsonl(results, 'ref-1.jsonl', 1000);
    const { spawn, children } = await counting();
    const runner = createSliceQueryRunner({ resultsDir: results, spawnQueryProcess: spawn });
    try {
      for (let i = 0; i < 3; i++) {
        const rows = rowsOf(await runner.query(`SELECT count(*) AS n FROM read_json_auto('results/ref-1.jsonl') WHERE id >= ${i}`));
        expect(rows).toEqual([{ n: 1000 - i }]);
      }
      // A file materialized after the spare started is visible to it.
      await vi.waitFor(() => expect(children.length).toBe(4), { timeout: 30_000 });
      writeFileSync(join(results, 'ref-2.csv'), 'a\n1\n2\n');
      expect(rowsOf(await runner.query("SELECT sum(a) AS s FROM read_csv('results/ref-2.csv')"))).toEqual([{ s: 3 }]);
      expect(await runner.jsonpath('results/ref-1.jsonl', '$[2].id')).toEqual({ value: 2 });
      // Every query got a fresh process; all but the current spare are gone.
      await vi.waitFor(() => expect(children.filter((c) => !c.gone).length).toBe(1), { timeout: 30_000 });
      // The layers hold on the warm path too.
      expect(await runner.query("SELECT * FROM read_csv('/etc/passwd')")).toMatchObject({ code: 'access_denied' });
      expect(await runner.query('LOAD httpfs')).toMatchObject({ code: 'sql_refused' });
    } finally {
      await runner.close();
    }
    expect(children.every((c) => c.gone && c.cleaned)).toBe(true);
  });

  it('stops an unused spare after idleMs and starts cold afterwards', async () => {
    const results = makeResults();
    const { spawn, children } = await counting();
    const runner = createSliceQueryRunner({ resultsDir: results, spawnQueryProcess: spawn, idleMs: 1_000 });
    try {
      runner.warm();
      await vi.waitFor(() => expect(children.length).toBe(1), { timeout: 30_000 });
      await vi.waitFor(() => expect(children[0]!.gone).toBe(true), { timeout: 30_000 });
      expect(rowsOf(await runner.query('SELECT 42 AS answer'))).toEqual([{ answer: 42 }]);
    } finally {
      await runner.close();
    }
  });

  it('without prewarm starts nothing ahead', async () => {
    const results = makeResults();
    const { spawn, children } = await counting();
    const runner = createSliceQueryRunner({ resultsDir: results, spawnQueryProcess: spawn, prewarm: false });
    try {
      runner.warm();
      expect(rowsOf(await runner.query('SELECT 1 AS one'))).toEqual([{ one: 1 }]);
      expect(children.length).toBe(1);
    } finally {
      await runner.close();
    }
  });
});
