/**
 * Attack battery for the DuckDB slicer with real DuckDB, real files and real
 * (jailed) processes. Each case is a query a hostile script could send; the
 * promise is: refused or failed, and nothing outside the run's results
 * directory ever comes back. A secret file sits right next to `results/`
 * (where the runner keeps the capability socket and the SDK), with a unique
 * marker that must never appear in any answer.
 *
 * Layers are tested on their own too: `runConfinedQueryUnchecked` skips the
 * pre-filter and the results check, and with `engineOnly` also the child's
 * parser-level checks, so a query that slips past them meets only the
 * engine's confinement and the jail.
 */
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { linkSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { runConfinedQueryUnchecked, runSliceQuery, type SliceQueryOptions, type SliceQueryResult } from '../../src/lib/resultref/duckdb/run-slice-query.js';
import { defaultQuerySpawner, spawnQueryProcessPlain, type SpawnQueryProcess } from '../../src/lib/resultref/duckdb/spawn-query-process.js';
import { ComisError } from '../../src/lib/errors.js';
import { detectSandboxProvider } from '../../src/lib/jail/spawn.js';
import { requireDuckDbInCi, skipWithoutDuckDb } from '../helpers/duckdb.js';
import { tempDir } from '../helpers/temp.js';

requireDuckDbInCi();

const provider = detectSandboxProvider();
const hasJail = provider.provider === 'bwrap' && !provider.problem;

interface Run {
  runDir: string;
  results: string;
  secretPath: string;
  marker: string;
}

const longLived: string[] = [];
afterAll(() => {
  for (const dir of longLived) rmSync(dir, { recursive: true, force: true });
});

/**
 * A run-like layout: `<run>/results/` with a ResultRef, and `<run>/secret.txt`
 * next to it. `shared` runs outlive one test (for a describe's beforeAll).
 */
function makeRun(shared = false): Run {
  const runDir = shared ? mkdtempSync(join(tmpdir(), 'comis-duckdb-attack-')) : tempDir('comis-duckdb-attack-');
  if (shared) longLived.push(runDir);
  const results = join(runDir, 'results');
  mkdirSync(results);
  writeFileSync(join(results, 'ref-1.jsonl'), '{"id":1,"price":5}\n{"id":2,"price":995}\n');
  writeFileSync(join(results, 'ref-2.csv'), 'a,b\n1,2\n');
  const marker = `TOPSECRET${randomBytes(8).toString('hex')}`;
  const secretPath = join(runDir, 'secret.txt');
  writeFileSync(secretPath, `a,b\n${marker},${marker}\n`);
  return { runDir, results, secretPath, marker };
}

/** Refused or failed, for a reason the attack itself met (not a missing run), and nothing leaked. */
function expectRefusedWithoutLeak(result: SliceQueryResult, run: Run): void {
  expect(result, JSON.stringify(result)).toHaveProperty('error');
  expect((result as { code: string }).code).not.toMatch(/results_unavailable|spawn_failed|sandbox_unavailable|duckdb_missing/);
  const text = JSON.stringify(result);
  expect(text).not.toContain(run.marker);
  expect(text).not.toContain(run.runDir);
  expect(text).not.toMatch(/root:x:0:0/);
}

/**
 * Process start time from /proc/<pid>/stat, to tell a live process from a
 * reused pid; undefined when the process is gone or a zombie (dead, waiting
 * only for its parent to collect its exit status).
 */
function startTimeOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (fields[0] === 'Z' || fields[0] === 'X') return undefined;
    return fields[19];
  } catch {
    return undefined;
  }
}

function describeProcess(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return `${stat.slice(0, 120)} cmdline=${readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ')}`;
  } catch {
    return 'gone';
  }
}

function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(Number(name));
    } catch {
      /* gone */
    }
  }
  return out;
}

