/**
 * A comis SIGKILLed while a jail is still starting leaves nothing behind.
 *
 * bubblewrap clones the jail's pid 1 and only then sets its own parent-death
 * signal; the child waits on an eventfd until bubblewrap has mapped its uids.
 * Should comis die before that (bubblewrap's parent is then already gone, so
 * the signal never comes, and its status write to the dead comis ends it with
 * SIGPIPE), the child stays blocked for good: an orphan of pid 1 holding the
 * jail's fds. A jail with a deadline is covered twice: its stager checks that
 * comis is still its parent before it goes on (as it does here, where the
 * spawner dies at the start of the chain), and the supervisor (`setpriv
 * --pdeathsig ALRM timeout`) SIGKILLs its whole process group when comis dies
 * or at the deadline, which reaches that child too. Every production jail has
 * one now: the jail probe's had none, and a CI run left three such orphans of
 * SIGKILLed `comis jail probe`s (temp-leftovers.test.ts) behind.
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { comisBin, repoRoot } from '../helpers/cli.js';
import { childPids, isRoot, readProcStat } from '../../src/lib/jail/host.js';
import { stagerArgs } from '../../src/lib/jail/plan.js';
import { bundleJail, pidsHoldingFdsIn, pidsWithCmdline, sleepMarker, until, workspace } from '../jail/helpers.js';
import { privateTmpDir, tempDir } from '../helpers/temp.js';

/**
 * Starts a jail whose command is `sleep <mark>` from a node process that SIGKILLs itself as soon as
 * spawnJail returns (the chain of execs before bubblewrap has only begun). Resolves, once it is
 * dead, with the command lines holding the mark it saw just before it died: its chain, running.
 */
async function spawnAndDie(mark: string, deadlineMs: number | undefined): Promise<string[]> {
  const dir = tempDir();
  const bundle = bundleJail(dir);
  const ws = workspace();
  const driver = join(dir, 'driver.mjs');
  const seenFile = join(dir, 'seen.json');
  writeFileSync(
    driver,
    `import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { spawnJail, DEFAULT_JAIL_LIMITS } from ${JSON.stringify(bundle)};
spawnJail({
  command: ['/bin/sleep', '${mark}'],
  mounts: [{ kind: 'rw', source: ${JSON.stringify(ws.path)}, target: '/workspace' }],
  cwd: '/workspace', env: { PATH: '/usr/bin:/bin' }, limits: DEFAULT_JAIL_LIMITS, hostUid: ${ws.hostUid},
  ${deadlineMs === undefined ? '' : `deadlineMs: ${deadlineMs},`}
});
const seen = [];
for (const pid of readdirSync('/proc')) {
  try {
    const cmd = readFileSync('/proc/' + pid + '/cmdline', 'utf8');
    if (cmd.includes('${mark}')) seen.push(cmd.split('\\0')[0]);
  } catch {}
}
writeFileSync(${JSON.stringify(seenFile)}, JSON.stringify(seen));
process.kill(process.pid, 'SIGKILL');
`,
  );
  const child = spawn(process.execPath, [driver], { stdio: 'ignore', env: { ...process.env, TMPDIR: privateTmpDir() } });
  const code = await new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_c, signal) => resolve(signal)));
  expect(code).toBe('SIGKILL');
  return JSON.parse(readFileSync(seenFile, 'utf8')) as string[];
}

/**
 * {@link spawnAndDie} until the spawner died while its chain ran and before bubblewrap (the chain's
 * first program is prlimit; a try where it saw none of it, or bubblewrap already, does not count:
 * not root, a chain can fail its first fork under the uid's process limit). Its mark, or undefined.
 */
async function landedDeath(deadlineMs: number | undefined): Promise<string | undefined> {
  for (let attempt = 0; attempt < 5; attempt++) {
    const mark = sleepMarker();
    const chain = await spawnAndDie(mark, deadlineMs);
    if (chain.length > 0 && !chain.some((cmd) => cmd.endsWith('/bwrap'))) return mark;
    // Whatever that try left goes before the next.
    for (const pid of pidsWithCmdline(mark)) killQuietly(pid);
  }
  return undefined;
}

