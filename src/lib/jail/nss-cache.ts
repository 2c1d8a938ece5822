/**
 * The name-service answers of the jail uid policy, cached: as root, every run
 * re-checks that its workspace's registered uid is still nobody's, and the
 * name-service half of that check was two `getent` processes per run (the
 * largest cost of a run before its jail started).
 *
 * Only "this id is unknown" is cached, and only where the name service's
 * answer is a function of files whose identity (inode, size, mtime, ctime)
 * is recorded with it:
 * - `/etc/nsswitch.conf`'s `passwd` and `group` lines name only `files`
 *   (the answer is the files: `/etc/passwd`, `/etc/group`) and
 *   `systemd` (its userdb records: drop-in files in the userdb directories,
 *   whose listing is fingerprinted, and the DynamicUser, homed and container
 *   ranges, which lie outside {@link SYSTEMD_QUIET_RANGE});
 * - and for `systemd`, only ids inside {@link SYSTEMD_QUIET_RANGE}.
 * Any other source (LDAP, sssd, NIS, winbind…) can learn an account without
 * a local file changing: then nothing is cached and `getent` runs every time,
 * as before. A changed file, another nsswitch.conf or an entry over a day
 * old is a miss (asked afresh, then rewritten); a positive answer is never
 * cached (it only makes the policy skip that id).
 */
import { readdirSync, readFileSync } from 'node:fs';

import { readPrivateFile, writePrivateFileAtomic } from '../private-file.js';
import { getentHasId } from './uid-registry.js';
import { fileId } from './verdict-cache.js';

/** An "unknown id" answer is trusted this long at most, even with every file unchanged. */
export const NSS_CACHE_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * systemd's "unused" area of its uid map (docs/UIDS-GIDS.md): no DynamicUser,
 * homed or container (systemd-machined / nspawn) id is ever allocated there,
 * so within it nss-systemd answers only from userdb drop-in records.
 */
export const SYSTEMD_QUIET_RANGE = Object.freeze({ min: 0x7000_0000, max: 0x7ffd_ffff });

/** Where systemd-userdb looks for drop-in records and services (see userdb(1), nss-systemd(8)). */
export const USERDB_DIRS: readonly string[] = ['/etc/userdb', '/run/userdb', '/run/host/userdb', '/usr/local/lib/userdb', '/usr/lib/userdb', '/run/systemd/userdb'];

/** The files the name-service answers stand on (tests point them at temp files). */
export interface NssFiles {
  nsswitch: string;
  passwd: string;
  group: string;
  userdbDirs: readonly string[];
}

export const DEFAULT_NSS_FILES: Readonly<NssFiles> = Object.freeze({ nsswitch: '/etc/nsswitch.conf', passwd: '/etc/passwd', group: '/etc/group', userdbDirs: USERDB_DIRS });

/** `compat` is not here: its `+`/`-` lines pull in NIS. */
const FILE_SOURCES = new Set(['files']);
const ENTRY_VERSION = 1;

/**
 * The sources nsswitch.conf lists for `db` (status actions like `[NOTFOUND=return]` dropped),
 * or undefined when the file cannot be read. An absent line means glibc's default, which is
 * not only files on every system: treated as unknown.
 */
export function nssSources(nsswitchText: string, db: 'passwd' | 'group'): string[] | undefined {
  let sources: string[] | undefined;
  for (const raw of nsswitchText.split('\n')) {
    const line = raw.replace(/#.*/, '').trim();
    const m = /^([a-z_]+)\s*:\s*(.*)$/.exec(line);
    if (!m || m[1] !== db) continue;
    sources = m[2]!
      .replace(/\[[^\]]*\]/g, ' ')
      .split(/\s+/)
      .filter((s) => s !== '');
  }
  return sources;
}

/** Which ids a cached "unknown" may stand for, given nsswitch.conf: none, all, or only systemd's quiet range. */
function cacheableIds(nsswitchText: string): 'none' | 'all' | 'quiet' {
  let systemd = false;
  for (const db of ['passwd', 'group'] as const) {
    const sources = nssSources(nsswitchText, db);
    if (!sources || sources.length === 0) return 'none';
    for (const s of sources) {
      if (s === 'systemd') systemd = true;
      else if (!FILE_SOURCES.has(s)) return 'none';
    }
  }
  return systemd ? 'quiet' : 'all';
}

