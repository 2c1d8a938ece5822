import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, lstatSync, mkdirSync, realpathSync, statSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { findOnPath } from '../../src/lib/jail/host.js';
import { resolveInterpreter, resolveJq } from '../../src/lib/jail/interpreters.js';
import { prepareWritableDir, screenBindSource } from '../../src/lib/jail/mounts.js';
import { idleMeasurerCount, INLINE_WALK_ENTRIES, measureTree, measurementsOnThreads, watchQuota } from '../../src/lib/jail/quota.js';
import { tempDir } from '../helpers/temp.js';
import { expectInputInvalid, root } from './helpers.js';

const refusal = expectInputInvalid;

/** A fake home with the usual secrets (a fresh one per test: temp dirs are removed after each). */
function fakeHome(): { home: string; comisHome: string; ctx: { comisHome: string; home: string } } {
  const home = tempDir('comis-home-');
  for (const d of ['.ssh', '.aws', '.gnupg', '.config/gh', 'projects/data']) mkdirSync(join(home, d), { recursive: true });
  writeFileSync(join(home, '.netrc'), 'machine x');
  const comisHome = join(home, '.comis');
  mkdirSync(join(comisHome, 'workspaces', 'default'), { recursive: true });
  return { home, comisHome, ctx: { comisHome, home } };
}

describe('screenBindSource', () => {
  it('refuses system paths, secrets, comis state, what is inside them and their ancestors', () => {
    const { home, comisHome, ctx } = fakeHome();
    for (const p of [
      '/',
      '/etc',
      '/etc/ssl',
      '/proc',
      '/proc/self',
      '/sys',
      '/root',
      join(home, '.ssh'),
      join(home, '.aws'),
      join(home, '.gnupg'),
      join(home, '.config'),
      join(home, '.config/gh'),
      join(home, '.netrc'),
      comisHome,
      join(comisHome, 'workspaces', 'default'),
      home,
    ]) {
      if (!existsSync(p)) continue;
      const err = refusal(() => screenBindSource(p, ctx));
      expect(err.message).toContain(p);
    }
    expect(refusal(() => screenBindSource(home, ctx)).message).toMatch(/contains SSH keys/);
    expect(refusal(() => screenBindSource('/etc/ssl', ctx)).message).toMatch(/inside host configuration/);
  });

  it('refuses a symlink that resolves into a protected place, a relative path, a missing path and a socket', async () => {
    const { home, ctx } = fakeHome();
    const dir = tempDir();
    symlinkSync(join(home, '.ssh'), join(dir, 'innocent'));
    symlinkSync('/etc', join(dir, 'config'));
    expect(refusal(() => screenBindSource(join(dir, 'innocent'), ctx)).message).toMatch(/SSH keys/);
    expect(refusal(() => screenBindSource(join(dir, 'config'), ctx)).message).toMatch(/\/etc/);
    refusal(() => screenBindSource('relative/path', ctx));
    refusal(() => screenBindSource(join(dir, 'missing'), ctx));
    const sock = join(dir, 's.sock');
    const server = createServer();
    await new Promise<void>((r) => server.listen(sock, r));
    try {
      expect(refusal(() => screenBindSource(sock, ctx)).message).toMatch(/unix socket/);
    } finally {
      server.close();
    }
  });

  it('accepts a narrow data directory and returns its real path', () => {
    const { home, ctx } = fakeHome();
    const dir = tempDir();
    symlinkSync(join(home, 'projects', 'data'), join(dir, 'link'));
    expect(screenBindSource(join(dir, 'link'), ctx)).toBe(realpathSync(join(home, 'projects', 'data')));
  });
});

describe('prepareWritableDir', () => {
  it('refuses a symlink or a file', () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'real'));
    symlinkSync(join(dir, 'real'), join(dir, 'link'));
    writeFileSync(join(dir, 'file'), '');
    refusal(() => prepareWritableDir(join(dir, 'link'), 250000));
    refusal(() => prepareWritableDir(join(dir, 'file'), 250000));
  });

  it.skipIf(!root)('as root, hands the directory itself (only) to the jail uid, mode 0700', () => {
    const dir = join(tempDir(), 'ws');
    mkdirSync(dir);
    writeFileSync(join(dir, 'kept'), '');
    expect(prepareWritableDir(dir, 250123)).toBe(realpathSync(dir));
    expect(statSync(dir)).toMatchObject({ uid: 250123, gid: 250123 });
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(statSync(join(dir, 'kept')).uid).toBe(0);
  });
});

