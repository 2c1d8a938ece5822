/**
 * The two bundled fast paths (orchestrate, skill scan) compile from a V8 code cache kept in
 * `$COMIS_HOME/cache` (src/cli/bundle-loader.ts). What their security tests share: finding the
 * entry a first run wrote, and making a hostile entry V8 accepts for the bundle.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { expect } from 'vitest';

/** The entry comis wrote in this home for the bundle called `name` (one per bundle and node). */
export function codeCacheEntry(home: string, name: 'orchestrate' | 'skill-scan'): string {
  const pattern = new RegExp(`^${name}-[0-9a-f]{16}-v[\\d.]+-\\w+\\.v8$`);
  const names = readdirSync(join(home, 'cache')).filter((n) => pattern.test(n));
  expect(names).toHaveLength(1);
  return join(home, 'cache', names[0]!);
}

/**
 * A code cache V8 accepts for `bundle` (read as its loader reads it), compiled from a same-length
 * source whose wrapper throws "pwn" first thing.
 */
export function hostileCodeCache(bundle: string, encoding: 'latin1' | 'utf8'): Buffer {
  const source = readFileSync(bundle, encoding);
  const first = '\n"use strict";';
  expect(source.indexOf(first)).toBeGreaterThan(0);
  const hostile = source.replace(first, '\nthrow "pwn";;');
  expect(hostile.length).toBe(source.length);
  // In a plain node (the flags comis runs with), not a test worker: V8 rejects an entry made under other flags.
  const made = spawnSync(
    process.execPath,
    ['-e', `const vm = require('node:vm'); const s = new vm.Script(require('node:fs').readFileSync(0, ${JSON.stringify(encoding)}), { filename: ${JSON.stringify(bundle)} }); process.stdout.write(s.createCachedData().toString('base64'));`],
    { input: Buffer.from(hostile, encoding), encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
  );
  expect(made.status, made.stderr).toBe(0);
  return Buffer.from(made.stdout, 'base64');
}
