import { chmodSync, closeSync, fstatSync, mkdirSync, readFileSync, readdirSync, readlinkSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { ComisError } from '../../src/lib/errors.js';
import { deriveJailUid, inheritableFds, readProcStat } from '../../src/lib/jail/host.js';
import { openConstantData, stageParent } from '../../src/lib/jail/launch.js';

/** The fds this test process inherited without close-on-exec (the jail sees them only as /dev/null covers). */
const inheritableFdsAtStart = inheritableFds();
import { reachableBy } from '../../src/lib/jail/plan.js';
import { detectSandboxProvider, prepareWritableDir, resolveInterpreter, spawnJail } from '../../src/lib/jail/spawn.js';
import { tempDir } from '../helpers/temp.js';
import { WS, limits, node, python, root, runInJail, until, workspace } from './helpers.js';

/**
 * A workspace `ws` under a 0700 directory `locked` (both names under a fresh temp dir), writable
 * by its jail uid: as root the jail uid cannot reach it, so the jail stages it. `prepare` makes
 * `locked`'s other contents before it is locked.
 */
function lockedWorkspace(lockedName: string, wsName: string, prepare?: (locked: string) => void): { wsPath: string; hostUid: number } {
  const locked = join(tempDir(), lockedName);
  const wsPath = join(locked, wsName);
  mkdirSync(wsPath, { recursive: true });
  prepare?.(locked);
  chmodSync(locked, 0o700);
  const hostUid = deriveJailUid(wsPath);
  prepareWritableDir(wsPath, hostUid);
  return { wsPath, hostUid };
}
describe('spawnJail', () => {
  it('the provider on this machine works (the smoke test passed)', () => {
    const p = detectSandboxProvider();
    expect(p).toMatchObject({ provider: 'bwrap', binary: expect.stringMatching(/bwrap$/) });
    expect(p.problem).toBeUndefined();
    expect(p.checks?.every((c) => c.ok)).toBe(true);
  });

  it('runs node at the default limits (64 processes, 4096 MiB) and propagates the exit code', async () => {
    const n = node();
    const ok = await runInJail({ command: n.cmd('console.log("hi", process.getuid(), process.pid, process.cwd()); process.exitCode = 3'), mounts: n.mounts });
    expect(ok.stderr).toBe('');
    expect(ok.stdout).toBe('hi 1000 1 /workspace\n');
    expect(ok.code).toBe(3);
    expect(ok.signal).toBeNull();
    expect(ok.killedBy).toBeUndefined();
  });

  it('runs node with WebAssembly memory and worker threads inside the default limits (with the interpreter args)', async () => {
    const n = node();
    const code = `
      const { Worker } = require('node:worker_threads');
      const mem = new WebAssembly.Memory({ initial: 256, maximum: 4096 });
      const w = new Worker('require("node:worker_threads").parentPort.postMessage(6*7)', { eval: true });
      w.on('message', (v) => { console.log('wasm', mem.buffer.byteLength, 'worker', v); w.terminate(); });`;
    const r = await runInJail({ command: n.cmd(code), mounts: n.mounts });
    expect(r.stderr).toBe('');
    expect(r.stdout.trim()).toBe(`wasm ${256 * 65536} worker 42`);
  });

  it('runs the python3 on PATH (symlinks resolved; its prefix bound read-only) and feeds stdin', async () => {
    const py = python();
    const interp = resolveInterpreter('python3');
    expect(interp.hostPath).toBe(realpathSync(interp.hostPath));
    expect(interp.jailPath).toBe(interp.hostPath);
    const r = await runInJail({
      command: py.cmd('import sys,os; print(sys.stdin.read().upper(), os.getuid(), sys.version.split()[0])'),
      mounts: py.mounts,
      stdin: Buffer.from('hello'),
    });
    expect(r.stderr).toBe('');
    expect(r.stdout.trim()).toBe(`HELLO 1000 ${interp.version}`);
    expect(r.code).toBe(0);
  });

  it('gives the program exactly the env it was given (plus PWD from bubblewrap)', async () => {
    const n = node();
    const r = await runInJail({ command: n.cmd('console.log(JSON.stringify(process.env))'), mounts: n.mounts, env: { PATH: '/usr/bin', ONLY_THIS: 'yes' } });
    expect(JSON.parse(r.stdout)).toEqual({ PATH: '/usr/bin', ONLY_THIS: 'yes', PWD: '/workspace' });
  });

  it('writes through rw mounts, not through ro ones; nested mounts work in any order', async () => {
    const ws = workspace();
    const ro = tempDir();
    writeFileSync(join(ro, 'data.txt'), 'ro-data');
    chmodSync(ro, 0o755);
    const r = await runInJail({
      ws,
      // the nested ro mount is listed BEFORE its rw parent on purpose
      mounts: [{ kind: 'ro', source: ro, target: `${WS}/results` }],
      command: ['/bin/sh', '-c', `cat ${WS}/results/data.txt; echo ok > ${WS}/out.txt; echo x > ${WS}/results/x 2>/dev/null || echo ro-refused`],
    });
    expect(r.stdout).toBe('ro-dataro-refused\n');
    expect(readFileSync(join(ws.path, 'out.txt'), 'utf8')).toBe('ok\n');
  });

  it.skipIf(!root)('as root: a workspace under a 0700 root-owned directory is reachable (staged), and the host sees no bind', async () => {
    const { wsPath, hostUid } = lockedWorkspace('home-0700', 'ws');
    const r = await runInJail({ ws: { path: wsPath, hostUid }, command: ['/bin/sh', '-c', `echo staged > ${WS}/f && cat ${WS}/f`] });
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('staged\n');
    expect(readFileSync(join(wsPath, 'f'), 'utf8')).toBe('staged\n');
    expect(readFileSync('/proc/self/mountinfo', 'utf8')).not.toContain('comis-stage');
  });

  it.skipIf(!root)('as root: staged sources whose paths hold a space, a tab, a newline, # and a backslash are bound exactly (the stage fstab escapes them)', async () => {
    let roPath = '';
    const { wsPath, hostUid } = lockedWorkspace('home 0700', 'w s\tx\ny#z\\q', (locked) => {
      roPath = join(locked, 'ro #1');
      mkdirSync(roPath);
      writeFileSync(join(roPath, 'data.txt'), 'ro-data');
      chmodSync(roPath, 0o755);
    });
    const r = await runInJail({
      ws: { path: wsPath, hostUid },
      mounts: [{ kind: 'ro', source: roPath, target: `${WS}/results` }],
      command: ['/bin/sh', '-c', `cat ${WS}/results/data.txt && echo staged > ${WS}/f`],
    });
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('ro-data');
    expect(readFileSync(join(wsPath, 'f'), 'utf8')).toBe('staged\n');
  });

  it.skipIf(!root)('as root: the stage directory is gone when `exited` resolves (removed off the event loop, still before the exit is reported)', async () => {
    const { wsPath, hostUid } = lockedWorkspace('home-0700', 'ws');
    const parent = stageParent(hostUid);
    const ours = (): string[] => readdirSync(parent).filter((n) => n.startsWith(`comis-stage-${process.pid}-`));
    const before = ours();
    let during: string[] = [];
    let atExit: string[] | undefined;
    const r = await runInJail({
      ws: { path: wsPath, hostUid },
      command: ['/bin/sh', '-c', `echo staged > ${WS}/f`],
      during: (p) => {
        // Positive control: this run made a stage (its workspace is out of the jail uid's reach).
        during = ours().filter((n) => !before.includes(n));
        // Read in the reaction to `exited` itself, before anything else can run.
        void p.exited.then(() => (atExit = ours()));
      },
    });
    expect(r.code).toBe(0);
    expect(during).toHaveLength(1);
    expect(atExit).toEqual(before);
    expect(ours()).toEqual(before);
  });

  // A private TMPDIR (0700, as careful operators and CI runners set it) once made every staged jail fail: the stage
  // went under TMPDIR, which the jail uid cannot search, so bubblewrap could not open its bind sources.
  it('a private 0700 TMPDIR does not break a jail whose workspace is under a 0700 directory (as root: staged where the jail uid can reach)', async () => {
    const base = tempDir();
    const priv = join(base, 'private-tmp');
    mkdirSync(priv, { mode: 0o700 });
    const locked = join(base, 'home-0700');
    const wsPath = join(locked, 'ws');
    mkdirSync(wsPath, { recursive: true });
    chmodSync(locked, 0o700);
    const hostUid = root ? deriveJailUid(wsPath) : process.getuid!();
    prepareWritableDir(wsPath, hostUid);
    const saved = process.env.TMPDIR;
    process.env.TMPDIR = priv;
    try {
      if (root) {
        // Control: the jail uid cannot search the private TMPDIR, so a stage there is out of its reach...
        expect(reachableBy(join(priv, 'x'), hostUid, hostUid)).toBe(false);
        // ...and the stage goes elsewhere, where it can.
        const parent = stageParent(hostUid);
        expect(parent).not.toBe(priv);
        expect(reachableBy(join(parent, 'x'), hostUid, hostUid)).toBe(true);
      }
      const r = await runInJail({ ws: { path: wsPath, hostUid }, command: ['/bin/sh', '-c', `echo private-tmp > ${WS}/f && cat ${WS}/f`] });
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(r.stdout).toBe('private-tmp\n');
      expect(readFileSync(join(wsPath, 'f'), 'utf8')).toBe('private-tmp\n');
      // Nothing left in the private TMPDIR, and no stage left behind.
      expect(readdirSync(priv)).toEqual([]);
    } finally {
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
    }
  });

  it('never stages in a TMPDIR where other users can rename entries (0777 without the sticky bit): /tmp then', () => {
    const base = tempDir();
    chmodSync(base, 0o711); // so only the mode of open-tmp itself decides
    const open = join(base, 'open-tmp');
    mkdirSync(open);
    chmodSync(open, 0o777);
    const uid = root ? deriveJailUid(open) : process.getuid!();
    const saved = process.env.TMPDIR;
    process.env.TMPDIR = open;
    try {
      expect(stageParent(uid)).toBe('/tmp');
      // Control: the same directory, once sticky, is used.
      chmodSync(open, 0o1777);
      expect(stageParent(uid)).toBe(open);
    } finally {
      if (saved === undefined) delete process.env.TMPDIR;
      else process.env.TMPDIR = saved;
    }
  });

  it.skipIf(!root)('as root: bubblewrap runs as the unprivileged host uid, is our direct child, with an empty environ', async () => {
    const n = node();
    let seen: { uid?: number; ppid?: number; exe?: string; environ?: string } = {};
    const r = await runInJail({
      command: n.cmd('setTimeout(() => console.log("done"), 300)'),
      mounts: n.mounts,
      during: async (p) => {
        // Until the stager, prlimit and setpriv have exec'd into bubblewrap.
        await until(() => {
          try {
            return readlinkSync(`/proc/${p.pid}/exe`).endsWith('bwrap');
          } catch {
            return false;
          }
        });
        const status = readFileSync(`/proc/${p.pid}/status`, 'utf8');
        seen = {
          uid: Number(/^Uid:\s+(\d+)/m.exec(status)![1]),
          ppid: readProcStat(p.pid)!.ppid,
          exe: readlinkSync(`/proc/${p.pid}/exe`),
          environ: readFileSync(`/proc/${p.pid}/environ`, 'utf8'),
        };
      },
    });
    expect(r.stdout).toBe('done\n');
    // prlimit and setpriv exec in place, so by now the pid is bubblewrap's
    expect(seen.exe).toMatch(/bwrap$/);
    expect(seen.uid).toBe(r.hostUid);
    expect(seen.ppid).toBe(process.pid);
    expect(seen.environ).toBe('');
  });

  it('serves the constant data (seccomp filter, /etc) from unnamed shared files: each spawn its own offset, no fd left behind, none in the jail', async () => {
    const a = Buffer.from('constant bytes\n');
    const fd1 = openConstantData(a)!;
    const fd2 = openConstantData(Buffer.from(a))!;
    try {
      expect(readFileSync(fd1, 'utf8')).toBe('constant bytes\n');
      expect(readFileSync(fd2, 'utf8')).toBe('constant bytes\n'); // its own offset: not at the end the first read left
      expect(readlinkSync(`/proc/self/fd/${fd1}`)).toMatch(/ \(deleted\)$/); // no name anyone could open or rewrite
      expect(fstatSync(fd1).ino).toBe(fstatSync(fd2).ino); // one file per content
      expect(fstatSync(fd1).mode & 0o777).toBe(0o600);
    } finally {
      closeSync(fd1);
      closeSync(fd2);
    }
    const ownFds = (): number => readdirSync('/proc/self/fd').length;
    const listing = 'for f in /proc/self/fd/*; do echo "$f"; done; cat /etc/passwd; grep \'^Seccomp:\' /proc/self/status';
    const first = await runInJail({ command: ['/bin/sh', '-c', listing] });
    const before = ownFds();
    for (let i = 0; i < 3; i++) {
      const res = await runInJail({ command: ['/bin/sh', '-c', listing] });
      expect(res.code).toBe(0);
      expect(res.stdout).toBe(first.stdout); // the same /etc, the same filter, the same fds every time
    }
    expect(ownFds()).toBe(before);
    expect(first.stdout).toContain('comis:x:1000:1000');
    expect(first.stdout).toMatch(/^Seccomp:\s+2$/m);
    // The jail holds stdio, the listing's own fd and the covers of fds the test runner leaked; no data fd.
    const fds = first.stdout
      .split('\n')
      .filter((l) => l.startsWith('/proc/self/fd/'))
      .map((l) => Number(l.slice(14)));
    const covers = fds.filter((fd) => fd > 3);
    expect(fds.filter((fd) => fd <= 3)).toEqual([0, 1, 2, 3]);
    for (const fd of covers) expect(inheritableFdsAtStart).toContain(fd);
  });

  it('kill() ends the run: exited reports 137 (SIGKILL) and killedBy kill', async () => {
    const r = await runInJail({
      command: ['/bin/sh', '-c', 'echo started; exec sleep 1000'],
      during: async (p, out) => {
        while (!out.stdout().includes('started')) await new Promise((res) => setTimeout(res, 10));
        p.kill();
        p.kill(); // idempotent
      },
    });
    expect(r.killedBy).toBe('kill');
    // pid 1 was SIGKILLed; bubblewrap reaped it and exited 128+9
    expect(r.code === 137 || r.signal === 'SIGKILL').toBe(true);
  });

  it('exited resolves only after all output has been delivered', async () => {
    const n = node();
    const r = await runInJail({ command: n.cmd('process.stdout.write("x".repeat(3 * 1024 * 1024)); process.stdout.write("END")'), mounts: n.mounts });
    expect(r.stdout.length).toBe(3 * 1024 * 1024 + 3);
    expect(r.stdout.endsWith('END')).toBe(true);
  });

  it('refuses a bad request before starting anything', () => {
    const base = { command: ['/bin/true'], mounts: [], cwd: '/', env: {}, limits };
    const code = (fn: () => unknown): string | undefined => {
      try {
        fn();
      } catch (err) {
        return (err as ComisError).code;
      }
      return undefined;
    };
    expect(code(() => spawnJail({ ...base, env: { X: 'a\0b' } }))).toBe('INPUT_INVALID');
    expect(code(() => spawnJail({ ...base, mounts: [{ kind: 'ro', source: '/nonexistent-comis', target: '/x' }] }))).toBe('INPUT_INVALID');
    expect(code(() => spawnJail({ ...base, mounts: [{ kind: 'rw', source: tempDir(), target: '/etc' }] }))).toBe('INPUT_INVALID');
    if (root) expect(code(() => spawnJail({ ...base, hostUid: 0 }))).toBe('INPUT_INVALID');
  });

  it("the jail's own RLIMIT_NPROC is exactly maxProcesses from its first instruction (not root: set through bubblewrap's block fd before the exec)", async () => {
    const r = await runInJail({ command: ['/bin/sh', '-c', 'grep "^Max processes" /proc/self/limits'], limits: { ...limits, maxProcesses: 23 } });
    expect(r.stdout).toMatch(/^Max processes\s+23\s+23\s+processes/);
    expect(r.started).toBe(true);
  });
});
