/**
 * Attack battery, DuckDB child lifetime: a `.sql()` query that never ends
 * (an endless recursive CTE) must not outlive its run, whether the run ends
 * by its timeout or by the script exiting while the query still runs.
 *
 * Positive control in each case: after the gate allowed the `ref_sql` call,
 * a DuckDB query child (on the host's /proc, a descendant of this process)
 * is seen alive, and the query never answered (the script never printed
 * past it): the endless query really was running when the run ended.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { loadConfig, resolveAgent } from '../../src/lib/config/load.js';
import { runOrchestrate } from '../../src/lib/orchestrate/runner.js';
import { resolveDuckDb } from '../../src/lib/resultref/duckdb/run-slice-query.js';
import { defaultQuerySpawner } from '../../src/lib/resultref/duckdb/spawn-query-process.js';
import { comisBin, repoRoot } from '../helpers/cli.js';
import { requireDuckDbInCi, skipWithoutDuckDb } from '../helpers/duckdb.js';
import { privateTmpDir, tempDir } from '../helpers/temp.js';
import { until } from '../jail/helpers.js';

requireDuckDbInCi();

/** CPU ticks (user + system) a child must have used to count as running the query, not just booted (for a comis in another process, whose gate events this test cannot see). */
const QUERY_RAN_TICKS = 100;

/** Live (non-zombie) processes descending from `ancestor` whose command line names the DuckDB query child, with their CPU ticks. */
function queryChildren(ancestor = process.pid): { pid: number; ticks: number }[] {
  const ticks = new Map<number, number>();
  const parent = new Map<number, number>();
  const candidates: number[] = [];
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] === 'Z' || fields[0] === 'X') continue;
      parent.set(pid, Number(fields[1]));
      ticks.set(pid, Number(fields[11]) + Number(fields[12]));
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('query-child.mjs')) candidates.push(pid);
    } catch {
      /* gone */
    }
  }
  return candidates
    .filter((pid) => {
      for (let p = parent.get(pid); p !== undefined && p > 1; p = parent.get(p)) if (p === ancestor) return true;
      return false;
    })
    .map((pid) => ({ pid, ticks: ticks.get(pid) ?? 0 }));
}

const ENDLESS = 'WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t) SELECT count(*) AS c FROM t';

/** Whether `pid` is still a live process running the query child (not gone, not a zombie, not a reused pid). */
function stillQueryChild(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
    return state !== 'Z' && state !== 'X' && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('query-child.mjs');
  } catch {
    return false;
  }
}

function seedHome(): { home: string; ws: string } {
  const home = tempDir('comis-duck-life-');
  const ws = join(home, 'workspaces', 'default');
  mkdirSync(ws, { recursive: true });
  const rows = Array.from({ length: 2000 }, (_, i) => JSON.stringify({ id: i, pad: 'x'.repeat(40) })).join('\n');
  writeFileSync(join(ws, 'data.jsonl'), `${rows}\n`);
  return { home, ws };
}

const PRELUDE = `import { comis_tools, ResultRef } from './comis_tools.js';
const ref = await comis_tools.read({ path: 'data.jsonl' });
if (!(ref instanceof ResultRef)) throw new Error('expected a ResultRef');
console.log('querying');
`;

async function runWithEndlessQuery(tail: string, timeoutMs: number): Promise<{ seenDuring: boolean; result: Awaited<ReturnType<typeof runOrchestrate>>['public'] }> {
  const { home } = seedHome();
  const agent = resolveAgent(await loadConfig({ home }));
  const source = `${PRELUDE}${tail}`;
  let seenDuring = false;
  let sqlAllowed = false;
  const poll = setInterval(() => {
    if (sqlAllowed && queryChildren().length > 0) seenDuring = true;
  }, 50);
  try {
    const res = await runOrchestrate({
      source,
      displayName: 'endless.mjs',
      language: 'js',
      agent,
      home,
      sessionKey: 's',
      timeoutMs,
      onEvent: (e) => {
        if (e.type === 'capability:audited' && e.tool === 'ref_sql' && e.decision === 'allow') sqlAllowed = true;
      },
    });
    return { seenDuring, result: res.public };
  } finally {
    clearInterval(poll);
  }
}

