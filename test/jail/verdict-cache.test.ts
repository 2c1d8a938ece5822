import { chmodSync, readFileSync, renameSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import type { Detection } from '../../src/lib/jail/detect.js';
import { detectSandboxProvider, resetSandboxProviderCache } from '../../src/lib/jail/provider.js';
import { DETECTION_CACHE_TTL_MS, readCachedDetection, writeCachedDetection } from '../../src/lib/jail/verdict-cache.js';
import { comisVersion } from '../../src/lib/version.js';
import { tempDir } from '../helpers/temp.js';

/** A working detection whose tools are real files of a temp dir (so a test may swap them). */
function fakeDetection(): { detection: Detection; bin: string } {
  const bin = tempDir();
  const tools: Record<string, string> = {};
  for (const name of ['bwrap', 'prlimit', 'setpriv', 'timeout']) {
    writeFileSync(join(bin, name), `#!/bin/sh\n# ${name} v1\n`);
    chmodSync(join(bin, name), 0o755);
    tools[name] = join(bin, name);
  }
  const detection: Detection = {
    info: { provider: 'bwrap', binary: tools.bwrap!, version: '0.8.0', checks: [] },
    tools: tools as unknown as Detection['tools'] & object,
    arch: 'x64',
  };
  return { detection, bin };
}

function cacheFile(): string {
  return join(tempDir(), 'cache', 'jail-provider.json');
}

afterEach(() => resetSandboxProviderCache());

describe('the verdict cache', () => {
  it('stands while nothing changed, and is private', () => {
    const { detection } = fakeDetection();
    const file = cacheFile();
    writeCachedDetection(file, detection);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(file, '..')).mode & 0o777).toBe(0o700);
    expect(readCachedDetection(file)).toEqual(detection);
  });

  it('a swapped binary (same path, new file) re-runs the smoke test', () => {
    const { detection, bin } = fakeDetection();
    const file = cacheFile();
    writeCachedDetection(file, detection);
    expect(readCachedDetection(file)).toBeDefined();
    // Replace bwrap the way a package manager does: a new file renamed over the old path.
    writeFileSync(join(bin, 'bwrap.new'), '#!/bin/sh\n# bwrap v1\n');
    chmodSync(join(bin, 'bwrap.new'), 0o755);
    renameSync(join(bin, 'bwrap.new'), join(bin, 'bwrap'));
    expect(readCachedDetection(file)).toBeUndefined();
  });

  it('a helper rewritten in place (same inode, new mtime) re-runs it too', () => {
    const { detection, bin } = fakeDetection();
    const file = cacheFile();
    writeCachedDetection(file, detection);
    utimesSync(join(bin, 'setpriv'), new Date(2020, 0, 1), new Date(2020, 0, 1));
    expect(readCachedDetection(file)).toBeUndefined();
  });

  it('a missing tool, another comis version or another PATH each re-run it', () => {
    const { detection } = fakeDetection();
    const file = cacheFile();
    writeCachedDetection(file, detection, { comisVersion: '0.0.1-old' });
    expect(readCachedDetection(file, { comisVersion: '0.0.1-old' })).toBeDefined();
    expect(readCachedDetection(file)).toBeUndefined(); // upgraded to this version
    writeCachedDetection(file, detection, { pathEnv: '/usr/bin:/bin' });
    expect(readCachedDetection(file, { pathEnv: '/usr/bin:/bin' })).toBeDefined();
    expect(readCachedDetection(file, { pathEnv: '/opt/other/bin:/usr/bin:/bin' })).toBeUndefined();
    const gone = fakeDetection();
    writeCachedDetection(file, gone.detection);
    renameSync(join(gone.bin, 'timeout'), join(gone.bin, 'timeout.moved'));
    expect(readCachedDetection(file)).toBeUndefined();
  });

  it('expires after its TTL and ignores an entry from the future', () => {
    const { detection } = fakeDetection();
    const file = cacheFile();
    const now = Date.now();
    writeCachedDetection(file, detection, { now });
    expect(readCachedDetection(file, { now: now + DETECTION_CACHE_TTL_MS - 1000 })).toBeDefined();
    expect(readCachedDetection(file, { now: now + DETECTION_CACHE_TTL_MS + 1000 })).toBeUndefined();
    expect(readCachedDetection(file, { now: now - 60_000 })).toBeUndefined();
  });

  it('a corrupt or forged entry is ignored, never trusted', () => {
    const { detection } = fakeDetection();
    const file = cacheFile();
    writeCachedDetection(file, detection);
    const good = readFileSync(file, 'utf8');
    for (const bad of [good.slice(0, good.length / 2), 'not json', 'null', '[]', '{}', JSON.stringify({ ...JSON.parse(good), v: 2 })]) {
      writeFileSync(file, bad);
      expect(readCachedDetection(file)).toBeUndefined();
    }
    // A failing verdict is never cached, and one edited to look like a failure is not used.
    const failing = JSON.parse(good);
    failing.detection.info.problem = { code: 'SMOKE_FAILED', message: 'x', hint: 'y' };
    writeFileSync(file, JSON.stringify(failing));
    expect(readCachedDetection(file)).toBeUndefined();
    const noFiles = JSON.parse(good);
    noFiles.files = {};
    writeFileSync(file, JSON.stringify(noFiles));
    expect(readCachedDetection(file)).toBeUndefined();
    writeFileSync(file, good);
    writeCachedDetection(file, { ...detection, info: { ...detection.info, problem: { code: 'SMOKE_FAILED', message: 'x', hint: 'y' } } });
    expect(readFileSync(file, 'utf8')).toBe(good); // not overwritten by a failure
  });

  it('detectSandboxProvider re-runs the real smoke test when the cached entry is of another comis version', () => {
    const file = cacheFile();
    const first = detectSandboxProvider({ cacheFile: file });
    expect(first.problem).toBeUndefined();
    const entry = JSON.parse(readFileSync(file, 'utf8'));
    expect(entry.facts).toContain(JSON.stringify(comisVersion()));
    // The real tools the spawner uses are what the entry pins.
    expect(Object.keys(entry.files)).toContain(first.binary);
    // Rewrite it as an older comis wrote it: the next process must detect afresh and rewrite it.
    resetSandboxProviderCache();
    const old = readCachedDetection(file)!;
    writeCachedDetection(file, old, { comisVersion: '0.0.0-old', now: entry.at - 1000 });
    expect(readCachedDetection(file)).toBeUndefined();
    detectSandboxProvider({ cacheFile: file });
    const rewritten = JSON.parse(readFileSync(file, 'utf8'));
    expect(rewritten.facts).toContain(JSON.stringify(comisVersion()));
    expect(rewritten.at).toBeGreaterThanOrEqual(entry.at);
    // And a standing entry is used as is: the next process does not rewrite it.
    resetSandboxProviderCache();
    detectSandboxProvider({ cacheFile: file });
    expect(JSON.parse(readFileSync(file, 'utf8')).at).toBe(rewritten.at);
  });
});
