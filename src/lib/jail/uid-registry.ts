/**
 * Which host uids a jail may run as (when comis is root): the range and the
 * skip rules. The registry itself — one uid per workspace, kept in the store
 * — is composed by `orchestrate` (`src/lib/orchestrate/workspace.ts`); the
 * jail knows nothing of the store, so this module is pure policy over files.
 *
 * A jail uid must belong to nobody else: not to an account (passwd), not to
 * a group number (the jail's gid is the same number), and not to any range
 * granted in `/etc/subuid` or `/etc/subgid` — a user holding such a grant can
 * become that uid with `newuidmap` and then signal, ptrace or read what the
 * jail owns.
 */
import { spawnSync } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { readFileSync } from 'node:fs';

import { ComisError } from '../errors.js';
import { listPids, readUidAndThreads } from './host.js';

/** An inclusive range of ids. */
export interface IdRange {
  min: number;
  max: number;
}

/**
 * The default jail uid range of the registry: 1879048192-2080374783
 * (0x70000000-0x7BFFFFFF), with {@link HASHED_JAIL_UID_RANGE} above it.
 *
 * Why there: systemd's UID/GID allocation map (docs/UIDS-GIDS.md) marks
 * 1879048192-2147352575 unused. Below it sit regular users (1000-60000),
 * DynamicUser, nobody, and 524288-1879048191 for systemd-nspawn containers;
 * `useradd` grants subuid blocks counting up from 100000 in 65536-id steps,
 * so it would take ~28,000 users to reach it (and any grant that does is
 * skipped). Above it sit the foreign-uid range of systemd-mountfsd
 * (2147352576-2147418111) and 2^31 and up, which tools that keep uids in a
 * signed int mishandle. 200 million ids: no workspace count exhausts it.
 */
export const DEFAULT_JAIL_UID_RANGE: Readonly<IdRange> = Object.freeze({ min: 0x7000_0000, max: 0x7bff_ffff });

/**
 * Where {@link hashJailUid} lands jails that have no registry entry (the
 * probe's scratch workspace, direct `spawnJail` calls): disjoint from the
 * default registry range, so such a jail never shares a registered uid.
 */
export const HASHED_JAIL_UID_RANGE: Readonly<IdRange> = Object.freeze({ min: 0x7c00_0000, max: 0x7ffd_ffff });

/** Lowest id a jail range may start at: below it live system and ordinary accounts. */
export const MIN_JAIL_UID_RANGE_START = 65_536;

/** Where the host's id facts come from; tests point them at temp files. */
export interface HostIdSources {
  subuid: string;
  subgid: string;
  passwd: string;
  group: string;
  /**
   * Asks the name service (LDAP, sssd, systemd-userdb…) whether a uid or gid
   * exists, for the ids the files do not list. Default: `getent passwd|group ID`.
   */
  nssHasId?: (db: 'passwd' | 'group', id: number) => boolean;
}

export const DEFAULT_HOST_ID_SOURCES: Readonly<HostIdSources> = Object.freeze({
  subuid: '/etc/subuid',
  subgid: '/etc/subgid',
  passwd: '/etc/passwd',
  group: '/etc/group',
});

function readLines(path: string): string[] {
  try {
    return readFileSync(path, 'utf8').split('\n');
  } catch (err) {
    // A missing file grants nothing; an unreadable one might grant anything.
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new ComisError('IO_ERROR', `Cannot read ${path} to choose a jail uid: ${(err as Error).message}.`, {
      hint: 'comis must read the id databases to avoid uids that belong to someone; check the file is readable.',
    });
  }
}

/**
 * Every id the jail must never run as, as sorted, merged inclusive ranges:
 * each `/etc/subuid` and `/etc/subgid` grant (`name:start:count`, any user),
 * each uid and gid in the passwd file and each gid in the group file, and 0.
 */