function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    /* gone */
  }
}

describe('a jail whose spawner dies while it starts', () => {
  it('without a deadline leaves bubblewrap’s child blocked for good (control); with one, nothing is left', { timeout: 120_000 }, async () => {
    // Control: the hole, on a jail without a supervisor. The orphan's command line is bubblewrap's.
    const bare = await landedDeath(undefined);
    expect(bare, 'no spawner died while its chain ran, before bubblewrap').toBeDefined();
    try {
      // The chain goes on without its parent: bubblewrap starts, clones, and loses its parent.
      await until(() => pidsWithCmdline(bare!).some((pid) => readProcStat(pid)?.ppid === 1 && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('bwrap')), 20_000, 'an orphaned bubblewrap');
      await new Promise((r) => setTimeout(r, 2_000));
      const left = pidsWithCmdline(bare!);
      expect(left.length, 'the unsupervised jail left a process behind').toBeGreaterThan(0);
      // Blocked, not on its way out: it has no child and sleeps (on the eventfd), two seconds on.
      for (const pid of left) expect(readFileSync(`/proc/${pid}/stat`, 'utf8')).toMatch(/\) S /);
    } finally {
      // Killed again on every look: a chain killed mid-way can still leave a child of its bubblewrap.
      await until(
        () => {
          const left = pidsWithCmdline(bare!);
          for (const pid of left) killQuietly(pid);
          return left.length === 0;
        },
        20_000,
        'the control orphans to be killed',
      );
    }

    // The same death with a deadline: the supervisor ends the whole process group.
    const supervised = await landedDeath(3_000);
    // The attack ran: the spawner died while its chain ran, before bubblewrap.
    expect(supervised, 'no spawner died while its chain ran, before bubblewrap').toBeDefined();
    await until(() => pidsWithCmdline(supervised!).length === 0, 20_000, 'every process of the supervised jail to die');
  });
});

/** The command lines (argv) of the descendants of `pid` whose command line holds one of `needles`. */
function descendantsWith(pid: number, needles: readonly string[]): string[][] {
  const out: string[][] = [];
  for (let level = childPids(pid); level.length > 0; level = level.flatMap((p) => childPids(p))) {
    for (const p of level) {
      try {
        const cmd = readFileSync(`/proc/${p}/cmdline`, 'utf8');
        if (needles.some((n) => cmd.includes(n))) out.push(cmd.split('\0'));
      } catch {
        /* gone */
      }
    }
  }
  return out;
}

describe('`comis jail probe` killed while its jails start', () => {
  it("leaves no process behind: the probe's jails are supervised", { timeout: 300_000 }, async () => {
    // What the probe's node and python jails run (plan.ts passes it on the chain's command line).
    const needles = ['process.stdout.write(process.version)', 'import sys;print(sys.version'];
    let landed = 0;
    for (let attempt = 0; attempt < 10 && landed < 3; attempt++) {
      const tmp = privateTmpDir();
      const home = tempDir('comis-home-');
      const run = spawn(process.execPath, [comisBin, 'jail', 'probe', '--json'], {
        cwd: repoRoot,
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, COMIS_HOME: home, TMPDIR: tmp },
        stdio: 'ignore',
      });
      const exited = new Promise<void>((resolve) => run.once('exit', () => resolve()));
      let caught = false;
      // SIGKILL comis as soon as one of its jails' chains has reached bubblewrap (exec'd in place,
      // below comis and the supervisor): before its parent-death signal, as without a supervisor every such
      // kill left bubblewrap's child blocked for good (15 of 15 tries, the probe without a deadline).
      while (run.exitCode === null && run.signalCode === null) {
        caught = descendantsWith(run.pid!, needles).some((argv) => argv[0]!.endsWith('/bwrap'));
        if (caught) {
          run.kill('SIGKILL');
          break;
        }
        await new Promise((r) => setImmediate(r));
      }
      await exited;
      if (!caught) continue; // the probe finished (or died) before a chain was caught: not an attempt
      landed++;
      // Within the probe's deadline (20 s) and then some, nothing of those jails is left.
      await until(() => pidsHoldingFdsIn(tmp).length === 0 && pidsWithCmdline(tmp).length === 0, 40_000, `the jails of the killed probe to die (attempt ${attempt})`);
    }
    // The attack ran: comis died while one of its jails' chains was running.
    expect(landed, "no SIGKILL landed while a probe jail's bubblewrap was starting").toBeGreaterThan(0);
  });
});

