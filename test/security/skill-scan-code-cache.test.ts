/**
 * `comis skill scan` compiles its bundled fast path from a V8 code cache kept in
 * `$COMIS_HOME/cache` (src/cli/skill-scan-bundle.ts, bundle-loader.ts). V8 checks an entry
 * against its own version and flags and the source's length only, so an entry is code:
 * whoever could write it chooses what comis runs (here: what a security scanner reports).
 * It is therefore read only when private (ours, writable by nobody else), like every cache
 * there (private-file.ts).
 *
 * The attack plants a valid entry compiled from the bundle with its first statement
 * replaced, at the same length, by `throw "pwn"`. Positive control: the same entry made
 * private is used (the run dies with "pwn"), so "not used" below means the privacy check held.
 */
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { repoRoot, runComis } from '../helpers/cli.js';
import { codeCacheEntry, hostileCodeCache } from '../helpers/code-cache.js';
import { tempDir } from '../helpers/temp.js';

const BUNDLE = join(repoRoot, 'dist/cli/fast-skill-scan.bundle.cjs');
const SKILL = '---\nname: s\ndescription: a skill\n---\nRun:\n\n    cat install.sh | bash\n';

/** A workspace with one SKILL.md, and a fresh home. */
function setup(): { home: string; cwd: string } {
  const cwd = tempDir();
  mkdirSync(join(cwd, 'skills/s'), { recursive: true });
  writeFileSync(join(cwd, 'skills/s/SKILL.md'), SKILL);
  return { home: tempDir(), cwd };
}

const scan = (s: { home: string; cwd: string }) => runComis(['skill', 'scan', 'skills/s/SKILL.md', '--format', 'json'], { home: s.home, cwd: s.cwd });

const cacheEntry = (home: string): string => codeCacheEntry(home, 'skill-scan');
const hostileEntry = (): Buffer => hostileCodeCache(BUNDLE, 'utf8');

describe('the skill scan bundle trusts its code cache only when private', () => {
  it('control: a private planted entry is what runs (the run dies with "pwn"); one others may write (0666) is ignored and rewritten 0600', () => {
    const s = setup();
    const first = scan(s);
    expect(first.status).toBe(1);
    const report = first.stdout;
    expect(JSON.parse(report).summary.critical).toBe(1);
    const entry = cacheEntry(s.home);
    expect(statSync(entry).mode & 0o777).toBe(0o600);
    const hostile = hostileEntry();

    // Positive control: private, the planted entry is V8's to use, and comis runs its code.
    writeFileSync(entry, hostile, { mode: 0o600 });
    const used = scan(s);
    // The throw escapes as an uncaught exception (exit 1, like a failing scan): no report is what tells them apart.
    expect(used.status).not.toBe(0);
    expect(used.stderr).toContain('pwn');
    expect(used.stdout).toBe('');

    // The same bytes, writable by others: a miss. The scan is unchanged and the entry is replaced by comis's own.
    writeFileSync(entry, hostile, { mode: 0o600 });
    chmodSync(entry, 0o666);
    const ignored = scan(s);
    expect(ignored.stderr).not.toContain('pwn');
    expect([ignored.status, ignored.stdout]).toEqual([1, report]);
    expect(statSync(entry).mode & 0o777).toBe(0o600);
    expect(readFileSync(entry).equals(hostile)).toBe(false);
  }, 120_000);

  it('an entry in a cache directory others may write (0777) is ignored; the directory is narrowed to 0700 when the entry is rewritten', () => {
    const s = setup();
    const report = scan(s).stdout;
    const entry = cacheEntry(s.home);
    writeFileSync(entry, hostileEntry(), { mode: 0o600 });
    chmodSync(join(s.home, 'cache'), 0o777);
    const res = scan(s);
    expect(res.stderr).not.toContain('pwn');
    expect([res.status, res.stdout]).toEqual([1, report]);
    expect(statSync(join(s.home, 'cache')).mode & 0o777).toBe(0o700);
  }, 120_000);
});
