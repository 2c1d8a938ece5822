/**
 * The caches under `$COMIS_HOME/cache` decide what a run trusts (the compiled
 * config: which agent holds which capabilities). An entry is trusted only when
 * nobody but the invoking user could have written or swapped it, and a cache
 * directory left wider than 0700 is narrowed before anything is written.
 *
 * Each attack plants a valid-looking entry whose config is a marker agent; the
 * positive control is the same entry made private: then loadConfig returns the
 * marker, so "not used" below means the ownership check held.
 */
import { chmodSync, chownSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import * as yaml from 'yaml';

import { compiledConfigPath, writeCompiledConfig } from '../../src/lib/config/compiled.js';
import { loadConfig, parseConfigText } from '../../src/lib/config/load.js';
import { configSchema, type ComisConfig } from '../../src/lib/config/schema.js';
import { readPrivateFile, writePrivateFileAtomic } from '../../src/lib/private-file.js';
import { tempDir } from '../helpers/temp.js';

const TEXT = 'defaultAgent: a\nagents:\n  a:\n    autonomy: { profile: standard }\n';
const OTHER_UID = 4242;
const isRoot = process.geteuid?.() === 0;

function homeWith(): { home: string; file: string; cache: string } {
  const home = tempDir();
  const file = join(home, 'config.yaml');
  writeFileSync(file, TEXT);
  return { home, file, cache: compiledConfigPath(home, file) };
}

/** Writes a valid entry for TEXT whose config is an agent named `planted`. */
function plant(cache: string, file: string): ComisConfig {
  const real = parseConfigText(TEXT, file, { yaml, configSchema });
  const marker = { ...real, defaultAgent: 'planted', agents: { planted: real.agents.a } } as ComisConfig;
  writeCompiledConfig(cache, file, TEXT, marker);
  expect(statSync(cache).mode & 0o777).toBe(0o600);
  return marker;
}

describe('cache entries are trusted only when private', () => {
  it('control: a private planted entry is what loadConfig returns', async () => {
    const { home, file, cache } = homeWith();
    const marker = plant(cache, file);
    expect((await loadConfig({ home })).config).toEqual(marker);
  });

  it('an entry others may write (0666) is a miss: the file is revalidated and the entry rewritten privately', async () => {
    const { home, file, cache } = homeWith();
    plant(cache, file);
    chmodSync(cache, 0o666);
    expect(() => readPrivateFile(cache)).toThrow(/not a private file/);
    const loaded = await loadConfig({ home });
    expect(loaded.config.defaultAgent).toBe('a');
    expect(statSync(cache).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(cache, 'utf8')).config).not.toContain('planted');
  });

  it('an entry in a directory others may write is a miss, and writing narrows the directory to 0700', async () => {
    const { home, file, cache } = homeWith();
    plant(cache, file);
    chmodSync(join(home, 'cache'), 0o777);
    const loaded = await loadConfig({ home });
    expect(loaded.config.defaultAgent).toBe('a');
    expect(statSync(join(home, 'cache')).mode & 0o777).toBe(0o700);
    // The rewritten entry is trusted again (the directory is private now).
    expect((await loadConfig({ home })).config.defaultAgent).toBe('a');
    expect(JSON.parse(readPrivateFile(cache)).config).not.toContain('planted');
  });

  it.runIf(isRoot)('needs root: an entry owned by another uid is never used, even when its mode is 0600', async () => {
    const { home, file, cache } = homeWith();
    plant(cache, file);
    chownSync(cache, OTHER_UID, OTHER_UID);
    expect((await loadConfig({ home })).config.defaultAgent).toBe('a');
  });

  it.runIf(isRoot)('needs root: a cache directory owned by another uid is neither written nor read', async () => {
    const { home, file, cache } = homeWith();
    plant(cache, file);
    chownSync(join(home, 'cache'), OTHER_UID, OTHER_UID);
    chmodSync(join(home, 'cache'), 0o700);
    expect(() => writePrivateFileAtomic(join(home, 'cache', 'x.json'), '{}')).toThrow(/not owned by uid 0/);
    expect((await loadConfig({ home })).config.defaultAgent).toBe('a');
    expect(statSync(join(home, 'cache')).uid).toBe(OTHER_UID);
  });

  it('a link where the cache directory should be is refused, not followed', () => {
    const dir = tempDir();
    const elsewhere = join(dir, 'elsewhere');
    mkdirSync(elsewhere, { mode: 0o755 });
    symlinkSync(elsewhere, join(dir, 'cache'));
    expect(() => writePrivateFileAtomic(join(dir, 'cache', 'x.json'), '{}')).toThrow(/not a directory/);
    expect(statSync(elsewhere).mode & 0o777).toBe(0o755);
  });
});