/** Wraps a spawner to record every process of the query (polled while it runs) and whether its private files were removed. */
function tracking(inner: SpawnQueryProcess): { spawn: SpawnQueryProcess; seen: Map<number, string>; cleaned: boolean[] } {
  const seen = new Map<number, string>();
  const cleaned: boolean[] = [];
  const spawn: SpawnQueryProcess = (spec) => {
    const proc = inner(spec);
    const index = cleaned.push(false) - 1;
    const note = (pid: number): void => {
      const start = startTimeOf(pid);
      if (start && !seen.has(pid)) seen.set(pid, start);
    };
    const poll = setInterval(() => {
      if (proc.pid === undefined) return;
      const queue = [proc.pid];
      while (queue.length > 0) {
        const pid = queue.pop()!;
        note(pid);
        queue.push(...childrenOf(pid));
      }
    }, 20);
    void proc.exited.then(() => clearInterval(poll));
    return {
      ...proc,
      cleanup: () => {
        cleaned[index] = true;
        proc.cleanup();
      },
    };
  };
  return { spawn, seen, cleaned };
}

describe.skipIf(skipWithoutDuckDb || !hasJail)('DuckDB slicer under attack (jailed, the default)', () => {
  let run: Run;
  beforeAll(() => {
    run = makeRun(true);
  });
  const slice = (query: string, extra: Partial<SliceQueryOptions> = {}) => runSliceQuery({ resultsDir: run.results, query, ...extra });

  it('still answers a legitimate query (the battery is not vacuous)', async () => {
    expect(await slice("SELECT id FROM read_json_auto('results/ref-1.jsonl') WHERE price > 990")).toMatchObject({ rows: [{ id: 2 }] });
  });

  it.each([
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM read_json_auto('/etc/passwd')",
    "SELECT * FROM read_csv('/etc/*')",
    "SELECT * FROM '/etc/passwd'",
    "SELECT * FROM read_csv('/proc/self/environ')",
    "SELECT * FROM read_parquet('/etc/passwd')",
    "SELECT * FROM read_json_objects('/proc/self/status')",
    "SELECT * FROM read_csv('~/.bashrc')",
    "SELECT * FROM read_csv('results/../secret.txt')",
    "SELECT * FROM read_csv('results/../../../../../etc/passwd')",
    "SELECT * FROM read_csv(['results/ref-2.csv', 'results/../secret.txt'])",
    "SELECT * FROM read_csv('results/*/../../secret.txt')",
    "SELECT * FROM read_csv('secret.txt')",
    "SELECT * FROM read_csv('./secret.txt')",
    "SELECT * FROM read_csv('/workspace/secret.txt')",
  ])('refuses reading outside results/: %s', async (query) => {
    expectRefusedWithoutLeak(await slice(query), run);
  });

  it('refuses the absolute host path of the secret, however it is reached', async () => {
    expectRefusedWithoutLeak(await slice(`SELECT * FROM read_csv('${run.secretPath}')`), run);
    expectRefusedWithoutLeak(await slice(`SELECT * FROM read_csv('${run.results}/../secret.txt')`), run);
  });

  it.each([
    "SELECT content FROM read_text('/etc/passwd')",
    "SELECT * FROM read_blob('results/../secret.txt')",
    "SELECT * FROM glob('/*')",
    "SELECT * FROM query('SELECT content FROM rea' || 'd_text(''/etc/passwd'')')",
    'SELECT * FROM duckdb_settings()',
    "SELECT current_setting('allowed_directories') AS a",
    'SET enable_external_access = true',
    "SET allowed_directories = ['/']",
    'RESET lock_configuration',
    "SELECT 1; SET enable_external_access = true; SELECT * FROM read_csv('/etc/passwd')",
    'INSTALL httpfs',
    'LOAD httpfs',
    "ATTACH 'results/evil.db' AS evil",
    'CREATE TABLE t AS SELECT 1',
    'INSERT INTO t VALUES (1)',
    "COPY (SELECT 42 AS answer) TO 'results/out.csv'",
    "EXPORT DATABASE 'results/dump'",
    "SELECT * FROM enable_logging(storage = 'file', storage_path = 'results/log')",
    "SELECT * FROM read_csv('https://example.com/x.csv')",
    "SELECT * FROM read_parquet('s3://bucket/x.parquet')",
  ])('refuses %s', async (query) => {
    const result = await slice(query);
    expectRefusedWithoutLeak(result, run);
    expect(readdirSync(run.results).sort()).toEqual(['ref-1.jsonl', 'ref-2.csv']);
  });

  it('refuses a symlink in results/ that points outside, through read_csv and read_json_auto', async () => {
    const r = makeRun();
    symlinkSync(r.secretPath, join(r.results, 'link.csv'));
    symlinkSync(r.runDir, join(r.results, 'up'));
    for (const query of ["SELECT * FROM read_csv('results/link.csv')", "SELECT * FROM read_json_auto('results/link.csv')", "SELECT * FROM read_csv('results/up/secret.txt')", "SELECT id FROM read_json_auto('results/ref-1.jsonl')"]) {
      const result = await runSliceQuery({ resultsDir: r.results, query });
      expectRefusedWithoutLeak(result, r);
      expect(result).toMatchObject({ code: 'results_unsafe' });
    }
  });

  it('refuses a hard link in results/ to a file outside (the engine checks paths, not inodes)', async () => {
    const r = makeRun();
    linkSync(r.secretPath, join(r.results, 'hard.csv'));
    const result = await runSliceQuery({ resultsDir: r.results, query: "SELECT * FROM read_csv('results/hard.csv')" });
    expectRefusedWithoutLeak(result, r);
    expect(result).toMatchObject({ code: 'results_unsafe' });
  });

  it('stops a recursive CTE that never ends at the time limit, leaving no process and no files behind', async () => {
    const { spawn, seen, cleaned } = tracking(await defaultQuerySpawner());
    const result = await slice('WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r', { timeoutMs: 1_500, spawnQueryProcess: spawn });
    expect(result).toMatchObject({ code: 'timeout' });
    expect(seen.size).toBeGreaterThan(1); // bubblewrap and the node child inside it, at least
    for (const [pid, start] of seen) expect(startTimeOf(pid) === start, `process ${pid} is still alive: ${describeProcess(pid)}`).toBe(false);
    expect(cleaned).toEqual([true]);
  });

  it('refuses output over the limit (default 8 MiB) instead of returning part of it', async () => {
    const result = await slice("SELECT range AS i, repeat('x', 1000) AS pad FROM range(20000)");
    expect(result).toMatchObject({ code: 'output_limit' });
    expect(result).not.toHaveProperty('rows');
  });

  it('bounds memory: a query past memory_limit fails instead of growing', async () => {
    const result = await slice('SELECT count(*) FROM (SELECT range, random() AS r FROM range(60000000) ORDER BY r)', { memoryMb: 128, timeoutMs: 30_000 });
    expect(result).toHaveProperty('error');
    expect((result as { code: string }).code).toMatch(/out_of_memory|internal|timeout/);
  });
});

