/**
 * Attack battery, DuckDB child lifetime at the run's end: a spare child the
 * run's slicer is still STARTING (supervisor, bubblewrap, or node booting
 * DuckDB) when the run ends must be gone, every process of it, once close()
 * resolves, whatever its parent has become. A process of a child is found by
 * the child's marker (a random word on its command line, so on every process
 * of its start chain), not by ancestry: the failure this guards against is an
 * orphan, whose parent is init.
 *
 * Positive controls: each close() is made while a process of the spare is
 * alive on the host's /proc and the spare has not answered anything (it never
 * got a query); and sweepMarked's own test shows a marked orphan survives
 * without the sweep.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { createSliceQueryRunner } from '../../src/lib/resultref/duckdb/run-slice-query.js';
import { defaultQuerySpawner, sweepMarked, type SpawnQueryProcess } from '../../src/lib/resultref/duckdb/spawn-query-process.js';
import { requireDuckDbInCi, skipWithoutDuckDb } from '../helpers/duckdb.js';
import { tempDir } from '../helpers/temp.js';
import { until } from '../jail/helpers.js';

requireDuckDbInCi();

/** Live processes whose command line holds `marker`, with their command name. */
function marked(marker: string): { pid: number; comm: string; ppid: number }[] {
  const out: { pid: number; comm: string; ppid: number }[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (!readFileSync(`/proc/${name}/cmdline`, 'latin1').includes(marker)) continue;
      const stat = readFileSync(`/proc/${name}/stat`, 'latin1');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] === 'Z' || fields[0] === 'X') continue;
      out.push({ pid: Number(name), comm: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')), ppid: Number(fields[1]) });
    } catch {
      /* gone */
    }
  }
  return out;
}

/** The default (jailed) spawner, recording each child's marker and whether it ever wrote a byte. */
async function recording(): Promise<{ spawn: SpawnQueryProcess; markers: string[]; answered: () => boolean }> {
  const inner = await defaultQuerySpawner();
  const markers: string[] = [];
  let wrote = false;
  const spawnQuery: SpawnQueryProcess = (spec) => {
    const proc = inner(spec);
    markers.push(proc.marker);
    proc.stdout.on('data', () => (wrote = true));
    return proc;
  };
  return { spawn: spawnQuery, markers, answered: () => wrote };
}

/** When, during the spare's start, the run ends (undefined: at once, before anything of it may have exec'd). */
const STAGES: { name: string; ready?: (procs: { comm: string }[]) => boolean }[] = [
  { name: 'at once, in the same tick as the spawn' },
  { name: 'once a process of its start chain runs', ready: (procs) => procs.length > 0 },
  { name: 'once bubblewrap runs', ready: (procs) => procs.some((p) => p.comm === 'bwrap') },
  { name: 'once node runs in the jail (booting DuckDB)', ready: (procs) => procs.some((p) => p.comm.startsWith('node')) },
];

describe.skipIf(skipWithoutDuckDb)('a spare DuckDB child still starting when the run ends', () => {
  for (const stage of STAGES) {
    it(`is gone, every process of it, when close() resolves: ended ${stage.name}`, async () => {
      for (let round = 0; round < 3; round++) {
        const results = join(tempDir('comis-spare-mid-'), 'results');
        mkdirSync(results);
        const rec = await recording();
        const runner = createSliceQueryRunner({ resultsDir: results, spawnQueryProcess: rec.spawn });
        runner.warm();
        if (stage.ready) {
          await until(() => rec.markers.length === 1, 30_000, 'the spare to be spawned');
          const marker = rec.markers[0]!;
          await until(() => stage.ready!(marked(marker)), 30_000, `the spare's start to reach: ${stage.name}`);
          // Control: the spare was alive and mid-start (it never got a query, so it never wrote).
          expect(rec.answered()).toBe(false);
        }
        await runner.close();
        // At once: close() waited for the spawn in progress, then killed it.
        expect(rec.markers.length, 'the spare was spawned').toBe(1);
        expect(marked(rec.markers[0]!), `processes of the spare left after close() (ended ${stage.name})`).toEqual([]);
      }
    });
  }
});

describe('sweepMarked', () => {
  it('kills a marked process whose parent is gone (an orphan); control: without the sweep it lives on', async () => {
    const marker = `comis-duckdb-test-${process.pid}-${Date.now()}`;
    // sh starts a long-lived node carrying the marker and exits: that node is reparented away from us.
    const sh = spawn('/bin/sh', ['-c', `"$0" -e 'setTimeout(() => {}, 120000)' "$1" </dev/null >/dev/null 2>&1 & exit 0`, process.execPath, marker], { stdio: 'ignore' });
    await new Promise<void>((resolveExit) => sh.once('exit', () => resolveExit()));
    let orphan: { pid: number; ppid: number }[] = [];
    await until(() => (orphan = marked(marker)).length === 1, 10_000, 'the orphan to appear');
    expect(orphan[0]!.ppid, 'not our child').not.toBe(process.pid);
    try {
      // Control: it does not go away by itself.
      await new Promise((r) => setTimeout(r, 300));
      expect(marked(marker).length).toBe(1);
      await sweepMarked(marker);
      expect(marked(marker)).toEqual([]);
    } finally {
      for (const p of marked(marker)) process.kill(p.pid, 'SIGKILL');
    }
  });
});