describe.skipIf(skipWithoutDuckDb)('DuckDB children die with their run', () => {
  it('a never-ending .sql() is gone right after a timed-out run returns', async () => {
    const { seenDuring, result } = await runWithEndlessQuery(`await ref.sql(${JSON.stringify(ENDLESS)});\nconsole.log('NEVER');`, 4_000);
    expect(result.stdout).toBe('querying\n');
    expect(result.failureClass).toBe('timeout');
    expect(seenDuring, 'the DuckDB child ran during the run').toBe(true);
    expect(queryChildren()).toEqual([]);
  });

  it('a .sql() still running when the script exits normally is gone when the run returns', async () => {
    const { seenDuring, result } = await runWithEndlessQuery(`ref.sql(${JSON.stringify(ENDLESS)}).catch(() => undefined);\nawait new Promise((r) => setTimeout(r, 4000));\nprocess.exit(0);`, 60_000);
    expect(result.stdout).toBe('querying\n');
    expect(result.outcome).toBe('success');
    expect(seenDuring, 'the DuckDB child ran during the run').toBe(true);
    expect(queryChildren()).toEqual([]);
  });

  it('SIGKILL of the comis process takes a running query child down with it (--die-with-parent)', async () => {
    const { home } = seedHome();
    const script = join(tempDir('comis-duck-script-'), 'endless.mjs');
    writeFileSync(script, `${PRELUDE}await ref.sql(${JSON.stringify(ENDLESS)});\n`);
    // What the killed comis cannot remove (its DuckDB and stage dirs) goes with this dir after the test.
    const tmp = privateTmpDir();
    const comis = spawn(process.execPath, [comisBin, 'orchestrate', script, '--timeout-ms', '120000'], {
      cwd: repoRoot,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, COMIS_HOME: home, TMPDIR: tmp },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    comis.stdout.resume();
    comis.stderr.resume();
    try {
      let running: number[] = [];
      await until(
        () => {
          running = queryChildren(comis.pid)
            .filter((c) => c.ticks >= QUERY_RAN_TICKS)
            .map((c) => c.pid);
          return running.length > 0;
        },
        60_000,
        'the DuckDB query to run',
      );
      comis.kill('SIGKILL');
      // Parent-death signals are delivered asynchronously: poll (a liveness bound, not a timing claim).
      await until(() => running.every((pid) => !stillQueryChild(pid)), 20_000, 'the query child to die');
    } finally {
      comis.kill('SIGKILL');
    }
  });

  it("a query child lives at most its maxLifetimeMs even while the daemon's event loop is blocked (the jail supervisor); control: without it, it lives on", async () => {
    const spawnQuery = await defaultQuerySpawner();
    const results = join(tempDir('comis-duck-life-'), 'results');
    mkdirSync(results);
    for (const bounded of [true, false]) {
      const proc = spawnQuery({
        resultsDir: results,
        duckdbScopeDir: resolveDuckDb()!.scopeDir,
        childSource: "console.log('up'); setInterval(() => {}, 1000);",
        memoryMb: 64,
        threads: 1,
        boot: () => '{}',
        ...(bounded ? { maxLifetimeMs: 1_000 } : {}),
      });
      let out = '';
      proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
      proc.stderr.resume();
      await until(() => out.includes('up'), 30_000, 'the child to start');
      const pids = queryChildren().map((c) => c.pid);
      expect(pids.length).toBeGreaterThan(0);
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 4_000);
      const alive = pids.filter(stillQueryChild);
      if (bounded) expect(alive, 'killed during the block').toEqual([]);
      else expect(alive.length, 'the unbounded control outlived the block').toBeGreaterThan(0);
      proc.kill();
      await proc.exited;
      proc.cleanup();
    }
  });
});