function emptyOrAbsent(dir: string): boolean {
  try {
    return readdirSync(dir).length === 0;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT';
  }
}

interface Entry {
  v: number;
  at: number;
  facts: string;
  unknown: { passwd: number[]; group: number[] };
}

/**
 * A `nssHasId` for {@link jailUidPolicy} that answers "unknown" from `cacheFile`
 * when it safely can and asks `ask` (default `getent`) otherwise; new "unknown"
 * answers are written back (0600, atomically) when the process is done asking.
 * `save()` writes them; a cache that cannot be written only costs the next run.
 */
export function cachedNssLookup(
  cacheFile: string,
  options: {
    files?: NssFiles;
    ask?: (db: 'passwd' | 'group', id: number) => boolean;
    now?: number;
    /** The passwd and group files the uid policy itself reads for reserved ids (default /etc/passwd, /etc/group). */
    policyFiles?: { passwd: string; group: string };
  } = {},
): { nssHasId: (db: 'passwd' | 'group', id: number) => boolean; save(): void } {
  const files = options.files ?? DEFAULT_NSS_FILES;
  const ask = options.ask ?? getentHasId;
  const now = options.now ?? Date.now();
  let nsswitch: string | undefined;
  try {
    nsswitch = readFileSync(files.nsswitch, 'utf8');
  } catch {
    nsswitch = undefined;
  }
  const mode = nsswitch === undefined ? 'none' : cacheableIds(nsswitch);
  if (mode === 'none') return { nssHasId: ask, save: () => undefined };
  const facts = JSON.stringify([mode, fileId(files.nsswitch), fileId(files.passwd), fileId(files.group), ...files.userdbDirs.map(fileId)]);
  const known = { passwd: new Set<number>(), group: new Set<number>() };
  let since = now;
  try {
    const entry = JSON.parse(readPrivateFile(cacheFile)) as Entry;
    if (entry?.v === ENTRY_VERSION && entry.facts === facts && typeof entry.at === 'number' && entry.at <= now && now - entry.at <= NSS_CACHE_TTL_MS) {
      since = entry.at; // answers added later do not extend the older ones' day
      for (const id of entry.unknown.passwd) if (Number.isInteger(id)) known.passwd.add(id);
      for (const id of entry.unknown.group) if (Number.isInteger(id)) known.group.add(id);
    }
  } catch {
    /* absent, foreign or corrupt: asked afresh */
  }
  const cacheable = (id: number): boolean => mode === 'all' || (id >= SYSTEMD_QUIET_RANGE.min && id <= SYSTEMD_QUIET_RANGE.max);
  // Nothing to ask at all: with only `files` the name service reads the very /etc/passwd and
  // /etc/group the policy reads itself (readReservedIds: every uid and gid of both), and
  // nss-systemd with no userdb record or service anywhere knows only root and nobody outside
  // the quiet range. A fresh id (each new workspace gets one) then costs no getent either.
  const policyFiles = options.policyFiles ?? { passwd: DEFAULT_NSS_FILES.passwd, group: DEFAULT_NSS_FILES.group };
  const silent = files.passwd === policyFiles.passwd && files.group === policyFiles.group && (mode === 'all' || files.userdbDirs.every(emptyOrAbsent));
  let dirty = false;
  return {
    nssHasId(db, id) {
      if (silent && cacheable(id)) return false;
      if (cacheable(id) && known[db].has(id)) return false;
      const has = ask(db, id);
      if (!has && cacheable(id)) {
        known[db].add(id);
        dirty = true;
      }
      return has;
    },
    save() {
      if (!dirty) return;
      dirty = false;
      const entry: Entry = { v: ENTRY_VERSION, at: since, facts, unknown: { passwd: [...known.passwd].slice(-64), group: [...known.group].slice(-64) } };
      try {
        writePrivateFileAtomic(cacheFile, JSON.stringify(entry));
      } catch {
        /* the next run asks getent again */
      }
    },
  };
}
