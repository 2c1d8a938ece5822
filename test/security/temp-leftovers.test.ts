/**
 * Nothing comis puts in $TMPDIR outlives it, whatever ends it: a comis
 * SIGKILLed while its jail probe's scratch dir exists, at random points of
 * `comis jail probe`, or while a `.sql()` has a DuckDB child, leaves dirs
 * that the next comis removes; the synchronous jail's data files never have
 * a name at all. The sweep removes only our own dirs of dead processes and
 * follows no link. Each comis here gets a private TMPDIR, so what is left is
 * exactly what it left.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, watch, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { isRoot, readProcStat } from '../../src/lib/jail/host.js';
import { sweepDeadTempDirs } from '../../src/lib/temp-dir.js';
import { comisBin, repoRoot, runComis } from '../helpers/cli.js';
import { pidsHoldingFdsIn } from '../jail/helpers.js';
import { requireDuckDbInCi, skipWithoutDuckDb } from '../helpers/duckdb.js';
import { privateTmpDir, tempDir } from '../helpers/temp.js';

const root = isRoot();
const OURS = /^comis-(probe|duckdb|jail-fds|stage)-/;

function startComis(args: string[], home: string, tmp: string): { child: ChildProcess; done: Promise<void> } {
  const child = spawn(process.execPath, [comisBin, ...args], {
    cwd: repoRoot,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, COMIS_HOME: home, TMPDIR: tmp },
    stdio: 'ignore',
  });
  return { child, done: new Promise((resolve) => child.once('close', () => resolve())) };
}

async function until(check: () => boolean, what: string, limitMs = 60_000): Promise<void> {
  const end = Date.now() + limitMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * Live processes whose command line holds `word`, or with an fd into it when it is a directory
 * (the jailed children of a killed comis die after it; a bubblewrap child orphaned while its jail
 * started names nothing of TMPDIR on its command line, but holds the jail's data files there).
 */
function processesWith(word: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (!readFileSync(`/proc/${name}/cmdline`, 'latin1').includes(word)) continue;
      const st = readProcStat(Number(name));
      if (st && st.state !== 'Z' && st.state !== 'X') out.push(Number(name));
    } catch {
      /* gone */
    }
  }
  // A jail's data files in TMPDIR have no other name: a process holding one is the jail's.
  if (word.startsWith('/')) for (const pid of pidsHoldingFdsIn(word)) if (!out.includes(pid)) out.push(pid);
  return out;
}

describe('a comis killed mid-run leaves nothing in TMPDIR for good', () => {
  it('SIGKILL as soon as the jail probe made its scratch dir: the dir is left (control), the next comis removes it', { timeout: 240_000 }, async () => {
    const tmp = privateTmpDir();
    let controlHeld = false;
    // The kill lands on the dir's creation event; a probe that finished first does not count.
    for (let attempt = 0; attempt < 10 && !controlHeld; attempt++) {
      const run = startComis(['jail', 'probe', '--json'], tempDir('comis-home-'), tmp);
      const prefix = `comis-probe-${run.child.pid}-`;
      let seen: string | undefined;
      const watcher = watch(tmp, (_event, name) => {
        if (seen === undefined && name?.startsWith(prefix)) {
          seen = name;
          run.child.kill('SIGKILL');
        }
      });
      await run.done;
      watcher.close();
      controlHeld = seen !== undefined && existsSync(join(tmp, seen));
      // A comis still alive would keep its dirs; it is dead, so its jail follows: wait for that.
      await until(() => processesWith(tmp).length === 0, 'the killed comis its jail to die');
    }
    expect(controlHeld, 'no SIGKILL landed while the probe dir existed').toBe(true);
    expect(readdirSync(tmp).some((n) => n.startsWith('comis-probe-'))).toBe(true);

    const next = runComis(['jail', 'probe', '--json'], { home: tempDir('comis-home-'), env: { TMPDIR: tmp } });
    expect(next.status, next.stderr).toBe(0);
    expect(readdirSync(tmp)).toEqual([]);
  });

  it('SIGKILL at random points of `comis jail probe`: after the next one, nothing is left', { timeout: 300_000 }, async () => {
    const tmp = privateTmpDir();
    // One whole probe first: the kills are spread over its duration on this machine, now.
    const t0 = Date.now();
    expect(runComis(['jail', 'probe', '--json'], { home: tempDir('comis-home-'), env: { TMPDIR: tmp } }).status).toBe(0);
    const whole = Date.now() - t0;
    let killedWithLeftovers = 0;
    for (let i = 0; i < 8; i++) {
      const run = startComis(['jail', 'probe', '--json'], tempDir('comis-home-'), tmp);
      // Spread over start-up: node's own start, the detection, the smoke jail, the runtime jails.
      const at = Math.round((whole * (i + 2)) / 10);
      const timer = setTimeout(() => run.child.kill('SIGKILL'), at);
      await run.done;
      clearTimeout(timer);
      await until(() => processesWith(tmp).length === 0, 'the killed comis its jail to die');
      if (readdirSync(tmp).length > 0) killedWithLeftovers++;
      const next = runComis(['jail', 'probe', '--json'], { home: tempDir('comis-home-'), env: { TMPDIR: tmp } });
      expect(next.status, next.stderr).toBe(0);
      expect(readdirSync(tmp), `after the kill at ${at} of ${whole} ms and the next probe`).toEqual([]);
    }
    // Control: some kills did leave something for the next probe to remove (a load-dependent
    // count, so only "at least one": 8 kills all between two of the probe's jails never happened).
    expect(killedWithLeftovers).toBeGreaterThan(0);
  });

  it('the jail data files never have a name in TMPDIR (the watch does see the probe dir: control)', { timeout: 120_000 }, async () => {
    const tmp = privateTmpDir();
    const created = new Set<string>();
    const watcher = watch(tmp, (_event, name) => {
      if (name) created.add(name.replace(/-\d+-\d+-\w{6}$|-\d+-\w{6}$/, '-…'));
    });
    const res = runComis(['jail', 'probe', '--json'], { home: tempDir('comis-home-'), env: { TMPDIR: tmp } });
    await new Promise((r) => setTimeout(r, 200)); // the watch's last events
    watcher.close();
    expect(res.status, res.stderr).toBe(0);
    expect([...created]).toContain('comis-probe-…');
    expect([...created].filter((n) => n.startsWith('comis-jail-fds'))).toEqual([]);
    expect(readdirSync(tmp)).toEqual([]);
  });
});

