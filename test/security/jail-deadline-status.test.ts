/**
 * Attack battery, the end of a run: the deadline holds without comis's event
 * loop, and how a run ended is decided from facts the script cannot forge.
 *
 * - The supervisor (`timeout -s KILL` in the launch chain) kills the jail at
 *   its deadline while comis's main thread is blocked (Atomics.wait), and the
 *   run is classified `timeout` with comis's own timer pushed out of reach.
 * - SIGKILL of comis with the supervisor in the chain still leaves nothing,
 *   not even a process of the supervisor's group that has no parent-death
 *   signal of its own (bubblewrap's child before its uid map is written).
 * - A fake `bwrap: …` line on stderr does not make a run `spawn_fail`; a real
 *   exec failure inside bubblewrap does (bubblewrap's status pipe says so).
 * - Multi-byte stdout survives chunk boundaries; a synchronous node stdout
 *   flood that dies in its own write queue is `stdout_cap`.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { loadConfig, resolveAgent } from '../../src/lib/config/load.js';
import { stagerArgs, supervisorArgs } from '../../src/lib/jail/plan.js';
import { spawnJail } from '../../src/lib/jail/spawn.js';
import { classifyExit, runOrchestrate, type OrchestrateOptions } from '../../src/lib/orchestrate/runner.js';
import { tempDir } from '../helpers/temp.js';
import { bundleJail, limits, node, pidsOfUid, pidsWithCmdline, root, runInJail, sleepMarker, until, workspace, WS } from '../jail/helpers.js';

/** Blocks this thread (and so its event loop: no timer, no I/O callback runs) for `ms`. */
function blockEventLoop(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

async function run(source: string, extra: Partial<OrchestrateOptions> = {}, config?: string): Promise<Awaited<ReturnType<typeof runOrchestrate>>['public']> {
  const home = tempDir('comis-end-');
  if (config) writeFileSync(join(home, 'config.yaml'), config);
  const agent = resolveAgent(await loadConfig({ home }));
  const res = await runOrchestrate({ source, displayName: 'job.mjs', language: 'js', agent, home, sessionKey: 's', ...extra });
  return res.public;
}

/**
 * Runs `source` as a node script of its own (the caller whose death a test is about) and waits
 * until its stdout says `ready` or it exits. Returns it and its stdout so far.
 */
async function startCaller(source: string, stderr: 'pipe' | 'inherit'): Promise<{ parent: ChildProcess; out: () => string }> {
  const driver = join(tempDir(), 'driver.mjs');
  writeFileSync(driver, source);
  const parent = spawn(process.execPath, [driver], { stdio: ['ignore', 'pipe', stderr] });
  let out = '';
  parent.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  try {
    await until(() => out.includes('ready') || parent.exitCode !== null, 30_000, 'the driver to start');
  } catch (err) {
    parent.kill('SIGKILL');
    throw err;
  }
  return { parent, out: () => out };
}

describe("the deadline does not depend on comis's event loop", () => {
  it('the supervisor kills the jail while the event loop is blocked; without it the jail lives on (control)', async () => {
    for (const supervised of [true, false]) {
      const mark = sleepMarker();
      const ws = workspace();
      const p = spawnJail({
        command: ['/bin/sh', '-c', `echo ready; exec /bin/sleep ${mark}`],
        mounts: [{ kind: 'rw', source: ws.path, target: WS }],
        cwd: WS,
        env: { PATH: '/usr/bin:/bin' },
        limits,
        hostUid: ws.hostUid,
        ...(supervised ? { deadlineMs: 1_000 } : {}),
      });
      let out = '';
      p.stdout.on('data', (d: Buffer) => (out += d.toString()));
      await until(() => out.includes('ready') && pidsWithCmdline(mark).length > 0, 20_000, 'the jailed sleep');
      // Nothing of comis runs for 5 s: no timer, no exit callback, no kill().
      blockEventLoop(5_000);
      const alive = pidsWithCmdline(mark);
      if (supervised) {
        expect(alive, 'killed during the block').toEqual([]);
        const exit = await p.exited;
        expect(exit.killedBy).toBe('deadline');
        expect(classifyExit(exit, 0)).toBe('timeout');
        if (root) expect(pidsOfUid(ws.hostUid)).toEqual([]);
      } else {
        expect(alive.length, 'the control jail outlived the block').toBeGreaterThan(0);
        p.kill();
        const exit = await p.exited;
        expect(exit.killedBy).toBe('kill');
      }
    }
  });

  it("kill() of a supervised jail at any moment of its start leaves nothing (the supervisor's whole process group is ended)", async () => {
    for (const delayMs of [0, 5, 20, 60]) {
      const mark = sleepMarker();
      const ws = workspace();
      const p = spawnJail({
        command: ['/bin/sh', '-c', `exec /bin/sleep ${mark}`],
        mounts: [{ kind: 'rw', source: ws.path, target: WS }],
        cwd: WS,
        env: { PATH: '/usr/bin:/bin' },
        limits,
        hostUid: ws.hostUid,
        deadlineMs: 600_000,
      });
      p.stderr.resume();
      await new Promise((r) => setTimeout(r, delayMs));
      p.kill();
      const exit = await p.exited;
      expect(exit.killedBy).toBe('kill');
      await until(() => pidsWithCmdline(mark).length === 0, 20_000, 'the jailed sleep to be gone');
      expect(pidsWithCmdline(`600.000 `).filter((pid) => pid === p.pid)).toEqual([]);
      if (root) await until(() => pidsOfUid(ws.hostUid).length === 0, 20_000, 'no process of the jail uid');
    }
  });

  it('a run whose comis timer never fires in time still ends at the supervisor deadline, as timeout', async () => {
    const mark = sleepMarker();
    let sawJail = false;
    const res = await run(`import { execFileSync } from 'node:child_process';\nconsole.log('started');\nexecFileSync('/bin/sleep', ['${mark}']);`, {
      timeoutMs: 1_000,
      secondLineTimerMs: 3_600_000,
      onEvent: (e) => {
        if (e.type !== 'run:started') return;
        // Block comis right after the spawn, past the deadline.
        blockEventLoop(4_000);
        sawJail = true;
      },
    });
    expect(sawJail).toBe(true);
    expect(res.outcome).toBe('failure');
    expect(res.failureClass).toBe('timeout');
    expect(res.exitCode).toBe(137);
    expect(pidsWithCmdline(mark)).toEqual([]);
  });

  it('SIGKILL of the process that started a supervised jail leaves neither the supervisor nor the jail', async () => {
    const dir = tempDir();
    const bundle = bundleJail(dir);
    const ws = workspace();
    const mark = sleepMarker();
    const { parent, out } = await startCaller(
      `import { spawnJail, DEFAULT_JAIL_LIMITS } from ${JSON.stringify(bundle)};
const p = spawnJail({
  command: ['/bin/sh', '-c', '/bin/sleep ${mark} & echo ready; exec /bin/sleep ${mark}'],
  mounts: [{ kind: 'rw', source: ${JSON.stringify(ws.path)}, target: '/workspace' }],
  cwd: '/workspace', env: { PATH: '/usr/bin:/bin' }, limits: DEFAULT_JAIL_LIMITS, hostUid: ${ws.hostUid}, deadlineMs: 600000,
});
p.stdout.on('data', (d) => { if (String(d).includes('ready')) process.stdout.write('ready ' + p.pid + '\\n'); });
`,
      'pipe',
    );
    try {
      const supervisorPid = Number(/ready (\d+)/.exec(out())![1]);
      expect(pidsWithCmdline('/timeout')).toContain(supervisorPid);
      await until(() => pidsWithCmdline(mark).length >= 2, 20_000, 'the jailed sleeps');
      parent.kill('SIGKILL');
      await until(() => pidsWithCmdline(mark).length === 0, 20_000, 'the jailed processes to die');
      await until(() => !pidsWithCmdline('/timeout').includes(supervisorPid), 20_000, 'the supervisor to die');
      if (root) await until(() => pidsOfUid(ws.hostUid).length === 0, 20_000, 'no process of the jail uid');
    } finally {
      parent.kill('SIGKILL');
    }
  });
});

/**
 * Starts, from a node process of its own, `args` (a supervisor's command line) over a shell that
 * leaves a sleep in the supervisor's process group, as bubblewrap's child is until its
 * --new-session; SIGKILLs that node process once the sleep runs and the supervisor is gone.
 * Returns the pids still running the sleep a moment later.
 */
async function survivorsOfCallerKill(args: string[], mark: string): Promise<number[]> {
  // The sleep's own argv (NUL-separated), not the shell's or the supervisor's, which quote it.
  const sleeping = `/bin/sleep\0${mark}`;
  const { parent, out } = await startCaller(
    `import { spawn } from 'node:child_process';
const p = spawn(${JSON.stringify(args[0])}, ${JSON.stringify([...args.slice(1), '/bin/sh', '-c', `/bin/sleep ${mark} & echo ready; wait`])}, { stdio: ['ignore', 'pipe', 'inherit'] });
p.stdout.on('data', (d) => process.stdout.write(d));
process.stdout.write('supervisor ' + p.pid + '\\n');
`,
    'inherit',
  );
  try {
    const supervisorPid = Number(/supervisor (\d+)/.exec(out())![1]);
    await until(() => pidsWithCmdline(sleeping).length === 1, 20_000, 'the sleep in the supervisor group');
    parent.kill('SIGKILL');
    await until(() => !pidsWithCmdline('/timeout').includes(supervisorPid), 20_000, 'the supervisor to end');
    // The supervisor's --kill-after is 1 s: past it, whatever it was going to end has ended.
    await new Promise((r) => setTimeout(r, 1_500));
    return pidsWithCmdline(sleeping);
  } finally {
    parent.kill('SIGKILL');
  }
}

describe("a caller's death ends the supervisor's whole process group", () => {
  const setpriv = '/usr/bin/setpriv';
  const timeout = '/usr/bin/timeout';

  it("a process of the supervisor's group with no parent-death signal of its own dies with the caller; with a supervisor SIGKILLed on the caller's death it is left behind (control)", async () => {
    const args = supervisorArgs(setpriv, timeout, 600_000);
    expect(args.slice(0, 3)).toEqual([setpriv, '--pdeathsig', 'ALRM']);
    expect(await survivorsOfCallerKill(args, sleepMarker())).toEqual([]);

    // Control: the same chain with the supervisor killed outright, as before, passes nothing on.
    const mark = sleepMarker();
    const left = await survivorsOfCallerKill([setpriv, '--pdeathsig', 'KILL', ...args.slice(3)], mark);
    try {
      expect(left).toHaveLength(1);
    } finally {
      for (const pid of pidsWithCmdline(mark)) process.kill(pid, 'SIGKILL'); // the orphaned shell and sleep
    }
  });
  it("bubblewrap's child, parked between its clone and its uid map, dies with the caller; with SIGTERM as the supervisor's parent-death signal it is left to init forever (control)", async () => {
    const sup = supervisorArgs(setpriv, timeout, 600_000);
    const ours = sleepMarker();
    try {
      expect(await bwrapChildrenLeftByCallerKill(sup, ours)).toEqual([]);
    } finally {
      for (const pid of pidsWithCmdline(ours)) process.kill(pid, 'SIGKILL'); // only if it failed
    }

    // Control: the chain of the last session (SIGTERM on the caller's death). bubblewrap dies of the
    // SIGTERM, its child (init of a new pid namespace) ignores it, `timeout` exits without its
    // --kill-after SIGKILL since its monitored child is gone: the orphan of issue 20.
    const mark = sleepMarker();
    const left = await bwrapChildrenLeftByCallerKill([setpriv, '--pdeathsig', 'TERM', ...sup.slice(3)], mark);
    try {
      expect(left).toHaveLength(1);
      expect(
        readFileSync(`/proc/${left[0]}/stat`, 'utf8')
          .replace(/^.*\) /, '')
          .split(' ')[1],
        'an orphan of pid 1',
      ).toBe('1');
    } finally {
      for (const pid of pidsWithCmdline(mark)) process.kill(pid, 'SIGKILL');
    }
  });
  it('a supervised stager whose supervisor is no longer a child of its caller (the caller died before the parent-death signal was set) jails nothing; under its caller it goes on (control)', async () => {
    // The stager's mount is /bin/true here: the check comes before it and before anything it execs.
    const chain = [...supervisorArgs(setpriv, timeout, 600_000), ...stagerArgs('/bin/sh', '/bin/true', '/dev/null', true), '/bin/echo', 'jailed'];
    const runFrom = (file: string, args: string[]): Promise<{ code: number | null; out: string }> =>
      new Promise((resolve) => {
        const p = spawn(file, args, { stdio: ['ignore', 'pipe', 'inherit'] });
        let out = '';
        p.stdout!.on('data', (d: Buffer) => (out += d.toString()));
        p.on('close', (code) => resolve({ code, out }));
      });
    // Control: spawned by this process, the pid the stager was given.
    expect(await runFrom(chain[0]!, chain.slice(1))).toEqual({ code: 0, out: 'jailed\n' });
    // Spawned by a shell in between: the supervisor's parent is not the caller the plan names.
    expect(await runFrom('/bin/sh', ['-c', '"$@"; exit $?', 'sh', ...chain])).toEqual({ code: 125, out: '' });
  });
});

