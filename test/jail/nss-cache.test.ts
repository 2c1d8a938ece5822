/**
 * The cached name-service answers of the jail uid policy (src/lib/jail/nss-cache.ts):
 * an "unknown id" is answered from the cache only while every file it stands on is
 * unchanged, only for name services that answer from files, never for a known id.
 */
import { mkdirSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { cachedNssLookup, nssSources, NSS_CACHE_TTL_MS, SYSTEMD_QUIET_RANGE, type NssFiles } from '../../src/lib/jail/nss-cache.js';
import { jailUidPolicy } from '../../src/lib/jail/uid-registry.js';
import { tempDir } from '../helpers/temp.js';

function host(nsswitch: string): { files: NssFiles; cache: string; asked: string[]; ask: (db: 'passwd' | 'group', id: number) => boolean; known: Set<number> } {
  const dir = tempDir('comis-nss-');
  const files: NssFiles = { nsswitch: join(dir, 'nsswitch.conf'), passwd: join(dir, 'passwd'), group: join(dir, 'group'), userdbDirs: [join(dir, 'userdb')] };
  writeFileSync(files.nsswitch, nsswitch);
  writeFileSync(files.passwd, 'root:x:0:0::/root:/bin/sh\n');
  writeFileSync(files.group, 'root:x:0:\n');
  mkdirSync(files.userdbDirs[0]!);
  mkdirSync(join(dir, 'cache'), { mode: 0o700 });
  const asked: string[] = [];
  const known = new Set<number>();
  return {
    files,
    cache: join(dir, 'cache', 'jail-nss.json'),
    asked,
    known,
    ask: (db, id) => {
      asked.push(`${db}:${id}`);
      return known.has(id);
    },
  };
}

const ID = SYSTEMD_QUIET_RANGE.min + 42;

describe('cached name-service answers for the jail uid policy', () => {
  it('files only: an unknown id is asked once, then answered from the 0600 cache until a file it stands on changes', () => {
    const h = host('passwd: files\ngroup: files\n');
    const first = cachedNssLookup(h.cache, { files: h.files, ask: h.ask });
    expect(first.nssHasId('passwd', ID)).toBe(false);
    expect(first.nssHasId('group', ID)).toBe(false);
    first.save();
    expect(statSync(h.cache).mode & 0o777).toBe(0o600);
    expect(h.asked).toEqual([`passwd:${ID}`, `group:${ID}`]);
    // Control: the next process asks nobody.
    const second = cachedNssLookup(h.cache, { files: h.files, ask: h.ask });
    expect(second.nssHasId('passwd', ID)).toBe(false);
    expect(second.nssHasId('group', ID)).toBe(false);
    expect(h.asked).toHaveLength(2);
    // An account added to /etc/passwd (new size and times): asked again, and now known.
    writeFileSync(h.files.passwd, `root:x:0:0::/root:/bin/sh\nnewcomer:x:${ID}:${ID}::/home/n:/bin/sh\n`);
    h.known.add(ID);
    const third = cachedNssLookup(h.cache, { files: h.files, ask: h.ask });
    expect(third.nssHasId('passwd', ID)).toBe(true);
    expect(h.asked).toHaveLength(3);
  });

  it('a known id is never cached; a changed nsswitch.conf, userdb directory, an old or corrupt entry are misses', () => {
    const h = host('passwd: files systemd\ngroup: files [SUCCESS=merge] systemd\n');
    const a = cachedNssLookup(h.cache, { files: h.files, ask: h.ask, now: 1_000_000 });
    h.known.add(ID + 1);
    expect(a.nssHasId('passwd', ID + 1)).toBe(true);
    expect(a.nssHasId('passwd', ID)).toBe(false);
    a.save();
    const b = cachedNssLookup(h.cache, { files: h.files, ask: h.ask, now: 1_000_001 });
    expect(b.nssHasId('passwd', ID + 1)).toBe(true);
    expect(b.nssHasId('passwd', ID)).toBe(false);
    expect(h.asked).toEqual([`passwd:${ID + 1}`, `passwd:${ID}`, `passwd:${ID + 1}`]);
    // A day later: asked again.
    cachedNssLookup(h.cache, { files: h.files, ask: h.ask, now: 1_000_000 + NSS_CACHE_TTL_MS + 1 }).nssHasId('passwd', ID);
    expect(h.asked).toHaveLength(4);
    // A userdb drop-in record appears (the directory's mtime moves): asked again.
    writeFileSync(join(h.files.userdbDirs[0]!, 'x.user'), '{}');
    utimesSync(h.files.userdbDirs[0]!, new Date(), new Date(Date.now() + 5_000));
    cachedNssLookup(h.cache, { files: h.files, ask: h.ask, now: 1_000_002 }).nssHasId('passwd', ID);
    expect(h.asked).toHaveLength(5);
    // A corrupt entry: asked.
    writeFileSync(h.cache, '{not json', { mode: 0o600 });
    cachedNssLookup(h.cache, { files: h.files, ask: h.ask, now: 1_000_003 }).nssHasId('passwd', ID);
    expect(h.asked).toHaveLength(6);
  });

  it('with systemd, ids outside its quiet range are asked every time (DynamicUser, homed and container ranges)', () => {
    const h = host('passwd: files systemd\ngroup: files systemd\n');
    for (let i = 0; i < 2; i++) {
      const l = cachedNssLookup(h.cache, { files: h.files, ask: h.ask });
      l.nssHasId('passwd', 600_000);
      l.nssHasId('passwd', ID);
      l.save();
    }
    expect(h.asked).toEqual(['passwd:600000', `passwd:${ID}`, 'passwd:600000']);
  });

  it('a name service that can learn accounts without a file changing (ldap, sss, an absent line) is asked every time', () => {
    for (const conf of ['passwd: files ldap\ngroup: files ldap\n', 'passwd: sss files\ngroup: files\n', 'group: files\n', '']) {
      const h = host(conf);
      for (let i = 0; i < 2; i++) {
        const l = cachedNssLookup(h.cache, { files: h.files, ask: h.ask });
        l.nssHasId('passwd', ID);
        l.save();
      }
      expect(h.asked, conf).toHaveLength(2);
    }
  });

  it('nothing to ask: files only (the policy reads those very files), or systemd with no userdb record or service, within its quiet range', () => {
    for (const conf of ['passwd: files\ngroup: files\n', 'passwd: files systemd\ngroup: files systemd\n']) {
      const h = host(conf);
      const policyFiles = { passwd: h.files.passwd, group: h.files.group };
      const l = cachedNssLookup(h.cache, { files: h.files, ask: h.ask, policyFiles });
      expect(l.nssHasId('passwd', ID)).toBe(false);
      expect(l.nssHasId('group', ID + 7)).toBe(false);
      expect(h.asked, conf).toEqual([]);
      // Outside systemd's quiet range systemd may know the id: asked.
      l.nssHasId('passwd', 600_000);
      expect(h.asked).toEqual(conf.includes('systemd') ? ['passwd:600000'] : []);
      // Controls: a userdb record present (systemd), or a policy reading other files: asked.
      if (conf.includes('systemd')) {
        writeFileSync(join(h.files.userdbDirs[0]!, 'someone.user'), '{}');
        cachedNssLookup(h.cache, { files: h.files, ask: h.ask, policyFiles }).nssHasId('passwd', ID);
        expect(h.asked).toEqual(['passwd:600000', `passwd:${ID}`]);
      } else {
        cachedNssLookup(h.cache, { files: h.files, ask: h.ask, policyFiles: { passwd: '/elsewhere', group: h.files.group } }).nssHasId('passwd', ID);
        expect(h.asked).toEqual([`passwd:${ID}`]);
      }
    }
  });

  it('compat is not files: its + lines reach NIS, so it is asked every time', () => {
    const h = host('passwd: compat\ngroup: compat\n');
    for (let i = 0; i < 2; i++) {
      const l = cachedNssLookup(h.cache, { files: h.files, ask: h.ask, policyFiles: { passwd: h.files.passwd, group: h.files.group } });
      l.nssHasId('passwd', ID);
      l.save();
    }
    expect(h.asked).toHaveLength(2);
  });

  it('nssSources drops status actions and comments; the last line for a database wins', () => {
    expect(nssSources('# c\npasswd:  files [NOTFOUND=return] systemd # x\n', 'passwd')).toEqual(['files', 'systemd']);
    expect(nssSources('passwd: files\npasswd: ldap\n', 'passwd')).toEqual(['ldap']);
    expect(nssSources('group: files\n', 'passwd')).toBeUndefined();
  });

  it('plugged into the uid policy: a registered uid that stays acceptable costs no name-service lookup on the next run', () => {
    const h = host('passwd: files\ngroup: files\n');
    const range = { min: ID, max: ID + 10 };
    const sources = (l: ReturnType<typeof cachedNssLookup>) => ({ subuid: h.files.passwd + '.none', subgid: h.files.passwd + '.none', passwd: h.files.passwd, group: h.files.group, nssHasId: l.nssHasId });
    const first = cachedNssLookup(h.cache, { files: h.files, ask: h.ask });
    const uid = jailUidPolicy(range, sources(first), { uidInUse: () => false }).pick([], ID)!;
    first.save();
    expect(uid).toBe(ID);
    const before = h.asked.length;
    const next = cachedNssLookup(h.cache, { files: h.files, ask: h.ask });
    expect(jailUidPolicy(range, sources(next)).acceptable(uid)).toBe(true);
    expect(h.asked).toHaveLength(before);
  });
});
