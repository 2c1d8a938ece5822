import { copyFileSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { fleet } from '../../src/lib/obs/fleet.js';
import { KEEP_DAYS, windowSums, windowSumsUncached } from '../../src/lib/store/fleet-rollup.js';
import { openStore, type Store } from '../../src/lib/store/store.js';
import { seedRun, type Call, type RunKind } from '../obs/seed.js';
import { tempDir } from '../helpers/temp.js';
import { prng } from '../helpers/prng.js';

const DAY = 86_400_000;
const HOUR = 3_600_000;
const NOW = Date.UTC(2025, 5, 20, 13, 37, 0);
const MIDNIGHT = Math.floor(NOW / DAY) * DAY;

const KINDS: RunKind[] = ['success', 'timeout', 'stdout_cap', 'nonzero_exit', 'deny', 'spawn_fail'];
const DENIES: Call[] = [
  ['web_fetch', 'orch:web', 'deny', 'capability_missing'],
  ['write', 'orch:write', 'deny', 'surface_disabled'],
  ['gateway', 'none', 'deny', 'denied_by_origin'],
  ['grep', 'none', 'deny', 'explicit_deny'],
  ['read', 'orch:read', 'allow'],
];

/** `n` runs spread over [from, to), some with refs, some with denies straddling midnight. */
function seed(s: Store, rand: () => number, n: number, from: number, to: number): void {
  s.db.transaction(() => {
    for (let i = 0; i < n; i++) {
      let startedAt = from + Math.floor(rand() * (to - from));
      const calls: Call[] = [];
      const k = Math.floor(rand() * 4);
      for (let c = 0; c < k; c++) calls.push(DENIES[Math.floor(rand() * DENIES.length)]!);
      // One run in five starts just before a midnight, so its audit rows land on two days.
      if (rand() < 0.2 && calls.length >= 2) startedAt = Math.floor(startedAt / DAY) * DAY + DAY - 11;
      const refs = rand() < 0.3 ? { count: 1 + Math.floor(rand() * 3), bytes: 1000 + Math.floor(rand() * 9000) } : undefined;
      seedRun(s.db, KINDS[Math.floor(rand() * KINDS.length)]!, {
        sessionKey: `s-${i % 17}`,
        startedAt,
        calls,
        ...(refs ? { refs, savings: { estSavedTokens: Math.floor(refs.bytes / 5) } } : {}),
      });
    }
  })();
}

const WINDOWS = ['90m', '24h', '36h', '3d', '7d', '2w', '30d', '400d'];

function expectSame(s: Store, file: string, now: number): void {
  for (const since of WINDOWS) {
    expect(fleet(s.db, { since, now, rollupFile: file }), `${since} at ${new Date(now).toISOString()}`).toEqual(fleet(s.db, { since, now }));
  }
}

describe('fleet rollup cache', () => {
  it('gives the report the tables give, for every window, and keeps giving it as runs are recorded and days close', () => {
    const home = tempDir();
    const s = openStore({ home });
    const file = join(home, 'cache', 'fleet-rollup.json');
    const rand = prng(0x51ed270b);
    seed(s, rand, 600, NOW - 40 * DAY, NOW);
    expectSame(s, file, NOW);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(home, 'cache')).mode & 0o777).toBe(0o700);
    // Runs recorded after the rollup, some of them on days it already holds (a long run recorded after midnight).
    seed(s, rand, 80, NOW - 3 * DAY, NOW);
    expectSame(s, file, NOW);
    // Time moves on: days close, new runs land on them.
    for (const later of [NOW + HOUR, NOW + DAY, NOW + 3 * DAY + 5 * HOUR]) {
      seed(s, rand, 40, later - 2 * DAY, later);
      expectSame(s, file, later);
    }
    s.close();
  });

  it('the rollup is read, not recomputed: a planted day count shows in the report (and only a real cache hit can do that)', () => {
    const home = tempDir();
    const s = openStore({ home });
    const file = join(home, 'cache', 'fleet-rollup.json');
    seed(s, prng(7), 200, NOW - 10 * DAY, NOW);
    const before = fleet(s.db, { since: '7d', now: NOW, rollupFile: file });
    const shape = JSON.parse(readFileSync(file, 'utf8'));
    const day = shape.days.find((d: [number, number[]]) => d[0] === Math.floor(MIDNIGHT / DAY) - 2);
    day[1][0] += 1000; // runs of that day
    writeFileSync(file, JSON.stringify(shape), { mode: 0o600 });
    expect(fleet(s.db, { since: '7d', now: NOW, rollupFile: file }).runCount).toBe(before.runCount + 1000);
    s.close();
  });

  it('a corrupt, foreign or stale cache is rebuilt, never trusted', () => {
    const home = tempDir();
    const s = openStore({ home });
    const file = join(home, 'cache', 'fleet-rollup.json');
    seed(s, prng(11), 200, NOW - 10 * DAY, NOW);
    const truth = fleet(s.db, { since: '30d', now: NOW });
    expect(fleet(s.db, { since: '30d', now: NOW, rollupFile: file })).toEqual(truth); // creates the cache
    for (const junk of ['', '{', 'null', '[]', '{"v":1}', JSON.stringify({ ...JSON.parse('{}'), v: 1, days: 'x' })]) {
      writeFileSync(file, junk);
      expect(fleet(s.db, { since: '30d', now: NOW, rollupFile: file }), junk).toEqual(truth);
    }
    // A name that fails the safe-name check in the file: the whole cache is refused.
    fleet(s.db, { since: '30d', now: NOW, rollupFile: file });
    const shape = JSON.parse(readFileSync(file, 'utf8'));
    const withDenies = shape.days.find((d: unknown[]) => (d[2] as unknown[]).length > 0);
    withDenies[2][0][0] = 'orch:web\u0000bad\u001b[31m\u0000capability_missing';
    withDenies[2][0][1] += 5000;
    writeFileSync(file, JSON.stringify(shape));
    expect(fleet(s.db, { since: '30d', now: NOW, rollupFile: file })).toEqual(truth);

    // The cache of another store (same path later replaced, or a copy) is not this store's.
    fleet(s.db, { since: '30d', now: NOW, rollupFile: file });
    const other = openStore({ home: tempDir() });
    seed(other, prng(12), 50, NOW - 10 * DAY, NOW);
    expect(fleet(other.db, { since: '30d', now: NOW, rollupFile: file })).toEqual(fleet(other.db, { since: '30d', now: NOW }));
    s.close();
    other.close();
  });

  it('a store swapped under the same path (the row at the recorded rowid changed) rebuilds the rollup', () => {
    const home = tempDir();
    const file = join(home, 'cache', 'fleet-rollup.json');
    let s = openStore({ home });
    seed(s, prng(21), 120, NOW - 10 * DAY, NOW);
    fleet(s.db, { since: '30d', now: NOW, rollupFile: file });
    s.close();
    // Another store of the same size, copied over this one's file: same path; the cache must not fit it.
    const twinHome = tempDir();
    const twin = openStore({ home: twinHome });
    seed(twin, prng(22), 120, NOW - 10 * DAY, NOW);
    twin.db.pragma('wal_checkpoint(TRUNCATE)');
    twin.close();
    copyFileSync(join(twinHome, 'comis.db'), join(home, 'comis.db'));
    s = openStore({ home });
    expect(fleet(s.db, { since: '30d', now: NOW, rollupFile: file })).toEqual(fleet(s.db, { since: '30d', now: NOW }));
    s.close();
  });

  it('random windows and clocks, forwards and backwards: the same sums as the tables', () => {
    const home = tempDir();
    const s = openStore({ home });
    const file = join(home, 'cache', 'fleet-rollup.json');
    const rand = prng(0x2545f491);
    seed(s, rand, 400, NOW - 20 * DAY, NOW + 2 * DAY);
    for (let i = 0; i < 40; i++) {
      const until = NOW - 5 * DAY + Math.floor(rand() * 7 * DAY);
      const since = until - Math.floor(rand() * 25 * DAY);
      expect(windowSums(s.db, since, until, file), `${since}..${until}`).toEqual(windowSumsUncached(s.db, since, until));
      if (i % 10 === 0) seed(s, rand, 20, until - 3 * DAY, until);
    }
    s.close();
  });

  it('windows older than the kept days read their older part from the tables', () => {
    const home = tempDir();
    const s = openStore({ home });
    const file = join(home, 'cache', 'fleet-rollup.json');
    seed(s, prng(31), 300, NOW - (KEEP_DAYS + 40) * DAY, NOW);
    const since = NOW - (KEEP_DAYS + 30) * DAY;
    expect(windowSums(s.db, since, NOW, file)).toEqual(windowSumsUncached(s.db, since, NOW));
    expect(fleet(s.db, { since: '2025-01-01', now: NOW, rollupFile: file })).toEqual(fleet(s.db, { since: '2025-01-01', now: NOW }));
    s.close();
  });
});