export function readReservedIds(sources: HostIdSources = DEFAULT_HOST_ID_SOURCES): IdRange[] {
  const out: IdRange[] = [{ min: 0, max: 0 }];
  for (const file of [sources.subuid, sources.subgid]) {
    for (const line of readLines(file)) {
      const f = line.trim().split(':');
      if (f.length < 3 || f[0]!.startsWith('#')) continue;
      const start = Number(f[1]);
      const count = Number(f[2]);
      if (!Number.isInteger(start) || !Number.isInteger(count) || start < 0 || count <= 0) continue;
      out.push({ min: start, max: start + count - 1 });
    }
  }
  for (const [file, fields] of [
    [sources.passwd, [2, 3]],
    [sources.group, [2]],
  ] as const) {
    for (const line of readLines(file)) {
      const f = line.split(':');
      if (f[0]?.startsWith('#')) continue;
      for (const i of fields) {
        const id = f[i] === undefined || f[i] === '' ? NaN : Number(f[i]);
        if (Number.isInteger(id) && id >= 0) out.push({ min: id, max: id });
      }
    }
  }
  return mergeRanges(out);
}

function rangeContaining(id: number, sorted: readonly IdRange[]): IdRange | undefined {
  let lo = 0;
  let hi = sorted.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const r = sorted[mid]!;
    if (id < r.min) hi = mid - 1;
    else if (id > r.max) lo = mid + 1;
    else return r;
  }
  return undefined;
}

function mergeRanges(ranges: IdRange[]): IdRange[] {
  const sorted = [...ranges].sort((a, b) => a.min - b.min);
  const merged: IdRange[] = [];
  for (const r of sorted) {
    const last = merged[merged.length - 1];
    if (last && r.min <= last.max + 1) last.max = Math.max(last.max, r.max);
    else merged.push({ ...r });
  }
  return merged;
}

/** True when `id` lies in one of the (merged, sorted) `reserved` ranges. */
export function isReservedId(id: number, reserved: readonly IdRange[]): boolean {
  return rangeContaining(id, reserved) !== undefined;
}

/** `getent DB ID` exits 0 when the name service knows the id; a missing getent knows nothing beyond the files. */
export function getentHasId(db: 'passwd' | 'group', id: number): boolean {
  const r = spawnSync('getent', [db, String(id)], { stdio: 'ignore', timeout: 5_000 });
  return r.status === 0;
}

/** Checks a configured range: integers, min ≤ max, above the ordinary ids, below 2^31 - 1. */
export function checkJailUidRange(range: IdRange, key = 'jailUidRange'): IdRange {
  const ok = Number.isInteger(range.min) && Number.isInteger(range.max) && range.min >= MIN_JAIL_UID_RANGE_START && range.max <= 0x7fff_fffe && range.min <= range.max;
  if (!ok) {
    throw new ComisError('CONFIG_INVALID', `${key} {min: ${range.min}, max: ${range.max}} is not a usable uid range.`, {
      hint: `Use integers with ${MIN_JAIL_UID_RANGE_START} <= min <= max <= 2147483646, or leave it unset (default ${DEFAULT_JAIL_UID_RANGE.min}-${DEFAULT_JAIL_UID_RANGE.max}).`,
    });
  }
  return range;
}

/**
 * The policy one allocation applies: `acceptable(uid)` says whether a uid
 * (say, the one a workspace already holds) may still be used; `pick(taken)`
 * returns an acceptable uid of the range that is not in `taken` and that no
 * process runs as right now, or undefined when none is left. It starts the
 * search at a random id (or at `start`, for a deterministic first fit) and
 * wraps around once.
 *
 * Why random: each `$COMIS_HOME` has its own store, so two homes on one host
 * (CI jobs, several operators) cannot see each other's rows; a sequential
 * first fit would hand every home the same first uid. Random starts in a
 * 200-million-id range make a cross-home clash improbable, and the
 * running-process check rules out the clash that would matter now.
 */
export interface JailUidPolicy {
  range: IdRange;
  acceptable(uid: number): boolean;
  pick(taken: Iterable<number>, start?: number): number | undefined;
}

export interface JailUidPolicyOptions {
  /** Is some process running as `uid` now? Default: a scan of /proc. */
  uidInUse?: (uid: number) => boolean;
}