describe('the stager as root holds its chain until it has exited', () => {
  /**
   * The race the holding stager closes, made certain: a supervisor with no parent-death signal (as
   * when its signal comes after it saw bubblewrap exit), a caller that dies, and a "bubblewrap"
   * that leaves a child in the supervisor's group and exits once the caller is gone (as bubblewrap
   * dies on its status write to a dead caller). Returns whether that child outlived the chain.
   */
  async function orphanLeft(hold: boolean): Promise<boolean> {
    const dir = tempDir();
    const pidFile = join(dir, 'child.pid');
    const mark = sleepMarker();
    // The caller's pid goes where the plan puts it ("CALLER" below, replaced by the caller itself).
    const stager = stagerArgs('/bin/sh', '/bin/true', '/dev/null', true, hold).map((a) => (a === String(process.pid) ? 'CALLER' : a));
    const fakeBwrap = ['/bin/sh', '-c', 'sleep "$1" & echo $! > "$2"; while kill -0 "$3" 2>/dev/null; do sleep 0.02; done; exit 7', 'fake-bwrap', mark, pidFile, 'CALLER'];
    const chain = ['/usr/bin/timeout', '--signal=KILL', '--kill-after=1', '--', '600', ...stager, ...fakeBwrap];
    const caller = spawn(
      process.execPath,
      [
        '-e',
        `const { spawn } = require('node:child_process');
const args = JSON.parse(process.argv[1]).map((a) => (a === 'CALLER' ? String(process.pid) : a));
const c = spawn(args[0], args.slice(1), { stdio: 'ignore' });
const wait = () => { try { require('node:fs').readFileSync(${JSON.stringify(pidFile)}); process.kill(process.pid, 'SIGKILL'); } catch { setTimeout(wait, 10); } };
wait();`,
        JSON.stringify(chain),
      ],
      { stdio: 'ignore' },
    );
    await new Promise((r) => caller.once('exit', r));
    // The caller died once the "jail" was there; the chain then ends on its own (fake bubblewrap exits 7).
    await until(() => pidsWithCmdline('fake-bwrap').length === 0 && pidsWithCmdline('comis-stage').length === 0, 20_000, 'the chain to end');
    const child = Number(readFileSync(pidFile, 'utf8'));
    const alive = pidsWithCmdline(mark).includes(child);
    for (const pid of pidsWithCmdline(mark)) process.kill(pid, 'SIGKILL');
    return alive;
  }

  it.runIf(isRoot())('kills the group when bubblewrap exits after its caller died; the exec stager leaves the jail behind (control)', { timeout: 60_000 }, async () => {
    expect(await orphanLeft(false), 'control: with the exec stager the child outlives the chain').toBe(true);
    expect(await orphanLeft(true), 'the holding stager kills it').toBe(false);
  });

  it.runIf(isRoot())("passes the chain's exit status on while its caller lives", async () => {
    const chain = ['/usr/bin/timeout', '--signal=KILL', '--kill-after=1', '--', '600', ...stagerArgs('/bin/sh', '/bin/true', '/dev/null', true, true), '/bin/sh', '-c', 'echo jailed; exit 7'];
    const result = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const p = spawn(chain[0]!, chain.slice(1), { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      p.stdout!.on('data', (d: Buffer) => (out += d.toString()));
      p.on('close', (code) => resolve({ code, out }));
    });
    expect(result).toEqual({ code: 7, out: 'jailed\n' });
  });
});
