/**
 * The jail uid range and skip rules (temp id files injected: real files, no
 * mocks) and the store registry (real SQLite, real concurrent processes).
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { ComisError } from '../../src/lib/errors.js';
import { DEFAULT_JAIL_UID_RANGE, HASHED_JAIL_UID_RANGE, checkJailUidRange, hashJailUid, isReservedId, jailUidPolicy, readReservedIds, UID_SCAN_REUSE_MS, type HostIdSources } from '../../src/lib/jail/uid-registry.js';
import { lookupJailUid, registerJailUid, USED_AT_GRANULARITY_MS } from '../../src/lib/store/jail-uids.js';
import { openStore } from '../../src/lib/store/store.js';
import { repoRoot } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp.js';

function idFiles(files: Partial<Record<'subuid' | 'subgid' | 'passwd' | 'group', string>>, nss?: HostIdSources['nssHasId']): HostIdSources {
  const dir = tempDir('comis-ids-');
  const out = { subuid: join(dir, 'subuid'), subgid: join(dir, 'subgid'), passwd: join(dir, 'passwd'), group: join(dir, 'group'), nssHasId: nss ?? (() => false) };
  for (const k of ['subuid', 'subgid', 'passwd', 'group'] as const) writeFileSync(out[k], files[k] ?? '');
  return out;
}

async function runsAs(pid: number, uid: number): Promise<boolean> {
  try {
    return (await readFile(`/proc/${pid}/status`, 'utf8')).includes(`\nUid:\t${uid}\t`);
  } catch {
    return false;
  }
}

describe('reserved ids', () => {
  it('merges every subuid/subgid grant, passwd uid and gid, and group gid; ignores comments and junk', () => {
    const src = idFiles({
      subuid: 'alice:100000:65536\n# bob:1:2\nbob:165536:65536\njunk\ncarol:x:5\n',
      subgid: 'alice:300000:10\n',
      passwd: 'root:x:0:0::/root:/bin/sh\nalice:x:1000:1001::/home/alice:/bin/sh\n',
      group: 'wheel:x:10:\nbig:x:4000000000:\n',
    });
    expect(readReservedIds(src)).toEqual([
      { min: 0, max: 0 },
      { min: 10, max: 10 },
      { min: 1000, max: 1001 },
      { min: 100000, max: 231071 },
      { min: 300000, max: 300009 },
      { min: 4000000000, max: 4000000000 },
    ]);
  });

  it('missing files grant nothing', () => {
    const dir = tempDir();
    expect(readReservedIds({ subuid: join(dir, 'a'), subgid: join(dir, 'b'), passwd: join(dir, 'c'), group: join(dir, 'd') })).toEqual([{ min: 0, max: 0 }]);
  });

  it('isReservedId is exact at the edges', () => {
    const r = [
      { min: 5, max: 9 },
      { min: 20, max: 20 },
    ];
    expect([4, 5, 9, 10, 19, 20, 21].map((id) => isReservedId(id, r))).toEqual([false, true, true, false, false, true, false]);
  });
});

describe('jail uid policy', () => {
  it('picks the lowest id of the range, skipping grants, accounts, groups and taken uids', () => {
    const min = DEFAULT_JAIL_UID_RANGE.min;
    const src = idFiles({
      subuid: `big:${min}:100\n`, // a grant right at the start of the range
      subgid: `g:${min + 100}:5\n`,
      passwd: `svc:x:${min + 105}:${min + 106}::/:/bin/false\n`,
      group: `grp:x:${min + 107}:\n`,
    });
    const policy = jailUidPolicy(DEFAULT_JAIL_UID_RANGE, src);
    expect(policy.pick([], min)).toBe(min + 108);
    expect(policy.pick([min + 108, min + 109], min)).toBe(min + 110);
    // A random start wraps around: whatever it picks is usable.
    for (let i = 0; i < 50; i++) expect(policy.acceptable(policy.pick([])!)).toBe(true);
    for (const id of [min, min + 99, min + 100, min + 104, min + 105, min + 106, min + 107]) expect(policy.acceptable(id)).toBe(false);
    expect(policy.acceptable(min + 108)).toBe(true);
    expect(policy.acceptable(min - 1)).toBe(false); // outside the range
  });

  it('skips an id only the name service knows (getent), and returns undefined when the range is used up', () => {
    const policy = jailUidPolicy(
      { min: 70_000, max: 70_003 },
      idFiles({}, (db, id) => db === 'passwd' && id === 70_000),
    );
    expect(policy.pick([], 70_000)).toBe(70_001);
    expect(policy.pick([70_001, 70_002, 70_003])).toBeUndefined();
    expect(policy.pick([70_001, 70_002], 70_003)).toBe(70_003);
    expect(policy.pick([70_002, 70_003], 70_003)).toBe(70_001); // wrapped
  });

  it('never picks a uid some process runs as now (a jail of another $COMIS_HOME)', () => {
    const policy = jailUidPolicy({ min: 70_000, max: 70_002 }, idFiles({}), { uidInUse: (uid) => uid !== 70_002 });
    for (let i = 0; i < 20; i++) expect(policy.pick([])).toBe(70_002);
    const mine = process.getuid!();
    expect(jailUidPolicy({ min: 65_536, max: 2 ** 31 - 2 }, idFiles({})).acceptable(mine) || mine < 65_536).toBe(true); // the files, not the scan, decide acceptable()
  });

  it.skipIf(process.getuid?.() !== 0)('as root: skips a uid a real process runs as, seen by a /proc scan at most UID_SCAN_REUSE_MS old', async () => {
    const uid = 0x7bff_f000 + (process.pid % 0x800); // in the default range, unlikely to be anyone's
    const range = { min: uid, max: uid + 1 };
    // Positive control: nothing runs as it, so it is picked (this also takes the scan the next pick may reuse).
    expect(jailUidPolicy(range, idFiles({})).pick([], uid)).toBe(uid);
    const proc = spawn('setpriv', [`--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', 'sleep', '30'], { stdio: 'ignore' });
    try {
      for (let i = 0; i < 100 && !(await runsAs(proc.pid!, uid)); i++) await new Promise((r) => setTimeout(r, 20));
      // A scan taken before the process started may still answer; one taken after the window must see it.
      await new Promise((r) => setTimeout(r, UID_SCAN_REUSE_MS + 50));
      expect(jailUidPolicy(range, idFiles({})).pick([], uid)).toBe(uid + 1);
    } finally {
      proc.kill('SIGKILL');
    }
  });

  it('a range covered by one grant has no usable uid', () => {
    const policy = jailUidPolicy({ min: 100_000, max: 165_535 }, idFiles({ subuid: 'alice:100000:65536\n' }));
    expect(policy.pick([])).toBeUndefined();
  });

  it('refuses a range below 65536, inverted or past 2^31-2', () => {
    for (const r of [
      { min: 1000, max: 70_000 },
      { min: 80_000, max: 70_000 },
      { min: 70_000, max: 2 ** 31 },
    ]) {
      expect(() => checkJailUidRange(r)).toThrow(ComisError);
    }
    expect(checkJailUidRange({ min: 70_000, max: 70_000 })).toEqual({ min: 70_000, max: 70_000 });
  });

  it('the hashed fallback is stable, lies in its own range, and moves past a grant that covers it', () => {
    const path = '/srv/some/workspace';
    const free = hashJailUid(path, idFiles({}));
    expect(hashJailUid(path, idFiles({}))).toBe(free);
    expect(free).toBeGreaterThanOrEqual(HASHED_JAIL_UID_RANGE.min);
    expect(free).toBeLessThanOrEqual(HASHED_JAIL_UID_RANGE.max);
    expect(HASHED_JAIL_UID_RANGE.min).toBeGreaterThan(DEFAULT_JAIL_UID_RANGE.max); // never a registry uid
    const moved = hashJailUid(path, idFiles({ subuid: `x:${free - 10}:1000\n` }));
    expect(moved).toBe(free - 10 + 1000);
  });
});

describe('jail uid registry (real SQLite)', () => {
  const policy = (src = idFiles({})) => jailUidPolicy({ min: 70_000, max: 70_999 }, src);

  it('is stable per workspace and unique between workspaces', () => {
    const store = openStore({ home: tempDir() });
    try {
      const p = policy();
      const a = registerJailUid(store.db, '/ws/a', p);
      const b = registerJailUid(store.db, '/ws/b', p);
      expect(p.acceptable(a) && p.acceptable(b)).toBe(true);
      expect(b).not.toBe(a);
      expect(registerJailUid(store.db, '/ws/a', p)).toBe(a);
      expect(lookupJailUid(store.db, '/ws/b')).toBe(b);
      // The UNIQUE column is the backstop: no row can take a uid another holds.
      expect(() => store.db.prepare('INSERT INTO jail_uids VALUES (?, ?, 0, 0)').run('/ws/c', a)).toThrow(/UNIQUE/);
    } finally {
      store.close();
    }
  });

  it('a run that only confirms its uid writes nothing unless the used_at mark is an hour old', () => {
    const store = openStore({ home: tempDir() });
    try {
      const p = policy();
      const t0 = 1_700_000_000_000;
      const uid = registerJailUid(store.db, '/ws/a', p, t0);
      const changes = (): number => (store.db.prepare('SELECT total_changes() AS n').get() as { n: number }).n;
      const usedAt = (): unknown => store.db.prepare('SELECT used_at FROM jail_uids WHERE workspace = ?').pluck().get('/ws/a');
      const before = changes();
      expect(registerJailUid(store.db, '/ws/a', p, t0 + USED_AT_GRANULARITY_MS - 1)).toBe(uid);
      expect(changes()).toBe(before);
      expect(usedAt()).toBe(t0);
      // Control: an hour later the mark moves.
      expect(registerJailUid(store.db, '/ws/a', p, t0 + USED_AT_GRANULARITY_MS)).toBe(uid);
      expect(changes()).toBe(before + 1);
      expect(usedAt()).toBe(t0 + USED_AT_GRANULARITY_MS);
    } finally {
      store.close();
    }
  });

  it('stays stable across store reopenings', () => {
    const home = tempDir();
    const first = openStore({ home });
    const uid = registerJailUid(first.db, '/ws/x', policy());
    first.close();
    const again = openStore({ home });
    try {
      expect(registerJailUid(again.db, '/ws/x', policy())).toBe(uid);
    } finally {
      again.close();
    }
  });

  it('moves a workspace off its uid once that uid is granted in /etc/subuid', () => {
    const store = openStore({ home: tempDir() });
    try {
      const uid = registerJailUid(store.db, '/ws/a', policy());
      const granted = policy(idFiles({ subuid: `mallory:${uid}:1\n` }));
      const moved = registerJailUid(store.db, '/ws/a', granted);
      expect(moved).not.toBe(uid);
      expect(granted.acceptable(moved)).toBe(true);
      expect(lookupJailUid(store.db, '/ws/a')).toBe(moved);
    } finally {
      store.close();
    }
  });

  it('says so when the range is exhausted', () => {
    const store = openStore({ home: tempDir() });
    try {
      const tiny = jailUidPolicy({ min: 70_000, max: 70_000 }, idFiles({}));
      registerJailUid(store.db, '/ws/a', tiny);
      expect(() => registerJailUid(store.db, '/ws/b', tiny)).toThrow(/No free jail uid/);
    } finally {
      store.close();
    }
  });

  it('concurrent processes allocating for different workspaces never share a uid', async () => {
    const home = tempDir();
    openStore({ home }).close(); // migrate once, so the racers contend on allocation only
    const dist = (p: string): string => join(repoRoot, 'dist', p);
    const script = `
      const { openStore } = await import(${JSON.stringify(dist('lib/store/store.js'))});
      const { registerJailUid } = await import(${JSON.stringify(dist('lib/store/jail-uids.js'))});
      const { jailUidPolicy } = await import(${JSON.stringify(dist('lib/jail/uid-registry.js'))});
      const store = openStore({ home: process.argv[1] });
      const policy = jailUidPolicy({ min: 70000, max: 70999 }, { subuid: '/nonexistent', subgid: '/nonexistent', passwd: '/nonexistent', group: '/nonexistent', nssHasId: () => false });
      const out = [];
      for (let i = 0; i < 10; i++) out.push(registerJailUid(store.db, '/ws/' + process.argv[2] + '-' + i, policy));
      store.close();
      process.stdout.write(JSON.stringify(out));
    `;
    const racers = Array.from(
      { length: 6 },
      (_, n) =>
        new Promise<number[]>((resolve, reject) => {
          const child = spawn(process.execPath, ['--input-type=module', '-e', script, home, String(n)], { stdio: ['ignore', 'pipe', 'pipe'] });
          let out = '';
          let err = '';
          child.stdout.on('data', (c) => (out += c));
          child.stderr.on('data', (c) => (err += c));
          child.on('close', (code) => (code === 0 ? resolve(JSON.parse(out) as number[]) : reject(new Error(err))));
        }),
    );
    const all = (await Promise.all(racers)).flat();
    expect(all).toHaveLength(60);
    expect(new Set(all).size).toBe(60);
  });
});