/**
 * How long one scan of /proc answers "does any process run as this uid?". A coordinator allocates
 * a uid for each new child workspace, and a scan reads every process's status (~130 here, ~1 ms
 * of CPU a child); the answer was already only as fresh as the scan (another home's jail may take
 * the uid right after it), and this home's own uids are excluded through the registry, not the scan.
 */
export const UID_SCAN_REUSE_MS = 1_000;

let lastScan: { at: number; uids: Set<number> } | undefined;

/** The real uids of all processes now (one /proc scan), reused for {@link UID_SCAN_REUSE_MS}. */
function uidsRunningNow(): Set<number> {
  const now = Date.now();
  if (lastScan && now >= lastScan.at && now - lastScan.at < UID_SCAN_REUSE_MS) return lastScan.uids;
  const uids = new Set<number>();
  for (const pid of listPids()) {
    const info = readUidAndThreads(pid);
    if (info) uids.add(info.uid);
  }
  lastScan = { at: now, uids };
  return uids;
}

function uidRunsNow(uid: number): boolean {
  return uidsRunningNow().has(uid);
}

/**
 * Builds the allocation policy from the host's id databases as they are
 * now (read once per call: a grant added since the last run is honoured).
 */
export function jailUidPolicy(range: IdRange = DEFAULT_JAIL_UID_RANGE, sources: HostIdSources = DEFAULT_HOST_ID_SOURCES, options: JailUidPolicyOptions = {}): JailUidPolicy {
  checkJailUidRange(range);
  const reserved = readReservedIds(sources);
  const nss = sources.nssHasId ?? (sources === DEFAULT_HOST_ID_SOURCES ? getentHasId : () => false);
  const inUse = options.uidInUse ?? uidRunsNow;
  const acceptable = (uid: number): boolean => Number.isInteger(uid) && uid >= range.min && uid <= range.max && !isReservedId(uid, reserved) && !nss('passwd', uid) && !nss('group', uid);
  return {
    range,
    acceptable,
    pick(taken, start) {
      const blocked = mergeRanges([...reserved, ...[...taken].map((t) => ({ min: t, max: t }))]);
      const first = start === undefined ? randomInt(range.min, range.max + 1) : Math.min(range.max, Math.max(range.min, start));
      // First fit in [first, max], then in [min, first): jump over blocked ranges whole,
      // so the cost is the number of ranges, not of ids.
      for (const [from, to] of [
        [first, range.max],
        [range.min, first - 1],
      ] as const) {
        let candidate = from;
        for (;;) {
          for (let r = rangeContaining(candidate, blocked); r && candidate <= to; r = rangeContaining(candidate, blocked)) candidate = r.max + 1;
          if (candidate > to) break;
          if (acceptable(candidate) && !inUse(candidate)) return candidate;
          candidate++; // known to the name service, or running: skip it
        }
      }
      return undefined;
    },
  };
}

/**
 * FNV-1a of `path`, the old derivation's hash. Kept for {@link hashJailUid}
 * and so tests can show where the old `200000 + h mod 100000` landed.
 */
export function fnv1a(path: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < path.length; i++) h = Math.imul(h ^ path.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

/**
 * A uid for a jail that has no registry entry (the probe's scratch
 * workspace, a direct `spawnJail` call): hashed into {@link HASHED_JAIL_UID_RANGE},
 * then moved up past any reserved id. Never a subuid grant or an account;
 * unlike the registry it does not promise two paths different uids.
 */
export function hashJailUid(path: string, sources: HostIdSources = DEFAULT_HOST_ID_SOURCES): number {
  const range = HASHED_JAIL_UID_RANGE;
  // Deterministic: a caller may derive it twice for one jail (once to prepare, once to launch).
  const policy = jailUidPolicy(range, sources, { uidInUse: () => false });
  const start = range.min + (fnv1a(path) % (range.max - range.min + 1));
  const uid = policy.pick([], start);
  if (uid === undefined) throw new ComisError('INTERNAL', 'No usable jail uid in the hashed range.');
  return uid;
}
