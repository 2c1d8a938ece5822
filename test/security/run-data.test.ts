/**
 * Attacks on run data, through `bin/comis.js` as a user would run it: who can
 * read a running run's data, what a script can leave behind (setuid copies,
 * an opened-up workspace), how cleanup reacts to a directory swapped for a
 * symlink by a holder of the jail uid, and what a SIGKILLed comis leaves.
 * Each attack has a positive control showing it works where the protection
 * is absent.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { readProcStat } from '../../src/lib/jail/host.js';
import { removeTree } from '../../src/lib/orchestrate/run-dir.js';
import { comisBin, parseJson, repoRoot } from '../helpers/cli.js';
import { makeHome, type Home } from '../helpers/orchestrate.js';
import { removeTempDir, tempDir } from '../helpers/temp.js';
import { until } from '../helpers/until.js';

const root = process.getuid?.() === 0;
const OTHER_UID = 1000; // `cloudsdk`: another local user
const NOT_ROOT = 'needs root: acting as a second local user (runuser) is a root privilege';

/** Runs `cmd` as another local user; returns its combined output and status. */
function asOtherUser(cmd: string): { status: number | null; out: string } {
  const r = spawnSync('setpriv', [`--reuid=${OTHER_UID}`, `--regid=${OTHER_UID}`, '--clear-groups', '/bin/sh', '-c', cmd], { encoding: 'utf8' });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

/** Starts `comis orchestrate` without waiting for it. */
function startComis(h: Home, args: string[]): { child: ChildProcess; done: Promise<{ status: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }> } {
  const child = spawn(process.execPath, [comisBin, ...args], { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: h.home, COMIS_HOME: h.home }, cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const done = new Promise<{ status: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>((resolve) => child.on('exit', (status, signal) => resolve({ status, signal, stdout, stderr })));
  return { child, done };
}

/** Every entry below `dir` (not following links), with its lstat mode. */
function modesBelow(dir: string): { path: string; mode: number; isDir: boolean }[] {
  const out: { path: string; mode: number; isDir: boolean }[] = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    const st = lstatSync(p);
    if (st.isSymbolicLink()) continue;
    out.push({ path: p, mode: st.mode & 0o7777, isDir: st.isDirectory() });
    if (st.isDirectory()) out.push(...modesBelow(p));
  }
  return out;
}

/** A script that waits (up to 60 s) until the test drops `/workspace/go`. */
const WAIT_FOR_GO = `const { existsSync } = await import('node:fs');\nfor (let i = 0; i < 1200 && !existsSync('/workspace/go'); i++) await new Promise((r) => setTimeout(r, 50));\n`;

describe('run data is private', () => {
  it.skipIf(!root)(`another user cannot list or read a running run's workspace data or script source (${NOT_ROOT})`, async () => {
    const h = makeHome();
    chmodSync(h.home, 0o755); // a COMIS_HOME others may enter, as a hand-made ~/.comis often is
    const ws = join(h.home, 'workspaces', 'default'); // created by comis, as for every agent without a configured workspace
    const script = h.script(
      'open-up.mjs',
      `// SCRIPT-SOURCE-MARKER-5821\nimport { chmodSync, writeFileSync } from 'node:fs';\n` +
        // The jail opens everything it controls as wide as it can.
        `writeFileSync('/workspace/data.txt', 'WORKSPACE-SECRET-7731\\n');\nchmodSync('/workspace/data.txt', 0o666);\nchmodSync('/workspace', 0o777);\nwriteFileSync('/workspace/ready', '');\n${WAIT_FOR_GO}console.log('done');\n`,
    );
    const run = startComis(h, ['orchestrate', script, '--timeout-ms', '90000']);
    try {
      await until('the script to open up its workspace', () => existsSync(join(ws, 'ready')));
      const runs = join(h.home, 'runs');
      const [name] = readdirSync(runs);
      expect(name).toMatch(new RegExp(`^${run.child.pid}-\\d+-r-`));
      const sdk = join(runs, name!, 'sdk');
      const sourceFile = readdirSync(sdk)
        .map((n) => join(sdk, n))
        .find((p) => readFileSync(p, 'utf8').includes('SCRIPT-SOURCE-MARKER-5821'))!;
      expect(sourceFile).toBeDefined();
      expect(lstatSync(runs).mode & 0o777).toBe(0o700);
      expect(lstatSync(join(runs, name!)).mode & 0o777).toBe(0o700);

      const attack = `ls ${runs}; cat ${sourceFile}; ls ${ws}; cat ${join(ws, 'data.txt')}`;
      const denied = asOtherUser(attack);
      expect(denied.out).not.toContain('SCRIPT-SOURCE-MARKER-5821');
      expect(denied.out).not.toContain('WORKSPACE-SECRET-7731');
      expect(denied.out).toMatch(/Permission denied/);

      // Positive control: the same user with the private parents opened reads both.
      chmodSync(runs, 0o755);
      chmodSync(join(runs, name!), 0o755);
      chmodSync(join(h.home, 'workspaces'), 0o755);
      const opened = asOtherUser(attack);
      chmodSync(runs, 0o700);
      chmodSync(join(runs, name!), 0o700);
      chmodSync(join(h.home, 'workspaces'), 0o700);
      expect(opened.out).toContain('SCRIPT-SOURCE-MARKER-5821');
      expect(opened.out).toContain('WORKSPACE-SECRET-7731');
    } finally {
      writeFileSync(join(ws, 'go'), '');
    }
    const res = await run.done;
    expect(res.stdout).toBe('done\n');
    // After the run: the run dir is gone and the workspace the jail opened is closed again.
    expect(readdirSync(join(h.home, 'runs'))).toEqual([]);
    expect(lstatSync(ws).mode & 0o077).toBe(0);
    expect(lstatSync(join(ws, 'data.txt')).mode & 0o022).toBe(0);
  });

  it('run data lives under $COMIS_HOME/runs, mode 0700 and ours, and not in /tmp', async () => {
    const h = makeHome();
    const ws = h.workspace();
    const run = startComis(h, ['orchestrate', h.script('wait.mjs', `import { writeFileSync } from 'node:fs';\nwriteFileSync('/workspace/ready', '');\n${WAIT_FOR_GO}console.log('ok');`), '--timeout-ms', '90000']);
    try {
      await until('the run to start', () => existsSync(join(ws, 'ready')));
      const runs = join(h.home, 'runs');
      const st = lstatSync(runs);
      expect(st.mode & 0o777).toBe(0o700);
      expect(st.uid).toBe(process.getuid!());
      const names = readdirSync(runs);
      expect(names).toHaveLength(1);
      const dir = lstatSync(join(runs, names[0]!));
      expect(dir.mode & 0o777).toBe(0o700);
      expect(dir.uid).toBe(process.getuid!());
      // Nothing in the run dir belongs to the jail uid (which root deletes afterwards).
      for (const e of modesBelow(join(runs, names[0]!))) if (e.isDir) expect(lstatSync(e.path).uid, e.path).toBe(process.getuid!());
      const runId = /-(r-[0-9a-f]+)$/.exec(names[0]!)![1]!;
      expect(readdirSync('/tmp').filter((n) => n.includes(runId))).toEqual([]);
    } finally {
      writeFileSync(join(ws, 'go'), '');
    }
    expect((await run.done).stdout).toBe('ok\n');
  });
});

describe('what a script leaves in its workspace', () => {
  it('a setuid interpreter copy does not survive the run; planted setuid/setgid and open modes are stripped', () => {
    const h = makeHome();
    const ws = h.workspace();
    // Planted from outside, before the run: proves the post-run strip on its own, whatever seccomp refuses.
    writeFileSync(join(ws, 'planted-suid'), '#!/bin/sh\n');
    chmodSync(join(ws, 'planted-suid'), 0o4755);
    mkdirSync(join(ws, 'shared'));
    chmodSync(join(ws, 'shared'), 0o2777);
    writeFileSync(join(ws, 'shared', 'inner'), 'x');
    chmodSync(join(ws, 'shared', 'inner'), 0o6777);
    expect(lstatSync(join(ws, 'planted-suid')).mode & 0o4000).toBe(0o4000);
    // A link out of the workspace: the strip must not follow it to what it names.
    const outside = join(tempDir('comis-outside-'), 'outside-suid');
    writeFileSync(outside, 'x');
    chmodSync(outside, 0o4777);
    symlinkSync(outside, join(ws, 'link-out'));
    const res = h.run([
      'orchestrate',
      h.script(
        'suid.mjs',
        `import { chmodSync, copyFileSync, statSync } from 'node:fs';\n` +
          `console.log('planted', (statSync('planted-suid').mode & 0o4000) ? 'SUID' : 'plain');\n` +
          `copyFileSync('/bin/sh', 'sh-copy');\nconsole.log('ATTACK-LINE');\n` +
          `try { chmodSync('sh-copy', 0o4755); } catch (e) { console.log('chmod', e.code); }\n` +
          `try { chmodSync('.', 0o777); } catch (e) { console.log('chmod dir', e.code); }\n` +
          `console.log('copy', (statSync('sh-copy').mode & 0o4000) ? 'SUID' : 'plain');`,
      ),
    ]);
    // The script ran to the attack and saw the planted bit still set while it ran.
    expect(res.stdout).toMatch(/^planted SUID\nATTACK-LINE\n/);
    expect(res.stdout).toMatch(/copy (SUID|plain)\n$/);
    expect(existsSync(join(ws, 'sh-copy'))).toBe(true);
    const entries = modesBelow(ws);
    expect(entries.map((e) => e.path)).toEqual(expect.arrayContaining([join(ws, 'sh-copy'), join(ws, 'planted-suid'), join(ws, 'shared', 'inner')]));
    for (const e of entries) {
      expect(e.mode & 0o6000, e.path).toBe(0);
      expect(e.mode & 0o022, e.path).toBe(0);
    }
    // The root is the gate for other users: nothing of group/world is left on it.
    expect(lstatSync(ws).mode & 0o7077).toBe(0);
    // Below it, read and traverse bits stay: the jail uid reaches operator-provided directories through them.
    expect(lstatSync(join(ws, 'shared')).mode & 0o7777).toBe(0o755);
    expect(lstatSync(outside).mode & 0o7777).toBe(0o4777);
  });
});

describe('the post-run strip keeps the workspace usable', () => {
  it('an operator-provided 0755 directory stays readable by the jail run after run (control: the first run reads it)', () => {
    const h = makeHome();
    const ws = h.workspace();
    // As root these are root-owned: the jail uid reaches them only through their "other" bits.
    mkdirSync(join(ws, 'notes'), { mode: 0o755 });
    chmodSync(join(ws, 'notes'), 0o755);
    writeFileSync(join(ws, 'notes', 'todo.md'), 'TODO: one\n', { mode: 0o644 });
    const script = h.script('read-notes.mjs', `import { comis_tools } from './comis_tools.js';\nconst r = await comis_tools.read({ path: 'notes/todo.md' });\nconsole.log(r.content.trim());`);
    const first = h.run(['orchestrate', script]);
    expect(first.stdout, first.stderr).toBe('TODO: one\n');
    expect(lstatSync(join(ws, 'notes')).mode & 0o777).toBe(0o755);
    const second = h.run(['orchestrate', script]);
    expect(second.stdout, second.stderr).toBe('TODO: one\n');
  });
});

describe('cleanup under a symlink swap', () => {
  // The jail uid (as root: an unprivileged uid of our choosing; otherwise ourselves) owns the tree
  // being removed and races the cleanup, exchanging a directory with a link to a canary outside.
  const RACER_UID = 2_900_017;
  // Enough files that one race in two or so reaches the canary through rmSync (measured: 20-60%).
  const FILES = 1500;
  const RACER = `
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
os.chdir(sys.argv[1])
end = time.time() + float(sys.argv[2])
open('started', 'w').close()
while time.time() < end:
    if libc.renameat2(-100, b'd', -100, b'l', 2) != 0:
        try:
            if not os.path.lexists('l'): os.symlink(sys.argv[3], 'l')
            if not os.path.lexists('d'): os.mkdir('d')
        except OSError:
            pass
`;

  function setup(): { base: string; victim: string; canary: string; count: () => number; race: () => Promise<() => Promise<void>> } {
    const base = tempDir('comis-swap-');
    chmodSync(base, 0o711);
    const canary = join(base, 'canary'); // ours (root's as root), outside every tree the cleanup owns
    mkdirSync(canary, { mode: 0o755 });
    for (let i = 0; i < FILES; i++) writeFileSync(join(canary, `f${i}`), 'canary');
    const victim = join(base, 'victim');
    mkdirSync(join(victim, 'd'), { recursive: true });
    for (let i = 0; i < FILES; i++) writeFileSync(join(victim, 'd', `f${i}`), 'junk');
    symlinkSync(canary, join(victim, 'l'));
    if (root) for (const p of [victim, join(victim, 'd'), ...readdirSync(join(victim, 'd')).map((n) => join(victim, 'd', n))]) chownSync(p, RACER_UID, RACER_UID);
    if (root) spawnSync('chown', ['-h', `${RACER_UID}:${RACER_UID}`, join(victim, 'l')]);
    const race = async (): Promise<() => Promise<void>> => {
      const cmd = root ? ['setpriv', `--reuid=${RACER_UID}`, `--regid=${RACER_UID}`, '--clear-groups', '/usr/bin/python3'] : ['/usr/bin/python3'];
      const racer = spawn(cmd[0]!, [...cmd.slice(1), '-c', RACER, victim, '30', canary], { stdio: 'ignore' });
      const gone = new Promise((r) => racer.on('exit', r));
      await until('the racer', () => existsSync(join(victim, 'started')));
      return async () => {
        racer.kill('SIGKILL');
        await gone;
      };
    };
    return { base, victim, canary, count: () => readdirSync(canary).length, race };
  }

  it('removeTree never deletes through a directory swapped for a link; a naive rmSync does', { timeout: 180_000 }, async () => {
    // Positive control: Node's recursive rmSync (path-based) follows the swapped link into the canary.
    // Up to 30 tries, stopping at the first that reaches it: one try does 20-60% of the time on a
    // quiet machine, less under a full suite's parallel load (10 tries once all missed in CI).
    let controlWon = false;
    for (let attempt = 0; attempt < 30 && !controlWon; attempt++) {
      const s = setup();
      const stop = await s.race();
      try {
        rmSync(s.victim, { recursive: true, force: true });
      } catch {
        /* the race may also make it fail */
      }
      await stop();
      controlWon = s.count() < FILES;
      await removeTempDir(s.base); // at once, not after the test: up to 38 trees of 3,000 files, and a killed run would keep them all
    }
    expect(controlWon, 'the swap race never reached the canary through rmSync').toBe(true);

    // As many tries as make a path-based remove lose almost surely (a mutation back to rmSync fails here).
    for (let attempt = 0; attempt < 8; attempt++) {
      const s = setup();
      const stop = await s.race();
      try {
        await removeTree(s.victim);
      } catch {
        /* it may give up while the racer keeps refilling the tree; it must never reach out */
      }
      await stop();
      expect(s.count()).toBe(FILES);
      await removeTree(s.victim);
      expect(existsSync(s.victim)).toBe(false);
      expect(s.count()).toBe(FILES);
      await removeTempDir(s.base);
    }
  });
});

describe('stale run directories', () => {
  it('after a SIGKILL of comis, the next run sweeps its run dir (and only dirs of dead processes)', async () => {
    const h = makeHome();
    const ws = h.workspace();
    const run = startComis(h, ['orchestrate', h.script('hang.mjs', `import { writeFileSync } from 'node:fs';\nwriteFileSync('/workspace/ready', '');\nsetInterval(() => {}, 1000);`), '--timeout-ms', '90000']);
    await until('the run to start', () => existsSync(join(ws, 'ready')));
    const runs = join(h.home, 'runs');
    run.child.kill('SIGKILL');
    expect((await run.done).signal).toBe('SIGKILL');
    // Positive control: the SIGKILLed process left its run dir behind.
    const [stale] = readdirSync(runs);
    expect(stale).toMatch(new RegExp(`^${run.child.pid}-\\d+-r-`));
    // A live process's dir stays; a live pid with another start time (pid reuse) is stale.
    const live = `${process.pid}-${readProcStat(process.pid)!.startTime}-r_live`;
    const reused = `${process.pid}-1-r_reused`;
    mkdirSync(join(runs, live));
    mkdirSync(join(runs, reused, 'results'), { recursive: true });
    const next = h.run(['orchestrate', h.script('ok.mjs', `console.log('ok');`)]);
    expect(next.stdout).toBe('ok\n');
    expect(readdirSync(runs).sort()).toEqual([live]);
  });
});

describe('workspace quota (on by default)', () => {
  const config = (mb: number, inodes: number): string => `agents:\n  default:\n    autonomy:\n      limits:\n        workspaceMb: ${mb}\n        workspaceInodes: ${inodes}\n`;
  const orchestrate = (h: Home, name: string, code: string): { status: number | null; body: any } => {
    // The post-run strip walks every entry the script left (60,000 directories: ~13 s alone, several
    // times that beside the rest of the suite): the command gets the test's whole budget, not 120 s.
    const r = h.run(['orchestrate', h.script(name, code), '--json', '--timeout-ms', '60000'], { timeoutMs: 140_000 });
    // Not root, a directory the script left at 000 would stop the temp-dir cleanup.
    const hide = join(h.home, 'workspaces', 'default', 'hide');
    if (existsSync(hide)) chmodSync(hide, 0o700);
    return { status: r.status, body: parseJson(r.stdout) };
  };
  const killedByQuota = (body: any): void => {
    expect(body.result).toMatchObject({ outcome: 'failure', failureClass: 'nonzero_exit', exitCode: 137 });
    expect(body.result.stderrTail).toContain('workspaceMb');
    expect(body.result.stdout).not.toContain('finished');
  };

  const MANY_FILES = `import { writeFileSync } from 'node:fs';\nconst mb = Buffer.alloc(1 << 20, 1);\nfor (let i = 0; i < 48; i++) { writeFileSync('f' + i, mb); await new Promise((r) => setTimeout(r, 20)); }\nconsole.log('wrote');\nawait new Promise((r) => setTimeout(r, 1500));\nconsole.log('finished');`;
  const MANY_DIRS = `import { mkdirSync } from 'node:fs';\nfor (let i = 0; i < 60000; i++) mkdirSync('d' + i);\nconsole.log('made');\nawait new Promise((r) => setTimeout(r, 1500));\nconsole.log('finished');`;
  // Bytes in a directory nobody but root may list, from its birth, then closed entirely.
  const HIDDEN = `import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';\nmkdirSync('hide', { mode: 0o300 });\nchmodSync('hide', 0o300);\nconst mb = Buffer.alloc(1 << 20, 1);\nfor (let i = 0; i < 24; i++) writeFileSync('hide/f' + i, mb);\nchmodSync('hide', 0);\nconsole.log('hidden');\nawait new Promise((r) => setTimeout(r, 1500));\nchmodSync('hide', 0o700);\nconsole.log('finished');`;

  it('writing past workspaceMb through many files kills the run; a large quota lets it finish', () => {
    const small = orchestrate(makeHome(config(16, 100_000)), 'many.mjs', MANY_FILES);
    expect(small.status).toBe(1);
    killedByQuota(small.body);
    const large = orchestrate(makeHome(config(1024, 100_000)), 'many.mjs', MANY_FILES);
    expect(large.body.result).toMatchObject({ outcome: 'success', stdout: 'wrote\nfinished\n' });
  });

  it('60,000 empty directories against workspaceInodes 1000 kill the run; the default quota lets it finish', () => {
    const homes = [makeHome(config(1024, 1000)), makeHome()];
    try {
      const small = orchestrate(homes[0]!, 'dirs.mjs', MANY_DIRS);
      killedByQuota(small.body);
      const large = orchestrate(homes[1]!, 'dirs.mjs', MANY_DIRS);
      expect(large.body.result, large.body.result?.stderrTail).toMatchObject({ outcome: 'success', stdout: 'made\nfinished\n' });
    } finally {
      for (const h of homes) rmSync(h.home, { recursive: true, force: true }); // within this test's time, not the hook's
    }
  }, 300_000);

  it('bytes in a chmod-000 directory still count', () => {
    const small = orchestrate(makeHome(config(8, 100_000)), 'hide.mjs', HIDDEN);
    killedByQuota(small.body);
    const large = orchestrate(makeHome(config(1024, 100_000)), 'hide.mjs', HIDDEN);
    if (root) {
      // Root reads every directory: under a large quota the same script finishes.
      expect(large.body.result).toMatchObject({ outcome: 'success', stdout: 'hidden\nfinished\n' });
    } else {
      // Not root, a directory comis cannot read is a violation of its own, whatever the quota...
      killedByQuota(large.body);
      // ...and the same bytes in plain sight finish under it (the control).
      const plain = orchestrate(
        makeHome(config(1024, 100_000)),
        'plain.mjs',
        HIDDEN.replaceAll("chmodSync('hide', 0)", "chmodSync('hide', 0o700)").replaceAll('mode: 0o300', 'mode: 0o700').replaceAll("chmodSync('hide', 0o300)", "chmodSync('hide', 0o700)"),
      );
      expect(plain.body.result).toMatchObject({ outcome: 'success', stdout: 'hidden\nfinished\n' });
    }
  });
});