describe.skipIf(skipWithoutDuckDb)('a comis killed during a .sql()', () => {
  requireDuckDbInCi();
  it('leaves its DuckDB dir (control) and the next run with a .sql() removes it', { timeout: 240_000 }, async () => {
    const tmp = privateTmpDir();
    const home = tempDir('comis-home-');
    const ws = join(home, 'workspaces', 'default');
    mkdirSync(ws, { recursive: true });
    writeFileSync(join(ws, 'data.jsonl'), `${Array.from({ length: 2000 }, (_, i) => JSON.stringify({ id: i, pad: 'x'.repeat(40) })).join('\n')}\n`);
    const script = (name: string, query: string): string => {
      const path = join(home, name);
      writeFileSync(
        path,
        `import { writeFileSync } from 'node:fs';
import { comis_tools } from './comis_tools.js';
const ref = await comis_tools.read({ path: 'data.jsonl' });
writeFileSync('/workspace/querying', '');
console.log(JSON.stringify(await ref.sql(${JSON.stringify(query)}.replace('REF', ref.ref))));
`,
      );
      return path;
    };
    // Long enough to be killed in; the run's own limits would end it otherwise.
    const slow = script('slow.mjs', "SELECT count(*) AS n FROM read_json_auto('REF'), range(2000000000)");
    const run = startComis(['orchestrate', slow, '--quiet'], home, tmp);
    const prefix = `comis-duckdb-${run.child.pid}-`;
    await until(() => existsSync(join(ws, 'querying')) && readdirSync(tmp).some((n) => n.startsWith(prefix)), 'the query to start');
    await until(() => processesWith('query-child.mjs').some((pid) => readFileSync(`/proc/${pid}/cmdline`, 'latin1').includes('comis-duckdb-')), 'a DuckDB child');
    await new Promise((r) => setTimeout(r, 300));
    run.child.kill('SIGKILL');
    await run.done;
    // Control: the killed comis could not remove it.
    expect(readdirSync(tmp).filter((n) => n.startsWith(prefix)).length).toBeGreaterThan(0);
    await until(() => processesWith(tmp).length === 0, 'the killed run its jails to die');

    const next = runComis(['orchestrate', script('fast.mjs', "SELECT count(*) AS n FROM read_json_auto('REF')"), '--quiet'], { home, env: { TMPDIR: tmp } });
    expect(next.stdout, next.stderr).toBe('[{"n":2000}]\n');
    expect(readdirSync(tmp).filter((n) => OURS.test(n))).toEqual([]);
  });
});

describe('the sweep', () => {
  it('removes our dirs of dead processes without following links; keeps live processes, other users and links', async () => {
    const tmp = privateTmpDir();
    const outside = tempDir('comis-outside-');
    writeFileSync(join(outside, 'keep.txt'), 'keep');
    const self = readProcStat(process.pid)!;
    const dead = join(tmp, 'comis-probe-999999999-1-aaaaaa');
    mkdirSync(join(dead, 'ws', 'd'), { recursive: true });
    symlinkSync(outside, join(dead, 'ws', 'link'));
    symlinkSync(outside, join(dead, 'ws', 'd', 'link'));
    if (root)
      chownSync(join(dead, 'ws'), 2_900_017, 2_900_017); // the jail uid's, as the probe leaves it
    else chmodSync(join(dead, 'ws', 'd'), 0o000); // the jail (our own uid then) may take our access away
    const reused = join(tmp, `comis-duckdb-${process.pid}-${Number(self.startTime) + 1}-bbbbbb`); // our pid, another start: dead
    mkdirSync(reused);
    const live = join(tmp, `comis-duckdb-${process.pid}-${self.startTime}-cccccc`);
    mkdirSync(live);
    const link = join(tmp, 'comis-jail-fds-999999999-1-dddddd');
    symlinkSync(outside, link);
    const foreign = join(tmp, 'comis-probe-999999998-1-eeeeee');
    mkdirSync(foreign);
    if (root) chownSync(foreign, 2_900_018, 2_900_018);
    const unnamed = join(tmp, 'comis-probe-ffffff'); // old-style: no owner in the name, never guessed at
    mkdirSync(unnamed);

    expect(await sweepDeadTempDirs(tmp)).toBe(root ? 2 : 3);
    expect(existsSync(dead)).toBe(false);
    expect(existsSync(reused)).toBe(false);
    expect(existsSync(live)).toBe(true);
    expect(existsSync(link)).toBe(true);
    expect(existsSync(unnamed)).toBe(true);
    expect(existsSync(foreign)).toBe(root); // not root: it is ours after all, and dead, so gone
    expect(readdirSync(outside)).toEqual(['keep.txt']);
  });
});
