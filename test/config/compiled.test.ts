import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import * as yaml from 'yaml';

import { compiledConfigPath, readCompiledConfig, writeCompiledConfig } from '../../src/lib/config/compiled.js';
import { loadConfig, parseConfigText } from '../../src/lib/config/load.js';
import { configSchema, type ComisConfig } from '../../src/lib/config/schema.js';
import { tempDir } from '../helpers/temp.js';

const TEXT = 'defaultAgent: a\nagents:\n  a:\n    autonomy: { profile: standard, limits: { timeoutMs: 30000 } }\n  b:\n    skills: { toolPolicy: { profile: minimal, allow: [read] } }\n';

function homeWith(text: string): { home: string; file: string; cache: string } {
  const home = tempDir();
  const file = join(home, 'config.yaml');
  writeFileSync(file, text);
  return { home, file, cache: compiledConfigPath(home, file) };
}

/** A valid-looking entry for `text` whose config is `marker`: if loadConfig returns it, the cache was used. */
function plantMarker(cache: string, file: string, text: string, over: { comisVersion?: string } = {}): ComisConfig {
  const marker = { defaultAgent: 'planted', agents: { planted: JSON.parse(JSON.stringify(parseConfigText(TEXT, file, { yaml, configSchema }).agents.a)) } } as ComisConfig;
  writeCompiledConfig(cache, file, text, marker, over);
  return marker;
}

describe('the compiled config cache', () => {
  it('validates a file once, stores the validated JSON privately, and equals a fresh parse', async () => {
    const { home, file, cache } = homeWith(TEXT);
    const first = await loadConfig({ home });
    expect(existsSync(cache)).toBe(true);
    expect(statSync(cache).mode & 0o777).toBe(0o600);
    expect(statSync(join(home, 'cache')).mode & 0o777).toBe(0o700);
    const entry = JSON.parse(readFileSync(cache, 'utf8'));
    expect(entry).toMatchObject({ v: 1, file });
    expect(entry.sourceSha256).toMatch(/^[0-9a-f]{64}$/);
    const second = await loadConfig({ home });
    expect(second).toEqual(first);
    expect(second.config).toEqual(parseConfigText(TEXT, file, { yaml, configSchema }));
  });

  it('a hit is used as is (positive control): a planted entry for the same text is what loadConfig returns', async () => {
    const { home, file, cache } = homeWith(TEXT);
    const marker = plantMarker(cache, file, TEXT);
    expect((await loadConfig({ home })).config).toEqual(marker);
  });

  it('an edited file is revalidated, so an edit that makes it invalid is reported', async () => {
    const { home, file, cache } = homeWith(TEXT);
    plantMarker(cache, file, TEXT);
    const edited = TEXT.replace('timeoutMs: 30000', 'timeoutMs: 31000');
    writeFileSync(file, edited);
    const loaded = await loadConfig({ home });
    expect(loaded.config.defaultAgent).toBe('a');
    expect(loaded.config.agents.a!.autonomy.limits.timeoutMs).toBe(31000);
    writeFileSync(file, edited.replace('profile: standard', 'profile: bogus'));
    await expect(loadConfig({ home })).rejects.toThrow(/agents\.a\.autonomy\.profile/);
    // An invalid text is never cached: the entry is still the one for the valid edit.
    expect(JSON.parse(readFileSync(cache, 'utf8')).config).toContain('31000');
  });

  it('an entry written by another comis version is revalidated and replaced', async () => {
    const { home, file, cache } = homeWith(TEXT);
    plantMarker(cache, file, TEXT, { comisVersion: '0.0.0-old' });
    const loaded = await loadConfig({ home });
    expect(loaded.config.defaultAgent).toBe('a');
    expect(JSON.parse(readFileSync(cache, 'utf8')).comis).not.toBe('0.0.0-old');
    expect(readCompiledConfig(cache, file, TEXT, { comisVersion: '0.0.0-old' })).toBeUndefined();
    expect(readCompiledConfig(cache, file, TEXT, { build: 'another build' })).toBeUndefined();
  });

  it('a corrupt or tampered entry is ignored and rebuilt, never trusted', async () => {
    const { home, file, cache } = homeWith(TEXT);
    plantMarker(cache, file, TEXT);
    const good = readFileSync(cache, 'utf8');
    const entry = JSON.parse(good);
    const tampered = { ...entry, config: entry.config.replace('"planted"', '"plantee"') }; // checksum no longer matches
    const wrongFile = { ...entry, file: '/elsewhere/config.yaml' };
    const noAgents = { ...entry, config: '{"agents":{}}', configSha256: undefined };
    for (const bad of [good.slice(0, 40), '', 'null', '{"v":1}', JSON.stringify(tampered), JSON.stringify(wrongFile), JSON.stringify(noAgents)]) {
      writeFileSync(cache, bad);
      const loaded = await loadConfig({ home });
      expect(loaded.config.defaultAgent, bad.slice(0, 60)).toBe('a');
      expect(JSON.parse(readFileSync(cache, 'utf8')).config).toContain('"defaultAgent":"a"');
    }
  });

  it('keeps one entry per config path and leaves no temp file behind', async () => {
    const { home } = homeWith(TEXT);
    const other = join(home, 'other.yaml');
    writeFileSync(other, 'agents:\n  z: {}\n');
    await loadConfig({ home });
    expect((await loadConfig({ home, file: other })).config.agents.z).toBeDefined();
    expect(compiledConfigPath(home, other)).not.toBe(compiledConfigPath(home, join(home, 'config.yaml')));
    expect(readdirSync(join(home, 'cache')).sort()).toEqual([compiledConfigPath(home, join(home, 'config.yaml')), compiledConfigPath(home, other)].map((p) => p.slice(p.lastIndexOf('/') + 1)).sort());
  });
});
