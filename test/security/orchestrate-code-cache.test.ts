/**
 * `comis orchestrate` compiles its bundled fast path from a V8 code cache kept
 * in `$COMIS_HOME/cache` (src/cli/orchestrate-bundle.ts). V8 checks an entry
 * against its own version and flags and the source's length only, so an entry
 * is code: whoever could write it chooses what comis runs. It is therefore
 * read only when private (ours, writable by nobody else), like every cache
 * there (private-file.ts).
 *
 * The attack plants a valid entry compiled from the bundle with its first
 * statement replaced, at the same length, by `throw "pwn"`. Positive control:
 * the same entry made private is used (the run dies with "pwn"), so "not used"
 * below means the privacy check held.
 */
import { chmodSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { repoRoot, runComis } from '../helpers/cli.js';
import { codeCacheEntry, hostileCodeCache } from '../helpers/code-cache.js';
import { makeHome } from '../helpers/orchestrate.js';

const BUNDLE = join(repoRoot, 'dist/cli/fast-orchestrate.bundle.cjs');

const cacheEntry = (home: string): string => codeCacheEntry(home, 'orchestrate');
const hostileEntry = (): Buffer => hostileCodeCache(BUNDLE, 'latin1');

describe('the orchestrate bundle trusts its code cache only when private', () => {
  it('control: a private planted entry is what runs (the run dies with "pwn"); one others may write (0666) is ignored and rewritten 0600', () => {
    const h = makeHome();
    const script = h.script('hi.js', "console.log('hi');\n");
    expect(h.run(['orchestrate', '--quiet', script]).stdout).toBe('hi\n');
    const entry = cacheEntry(h.home);
    expect(statSync(entry).mode & 0o777).toBe(0o600);
    const hostile = hostileEntry();

    // Positive control: private, the planted entry is V8's to use, and comis runs its code.
    writeFileSync(entry, hostile, { mode: 0o600 });
    const used = h.run(['orchestrate', '--quiet', script]);
    expect(used.status).not.toBe(0);
    expect(used.stderr).toContain('pwn');
    expect(used.stdout).toBe('');

    // The same bytes, writable by others: a miss. The run is unchanged and the entry is replaced by comis's own.
    writeFileSync(entry, hostile, { mode: 0o600 });
    chmodSync(entry, 0o666);
    const ignored = h.run(['orchestrate', '--quiet', script]);
    expect(ignored.stderr).not.toContain('pwn');
    expect([ignored.status, ignored.stdout]).toEqual([0, 'hi\n']);
    expect(statSync(entry).mode & 0o777).toBe(0o600);
    expect(readFileSync(entry).equals(hostile)).toBe(false);
  }, 120_000);

  it('an entry in a cache directory others may write (0777) is ignored; the directory is narrowed to 0700 when the entry is rewritten', () => {
    const h = makeHome();
    const script = h.script('hi.js', "console.log('hi');\n");
    expect(runComis(['orchestrate', '--quiet', script], { home: h.home }).status).toBe(0);
    const entry = cacheEntry(h.home);
    writeFileSync(entry, hostileEntry(), { mode: 0o600 });
    chmodSync(join(h.home, 'cache'), 0o777);
    const res = h.run(['orchestrate', '--quiet', script]);
    expect(res.stderr).not.toContain('pwn');
    expect([res.status, res.stdout]).toEqual([0, 'hi\n']);
    expect(statSync(join(h.home, 'cache')).mode & 0o777).toBe(0o700);
  }, 120_000);
});