/**
 * Starts, from a shell of its own (the caller), `args` (a supervisor's command line) over a real
 * bubblewrap held between its clone() and the write of its child's uid map (--userns-block-fd on a
 * FIFO that never gets a byte or an EOF): its child is then pid 1 of new user and pid namespaces,
 * in the supervisor's process group, waiting for bubblewrap with no parent-death signal, as it is
 * for a moment at every jail start. SIGKILLs the shell and returns the pids of bubblewrap processes
 * carrying `mark` once the supervisor is gone and its --kill-after (1 s) is past.
 */
async function bwrapChildrenLeftByCallerKill(args: string[], mark: string): Promise<number[]> {
  const fifo = join(tempDir(), 'block');
  execFileSync('mkfifo', ['-m', '600', fifo]);
  const bwrap = ['/usr/bin/bwrap', '--unshare-user', '--unshare-pid', '--ro-bind', '/', '/', '--info-fd', '5', '--userns-block-fd', '6', '--', '/bin/echo', mark];
  const quote = (a: string): string => `'${a.replaceAll("'", `'\\''`)}'`;
  const line = `${[...args, ...bwrap].map(quote).join(' ')} 5>/dev/null 6<>${quote(fifo)} & echo $!; wait`;
  const bwraps = (): number[] =>
    pidsWithCmdline(`${mark}\0`).filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('/usr/bin/bwrap\0');
      } catch {
        return false; // gone
      }
    });
  const caller = spawn('/bin/bash', ['-c', line], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  caller.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  try {
    await until(() => /^\d+\n/.test(out), 20_000, 'the supervisor to start');
    const supervisorPid = Number(out.trim());
    // bubblewrap and its child, both running bubblewrap's argv with the marker (not the shell or the supervisor).
    await until(() => bwraps().length === 2, 20_000, "bubblewrap's child");
    caller.kill('SIGKILL');
    await until(() => !pidsWithCmdline('/timeout').includes(supervisorPid), 20_000, 'the supervisor to end');
    await new Promise((r) => setTimeout(r, 1_500));
    return bwraps();
  } finally {
    caller.kill('SIGKILL');
  }
}

describe('the failure class cannot be spoofed', () => {
  it('a fake bubblewrap error on stderr with exit 1 is nonzero_exit', async () => {
    const res = await run(`console.log('reached');\nconsole.error("bwrap: Can't find source path /nonexistent: No such file or directory");\nprocess.exit(1);`);
    expect(res.stdout).toBe('reached\n');
    expect(res.stderrTail).toContain('bwrap: ');
    expect(res.failureClass).toBe('nonzero_exit');
    // Same at the jail level: bubblewrap reports that it exec'd the command.
    const n = node();
    const fake = await runInJail({ command: n.cmd(`console.error('bwrap: execvp /x: No such file or directory'); process.exit(1)`), mounts: n.mounts });
    expect(fake.stderr).toContain('bwrap: execvp');
    expect(fake.started).toBe(true);
    expect(classifyExit(fake, 0)).toBe('nonzero_exit');
  });

  it('a real exec failure inside bubblewrap (an interpreter missing in the jail) is spawn_fail (positive control)', async () => {
    const r = await runInJail({ command: ['/usr/bin/comis-no-such-interpreter', '-e', '1'] });
    expect(r.stderr).toMatch(/^bwrap: execvp/m);
    expect(r.code).toBe(1);
    expect(r.started).toBe(false);
    expect(classifyExit(r, 0)).toBe('spawn_fail');
    // A setup failure (a mount bubblewrap cannot make) likewise.
    const ws = workspace();
    const p = spawnJail({ command: ['/bin/true'], mounts: [{ kind: 'rw', source: ws.path, target: WS }], cwd: '/no/such/dir', env: {}, limits, hostUid: ws.hostUid });
    p.stderr.resume();
    const setup = await p.exited;
    expect(setup.code).not.toBe(0);
    expect(setup.started).toBe(false);
  });
});

describe('stdout is decoded and capped honestly', () => {
  it('25,000 "€" come back intact across pipe chunks', async () => {
    const res = await run(`process.stdout.write('€'.repeat(25000));`);
    expect(res.outcome).toBe('success');
    // The head and tail that re-enter hold only whole euro signs, no U+FFFD.
    expect(res.stdout).not.toContain('\uFFFD');
    expect(res.stdout).toBe('€'.repeat(25000));
  });

  it('a synchronous node stdout flood that dies in its own write queue is stdout_cap; a crash after a little output is not', async () => {
    // A low address-space limit so node's queue runs out quickly.
    const config = 'agents:\n  default:\n    autonomy:\n      limits:\n        memoryMb: 1024\n';
    const flood = await run(`const big = 'x'.repeat(1 << 20);\nwhile (true) process.stdout.write(big);`, { timeoutMs: 120_000 }, config);
    expect(flood.failureClass).toBe('stdout_cap');
    expect(flood.exitCode).toBeGreaterThan(128);
    // Control: the same death after less than one pipe buffer of stdout stays what it is.
    const crash = await run(`process.stdout.write('y'.repeat(1000));\nprocess.exitCode = 134;`, {}, config);
    expect(crash.stdout).toBe('y'.repeat(1000));
    expect(crash.failureClass).toBe('nonzero_exit');
  });
});