describe.skipIf(skipWithoutDuckDb || !hasJail)('engine and jail alone: queries that slip past the pre-filter on purpose', () => {
  let run: Run;
  let hits = 0;
  let server: ReturnType<typeof createServer>;
  let port = 0;
  beforeAll(async () => {
    run = makeRun(true);
    server = createServer((_req, res) => {
      hits++;
      res.end('a,b\nLEAKED,LEAKED\n');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const engine = (query: string) => runConfinedQueryUnchecked({ resultsDir: run.results, query, engineOnly: true });

  it('the child’s own parser check refuses what the pre-filter would have (engineOnly off)', async () => {
    for (const query of ["SELECT content FROM read_text('/etc/passwd')", "SELECT * FROM query('SELECT 1')", 'SET threads = 1', "SELECT * FROM read_csv('http://x/y')"]) {
      const result = await runConfinedQueryUnchecked({ resultsDir: run.results, query });
      expect(result).toMatchObject({ code: 'sql_refused' });
    }
  });

  it.each([
    ['read_text of a host file', "SELECT content FROM read_text('/etc/passwd')"],
    ['read_text through query() and concatenation', "SELECT * FROM query('SELECT content FROM rea' || 'd_text(''/etc/pass' || 'wd'')')"],
    ['serialized SQL', "SELECT * FROM json_execute_serialized_sql(json_serialize_sql('SELECT content FROM read_text(''/etc/passwd'')'))"],
    ['read_blob next to results/', "SELECT * FROM read_blob('results/../secret.txt')"],
    ['glob of the host', "SELECT * FROM glob('/*')"],
    ['glob of the run', "SELECT * FROM glob('results/../*')"],
    ['read_csv of the secret by a built path', "SELECT * FROM read_csv('results/..' || '/secret.txt')"],
  ])('%s is refused by the engine', async (_name, query) => {
    const result = await engine(query);
    expectRefusedWithoutLeak(result, run);
  });

  it('a URL built by concatenation is refused and never fetched', async () => {
    for (const query of [
      `SELECT * FROM read_csv('ht' || 'tp://127.0.0.1:${port}/x.csv')`,
      `SELECT * FROM query('SELECT * FROM read_csv(''ht' || 'tp://127.0.0.1:${port}/y.csv'')')`,
      "SELECT * FROM read_parquet('s3' || '://bucket/x.parquet')",
    ]) {
      const result = await engine(query);
      expect(result).toHaveProperty('error');
      expect(JSON.stringify(result)).not.toContain('LEAKED');
    }
    expect(hits).toBe(0);
  });

  it('the locked configuration refuses SET, RESET and PRAGMA from inside the query', async () => {
    for (const query of ['SET enable_external_access = true', "SET allowed_directories = ['/']", 'RESET allowed_directories', 'SET lock_configuration = false', 'PRAGMA threads = 8', "SET temp_directory = '/tmp'"]) {
      const result = await engine(query);
      expect(result).toMatchObject({ code: 'sql_error' });
      expect((result as { error: string }).error).toMatch(/configuration has been locked/);
    }
  });

  it('the settings read back as hardened: only the results directory, no temp directory, no external access', async () => {
    const result = await engine(
      "SELECT current_setting('allowed_directories') AS dirs, current_setting('temp_directory') AS tmp, current_setting('enable_external_access') AS ext, current_setting('lock_configuration') AS locked, current_setting('autoload_known_extensions') AS autoload",
    );
    expect(result).toMatchObject({ rows: [{ dirs: ['/workspace/results/'], tmp: '', ext: false, locked: true, autoload: false }] });
  });

  it('extensions cannot be installed or loaded', async () => {
    expect(await engine('INSTALL httpfs')).toHaveProperty('error');
    expect(await engine('LOAD httpfs')).toHaveProperty('error');
  });

  it('writes fail: the results directory is read-only in the jail (the engine alone would allow them there)', async () => {
    for (const query of ["COPY (SELECT 42 AS answer) TO 'results/out.csv'", "ATTACH 'results/evil.db' AS evil", "EXPORT DATABASE 'results/dump'", "COPY (SELECT 42 AS answer) TO '/tmp/out.csv'"]) {
      expect(await engine(query)).toHaveProperty('error');
    }
    expect(readdirSync(run.results).sort()).toEqual(['ref-1.jsonl', 'ref-2.csv']);
  });

  it('in the jail a link out of results/ leads nowhere, even where the engine would follow it', async () => {
    const r = makeRun();
    symlinkSync(r.runDir, join(r.results, 'up'));
    symlinkSync(r.secretPath, join(r.results, 'link.csv'));
    symlinkSync('../secret.txt', join(r.results, 'rel.csv'));
    for (const query of ["SELECT * FROM read_csv('results/up/secret.txt')", "SELECT * FROM read_csv('results/link.csv')", "SELECT * FROM read_json_auto('results/rel.csv')"]) {
      const result = await runConfinedQueryUnchecked({ resultsDir: r.results, query, engineOnly: true });
      expectRefusedWithoutLeak(result, r);
    }
    // Only this run's results exist in the jail: the links dangle there.
    const listing = await runConfinedQueryUnchecked({ resultsDir: r.results, query: "SELECT file FROM glob('results/**') ORDER BY file", engineOnly: true });
    expect(listing).toMatchObject({ rows: [{ file: 'results/ref-1.jsonl' }, { file: 'results/ref-2.csv' }] });
  });

  it('a symlink swapped in and out of results/ during queries never reaches outside (the jail has nothing outside)', async () => {
    const r = makeRun();
    mkdirSync(join(r.results, 'race-dir'));
    writeFileSync(join(r.results, 'race-dir', 'data.csv'), 'a,b\nbenign,1\n');
    const outside = join(r.runDir, 'outside');
    mkdirSync(outside);
    writeFileSync(join(outside, 'data.csv'), `a,b\n${r.marker},1\n`);
    writeFileSync(join(outside, 'data.txt'), r.marker);
    const swap = join(r.results, 'race');
    let stop = false;
    let flips = 0;
    const racer = (async () => {
      while (!stop) {
        const tmp = join(r.results, '.race-next');
        rmSync(tmp, { force: true });
        symlinkSync(flips % 2 ? outside : 'race-dir', tmp);
        renameSync(tmp, swap); // atomic: `race` is always one of the two
        flips++;
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    const answers: SliceQueryResult[] = [];
    const paths = Array.from({ length: 200 }, () => "'results/race/data.csv'").join(', ');
    for (let i = 0; i < 8; i++) {
      answers.push(await runConfinedQueryUnchecked({ resultsDir: r.results, query: `SELECT * FROM read_csv([${paths}])`, engineOnly: true }));
      answers.push(await runConfinedQueryUnchecked({ resultsDir: r.results, query: "SELECT content FROM read_text('results/race/data.txt')", engineOnly: true }));
    }
    stop = true;
    await racer;
    expect(flips).toBeGreaterThan(100);
    for (const answer of answers) expect(JSON.stringify(answer)).not.toContain(r.marker);
  });
});

describe.skipIf(skipWithoutDuckDb)('the plain spawner: the engine’s confinement with no jail around it', () => {
  it('still refuses host files, the run’s neighbours and symlinks out', async () => {
    const run = makeRun();
    symlinkSync(run.secretPath, join(run.results, 'link.csv'));
    for (const query of [
      "SELECT content FROM read_text('/etc/passwd')",
      "SELECT * FROM read_csv('results/../secret.txt')",
      "SELECT * FROM read_csv('results/link.csv')",
      `SELECT * FROM read_csv('${run.secretPath}')`,
      "SELECT * FROM query('SELECT content FROM rea' || 'd_text(''results/link.csv'')')",
    ]) {
      const result = await runConfinedQueryUnchecked({ resultsDir: run.results, query, engineOnly: true, spawnQueryProcess: spawnQueryProcessPlain });
      expectRefusedWithoutLeak(result, run);
    }
  });

  it('kills a runaway query at the deadline and leaves no process', async () => {
    const run = makeRun();
    const { spawn, seen } = tracking(spawnQueryProcessPlain);
    const result = await runSliceQuery({
      resultsDir: run.results,
      query: 'WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r',
      timeoutMs: 1_000,
      spawnQueryProcess: spawn,
    });
    expect(result).toMatchObject({ code: 'timeout' });
    expect(seen.size).toBeGreaterThan(0);
    for (const [pid, start] of seen) expect(startTimeOf(pid) === start).toBe(false);
  });
});

describe.skipIf(skipWithoutDuckDb)('no sandbox', () => {
  it('answers sandbox_unavailable when the jail cannot start, and runs nothing unjailed', async () => {
    const run = makeRun();
    const noJail: SpawnQueryProcess = () => {
      throw new ComisError('SANDBOX_UNAVAILABLE', 'No working sandbox provider.');
    };
    const result = await runSliceQuery({ resultsDir: run.results, query: 'SELECT 1 AS one', spawnQueryProcess: noJail });
    expect(result).toMatchObject({ code: 'sandbox_unavailable' });
  });
});
