/**
 * The transpile cache: a TypeScript script's esbuild output kept under
 * `$COMIS_HOME/cache`, so a run of the same script loads no esbuild. What
 * the cache must never do is hand the jail something other than what esbuild
 * would have made of this very source: a corrupt entry, another script's
 * entry or an entry of another comis is transpiled afresh.
 */
import { chmodSync, readdirSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';

import { TRANSPILE_CACHE_MAX, prepareScript } from '../../src/lib/orchestrate/transpile.js';
import { tempDir } from '../helpers/temp.js';

const SRC = 'const n: number = 41;\nconsole.log(n + 1);\n';
const entries = (dir: string): string[] => readdirSync(dir).filter((n) => n.startsWith('ts-'));
const sha256 = (t: string): string => createHash('sha256').update(t).digest('hex');

describe('transpile cache', () => {
  it('keeps the output of esbuild, 0600, and a second run of the same script gets it from the cache', async () => {
    const cacheDir = join(tempDir(), 'cache');
    const fresh = await prepareScript(SRC, 'ts', 'job.ts');
    const first = await prepareScript(SRC, 'ts', 'job.ts', { cacheDir });
    expect(first).toEqual(fresh);
    const [name] = entries(cacheDir);
    expect(entries(cacheDir)).toHaveLength(1);
    const file = join(cacheDir, name!);
    expect(readdirSync(cacheDir)).toEqual([name]);
    expect(readFileSync(file, 'utf8')).toContain('console.log(n + 1)');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    // Positive control that the hit path is taken: an entry for this key with other (self-consistent) code is what comes back.
    const entry = JSON.parse(readFileSync(file, 'utf8')) as { key: string; sha256: string; code: string };
    const planted = 'console.log("from the cache");\n';
    writeFileSync(file, JSON.stringify({ ...entry, code: planted, sha256: sha256(planted) }), { mode: 0o600 });
    expect((await prepareScript(SRC, 'ts', 'job.ts', { cacheDir })).code).toBe(planted);
  });

  it('a corrupt entry, another name or another source is transpiled afresh, never taken from the cache', async () => {
    const cacheDir = join(tempDir(), 'cache');
    const fresh = await prepareScript(SRC, 'ts', 'job.ts', { cacheDir });
    const file = join(cacheDir, entries(cacheDir)[0]!);
    const entry = JSON.parse(readFileSync(file, 'utf8')) as { key: string; sha256: string; code: string };
    // Code changed, hash not: refused.
    writeFileSync(file, JSON.stringify({ ...entry, code: 'process.exit(3);\n' }), { mode: 0o600 });
    expect((await prepareScript(SRC, 'ts', 'job.ts', { cacheDir })).code).toBe(fresh.code);
    // Not JSON at all: refused.
    writeFileSync(file, '{not json', { mode: 0o600 });
    expect((await prepareScript(SRC, 'ts', 'job.ts', { cacheDir })).code).toBe(fresh.code);
    // Writable by others: not trusted (readPrivateFile), whatever it holds.
    const planted = 'console.log("planted");\n';
    writeFileSync(file, JSON.stringify({ ...entry, code: planted, sha256: sha256(planted) }), { mode: 0o600 });
    chmodSync(file, 0o666);
    expect((await prepareScript(SRC, 'ts', 'job.ts', { cacheDir })).code).toBe(fresh.code);
    // Another display name (it is in the source map) or another source: another entry.
    const other = await prepareScript(SRC, 'ts', 'other.ts', { cacheDir });
    expect(other.code).not.toBe(fresh.code);
    const map = (code: string): string => Buffer.from(/sourceMappingURL=data:application\/json;base64,(\S+)/.exec(code)![1]!, 'base64').toString('utf8');
    expect(JSON.parse(map(other.code)).sources).toEqual(['other.ts']);
    await prepareScript(`${SRC}// more\n`, 'ts', 'job.ts', { cacheDir });
    expect(entries(cacheDir)).toHaveLength(3);
  });

  it('a script that does not parse is refused and nothing is cached', async () => {
    const cacheDir = join(tempDir(), 'cache');
    await expect(prepareScript('const x: number = ;\n', 'ts', 'bad.ts', { cacheDir })).rejects.toMatchObject({ code: 'INPUT_INVALID' });
    expect(() => readdirSync(cacheDir)).toThrow();
  });

  it(`holds at most ${TRANSPILE_CACHE_MAX} entries: the oldest go first`, async () => {
    const cacheDir = join(tempDir(), 'cache');
    await prepareScript(SRC, 'ts', 'seed.ts', { cacheDir });
    const old = Date.now() / 1000 - 3600;
    for (let i = 0; i < TRANSPILE_CACHE_MAX; i++) {
      const f = join(cacheDir, `ts-old${String(i).padStart(4, '0')}.json`);
      writeFileSync(f, '{}', { mode: 0o600 });
      utimesSync(f, old + i, old + i);
    }
    await prepareScript(`${SRC}// new\n`, 'ts', 'new.ts', { cacheDir });
    const left = entries(cacheDir);
    expect(left).toHaveLength(TRANSPILE_CACHE_MAX);
    expect(left).not.toContain('ts-old0000.json');
    expect(left).not.toContain('ts-old0001.json');
    expect(left).toContain(`ts-old${String(TRANSPILE_CACHE_MAX - 1).padStart(4, '0')}.json`);
  });
});