describe('interpreters', () => {
  it('node is the real path of the running node, with the wasm flag when supported', () => {
    const n = resolveInterpreter('node');
    expect(n.hostPath).toBe(realpathSync(process.execPath));
    expect(n.jailPath).toBe(n.hostPath);
    expect(n.version).toBe(process.version);
    expect(n.args).toEqual(process.allowedNodeEnvironmentFlags.has('--disable-wasm-trap-handler') ? ['--disable-wasm-trap-handler'] : []);
  });

  it('python3 through a symlink chain resolves to the real binary; outside /usr its prefix is bound read-only', () => {
    const real = resolveInterpreter('python3');
    const dir = tempDir();
    symlinkSync(real.hostPath, join(dir, 'py-real'));
    symlinkSync(join(dir, 'py-real'), join(dir, 'python3'));
    const viaLink = resolveInterpreter('python3', { pathEnv: `${dir}:/usr/bin:/bin` });
    expect(viaLink.hostPath).toBe(real.hostPath);
    expect(lstatSync(viaLink.hostPath).isSymbolicLink()).toBe(false);
    if (viaLink.hostPath.startsWith('/usr/')) expect(viaLink.mounts).toEqual([]);
    else expect(viaLink.mounts).toEqual([{ kind: 'ro', source: expect.any(String), target: expect.any(String) }]);
    for (const m of viaLink.mounts) {
      expect(m.source).toBe(m.target);
      expect(viaLink.hostPath.startsWith(`${m.source}/`)).toBe(true);
    }
  });

  it('a venv python3 resolves to the base interpreter, not the venv', () => {
    const venv = join(tempDir(), 'venv');
    const py = findOnPath('python3')!;
    const made = spawnSync(py, ['-m', 'venv', '--without-pip', venv], { encoding: 'utf8', timeout: 60_000 });
    expect(made.status, made.stderr).toBe(0);
    const v = resolveInterpreter('python3', { pathEnv: `${join(venv, 'bin')}:/usr/bin:/bin` });
    expect(v.hostPath.startsWith(venv)).toBe(false);
    expect(v.hostPath).toBe(resolveInterpreter('python3').hostPath);
  });

  it('no python3 on PATH is INTERPRETER_MISSING with the install hint, never a fallback', () => {
    try {
      resolveInterpreter('python3', { pathEnv: tempDir() });
      throw new Error('expected INTERPRETER_MISSING');
    } catch (err) {
      expect(err).toMatchObject({ code: 'INTERPRETER_MISSING', hint: 'apt-get install python3' });
    }
    expect(() => resolveJq({ pathEnv: tempDir() })).toThrow(expect.objectContaining({ code: 'INTERPRETER_MISSING', hint: 'apt-get install jq' }));
  });

  it('jq resolves to its real path and version', () => {
    const jq = resolveJq();
    expect(jq.hostPath).toBe(realpathSync(findOnPath('jq')!));
    expect(jq.version).toMatch(/^jq-/);
  });
});

