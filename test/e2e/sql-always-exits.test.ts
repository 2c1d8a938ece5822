/**
 * `comis orchestrate` always exits once its run is recorded, also when the
 * script ends right after a `.sql()`: that query's answer makes the run's
 * slicer start the next (spare) DuckDB child, and the script's end kills it
 * while it is still starting. 50 runs through the real CLI (bin/comis.js,
 * so dist/ and the compiled query child), one after another; each has a
 * wall limit in the harness (a liveness bound, not a timing claim): a run
 * whose comis is still alive past it fails the test, and is killed.
 * Afterwards no DuckDB query child is left anywhere: not ours (comis is
 * gone) and no orphan (parent pid 1) that was not there before.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { comisBin, repoRoot } from '../helpers/cli.js';
import { requireDuckDbInCi, skipWithoutDuckDb } from '../helpers/duckdb.js';
import { tempDir } from '../helpers/temp.js';

requireDuckDbInCi();

const RUNS = 50;
/** Far above a run's few seconds on a loaded 2-core machine; only a comis that does not exit reaches it. */
const RUN_WALL_LIMIT_MS = 90_000;

/** Live query-child processes whose parent is init (orphans), by pid. */
function orphanedQueryChildren(): Set<number> {
  const out = new Set<number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (!readFileSync(`/proc/${name}/cmdline`, 'latin1').includes('query-child.mjs')) continue;
      const stat = readFileSync(`/proc/${name}/stat`, 'latin1');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] !== 'Z' && fields[0] !== 'X' && fields[1] === '1') out.add(Number(name));
    } catch {
      /* gone */
    }
  }
  return out;
}

function runOnce(script: string, home: string): Promise<{ code: number | null; stdout: string; stderr: string; hung: boolean }> {
  return new Promise((resolveRun) => {
    const comis = spawn(process.execPath, [comisBin, 'orchestrate', script, '--quiet'], {
      cwd: repoRoot,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, COMIS_HOME: home },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let hung = false;
    comis.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    comis.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      hung = true;
      comis.kill('SIGKILL');
    }, RUN_WALL_LIMIT_MS);
    comis.once('close', (code) => {
      clearTimeout(timer);
      resolveRun({ code, stdout, stderr, hung });
    });
  });
}

describe.skipIf(skipWithoutDuckDb)('comis always exits after a run whose script ends right after .sql()', () => {
  it(
    `${RUNS} runs in a row, each exits on its own, and no DuckDB child is left`,
    async () => {
      const home = tempDir('comis-sql-exit-');
      const ws = join(home, 'workspaces', 'default');
      mkdirSync(ws, { recursive: true });
      writeFileSync(join(ws, 'data.jsonl'), `${Array.from({ length: 2000 }, (_, i) => JSON.stringify({ id: i, pad: 'x'.repeat(40) })).join('\n')}\n`);
      const script = join(home, 'sql-then-exit.mjs');
      writeFileSync(
        script,
        `import { comis_tools, ResultRef } from './comis_tools.js';
const ref = await comis_tools.read({ path: 'data.jsonl' });
if (!(ref instanceof ResultRef)) throw new Error('expected a ResultRef');
const rows = await ref.sql("SELECT count(*) AS n FROM read_json_auto('" + ref.ref + "')");
console.log(JSON.stringify(rows));
`,
      );
      const orphansBefore = orphanedQueryChildren();
      const failures: string[] = [];
      for (let i = 0; i < RUNS; i++) {
        const r = await runOnce(script, home);
        if (r.hung) failures.push(`run ${i}: comis had not exited ${RUN_WALL_LIMIT_MS} ms after it started (stdout ${JSON.stringify(r.stdout)})`);
        else if (r.code !== 0 || r.stdout !== '[{"n":2000}]\n') failures.push(`run ${i}: exit ${r.code}, stdout ${JSON.stringify(r.stdout)}, stderr ${r.stderr.slice(0, 400)}`);
      }
      expect(failures).toEqual([]);
      const newOrphans = [...orphanedQueryChildren()].filter((pid) => !orphansBefore.has(pid));
      expect(newOrphans, 'orphaned DuckDB children left by the runs').toEqual([]);
    },
    RUNS * RUN_WALL_LIMIT_MS,
  );
});