describe('measureTree (writable quota)', () => {
  it('counts allocated blocks (not apparent size) and every entry, never follows symlinks', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'sparse'), '');
    truncateSync(join(dir, 'sparse'), 10 * 1024 * 1024); // 10 MiB apparent, nothing allocated
    writeFileSync(join(dir, 'real'), Buffer.alloc(2 * 1024 * 1024, 1));
    for (let i = 0; i < 10; i++) writeFileSync(join(dir, `empty${i}`), '');
    symlinkSync('/usr', join(dir, 'to-usr'));
    mkdirSync(join(dir, 'sub'));
    chmodSync(join(dir, 'sub'), 0o755);
    const u = await measureTree(dir);
    expect(u.entries).toBe(14);
    expect(u.bytes).toBeGreaterThanOrEqual(2 * 1024 * 1024);
    expect(u.bytes).toBeLessThan(3 * 1024 * 1024);
    expect(u.over).toBe(false);
    expect(await measureTree(dir, { maxBytes: 1024 * 1024 })).toMatchObject({ over: true, violation: 'bytes' });
    expect(await measureTree(dir, { maxBytes: 64 * 1024 * 1024, maxEntries: 5 })).toMatchObject({ over: true, violation: 'entries' });
  });

  it('measuring threads are reused across runs of a process (bounded idle pool), and still measure right', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'f'), Buffer.alloc(64 * 1024, 1));
    // Two runs at once take two threads; both go back to the pool when they end.
    // inlineEntries 0: every check walks on a thread (a short run's small tree would be walked in place).
    const a = watchQuota({ hostPath: dir, maxBytes: 1024 * 1024 }, () => undefined, 60_000, { inlineEntries: 0 });
    const b = watchQuota({ hostPath: dir, maxBytes: 32 * 1024 }, () => undefined, 60_000, { inlineEntries: 0 });
    expect(await a.check()).toBe(false);
    expect(await b.check()).toBe(true);
    a.stop();
    b.stop();
    await new Promise((r) => setTimeout(r, 1_100));
    expect(idleMeasurerCount()).toBe(2);
    // The next runs take them (none is started) and get the same answers.
    const c = watchQuota({ hostPath: dir, maxBytes: 1024 * 1024, maxEntries: 1 }, () => undefined, 60_000, { inlineEntries: 0 });
    expect(await c.check()).toBe(false);
    expect(idleMeasurerCount()).toBe(1);
    writeFileSync(join(dir, 'g'), '');
    expect(await c.check()).toBe(true);
    c.stop();
    expect(await measureTree(dir)).toMatchObject({ entries: 2, over: false });
    expect(idleMeasurerCount()).toBeLessThanOrEqual(2);
  });

  it('a final check walks a small tree in place and starts no thread; the answers are those of a thread', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'sparse'), '');
    truncateSync(join(dir, 'sparse'), 10 * 1024 * 1024);
    writeFileSync(join(dir, 'real'), Buffer.alloc(2 * 1024 * 1024, 1));
    symlinkSync('/usr', join(dir, 'to-usr')); // not followed in place either: /usr would be far over both limits
    mkdirSync(join(dir, 'sub'));
    writeFileSync(join(dir, 'sub', 'f'), 'x');
    const limits = [{ maxBytes: 64 * 1024 * 1024 }, { maxBytes: 1024 * 1024 }, { maxBytes: 64 * 1024 * 1024, maxEntries: 4 }, { maxBytes: 64 * 1024 * 1024, maxEntries: 5 }];
    const inPlace: boolean[] = [];
    const started = measurementsOnThreads();
    for (const l of limits) {
      const fired: unknown[] = [];
      const w = watchQuota({ hostPath: dir, ...l }, (u) => fired.push(u), 60_000);
      inPlace.push(await w.check());
      w.stop();
      expect(fired.length).toBe(inPlace.at(-1) ? 1 : 0);
    }
    expect(measurementsOnThreads()).toBe(started);
    // Control: the same checks on a measuring thread give the same verdicts.
    const onThread: boolean[] = [];
    for (const l of limits) {
      const w = watchQuota({ hostPath: dir, ...l }, () => undefined, 60_000, { inlineEntries: 0 });
      onThread.push(await w.check());
      w.stop();
    }
    expect(onThread).toEqual([false, true, true, false]);
    expect(inPlace).toEqual(onThread);
  });

  it('a tree larger than the in-place budget is measured whole on a thread (the budget is never taken for the limit)', async () => {
    const dir = tempDir();
    for (let i = 0; i < INLINE_WALK_ENTRIES + 10; i++) writeFileSync(join(dir, `f${i}`), '');
    const started = measurementsOnThreads();
    const under = watchQuota({ hostPath: dir, maxBytes: 64 * 1024 * 1024, maxEntries: INLINE_WALK_ENTRIES + 20 }, () => undefined, 60_000);
    expect(await under.check()).toBe(false);
    under.stop();
    const over = watchQuota({ hostPath: dir, maxBytes: 64 * 1024 * 1024, maxEntries: INLINE_WALK_ENTRIES + 5 }, () => undefined, 60_000);
    expect(await over.check()).toBe(true);
    over.stop();
    // Over the limit inside the budget: decided in place.
    const small = watchQuota({ hostPath: dir, maxBytes: 64 * 1024 * 1024, maxEntries: 3 }, () => undefined, 60_000);
    expect(await small.check()).toBe(true);
    small.stop();
    // The first two on a thread (an idle one an earlier test left in the pool counts: a thread is a thread), the third in place.
    expect(measurementsOnThreads()).toBe(started + 2);
  });

  it('a run still going at the first poll takes a thread then, and the poll fires the watchdog', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'f'), Buffer.alloc(64 * 1024, 1));
    const fired = await new Promise<unknown>((resolve) => {
      const w = watchQuota(
        { hostPath: dir, maxBytes: 16 * 1024 },
        (u) => {
          w.stop();
          resolve(u);
        },
        20,
      );
    });
    expect(fired).toMatchObject({ over: true, violation: 'bytes' });
  });
});
