/**
 * How bin/comis.js runs a fast path bundled into one CommonJS script
 * (scripts/build-orchestrate-bundle.mjs, scripts/build-skill-scan-bundle.mjs): compiled
 * with node:vm from a V8 code cache while the bundle is current (bin/comis.js's
 * `currentBundle` checks that and passes the bundle in).
 *
 * The code cache is V8's compiled form of the bundle, written after a run (so it
 * holds the functions that ran compiled) to
 * `$COMIS_HOME/cache/<name>-<bundle sha256>-<node>-<arch>.v8`, 0600 in a 0700
 * directory like every cache there (private-file.ts): an entry someone else could
 * have planted is never read (a code cache is code: test/security/*-code-cache.test.ts).
 * V8 checks that an entry matches its own version, flags and the source's length,
 * and rejects it otherwise; the name pins it to the bundle's exact bytes. A rejected,
 * corrupt or missing entry costs one uncached compile and is rewritten.
 *
 * The packages a bundle import()s are imported from here, an ES module in dist/cli as
 * the bundle's modules were, so they resolve as before.
 */
import { lstatSync, readdirSync, readFileSync, unlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';

import { comisHome } from '../lib/config/paths.js';
import { readPrivateBytes, writePrivateFileAtomic } from '../lib/private-file.js';

export interface BundleList {
  sha256: string;
  eager: string[];
  inputs: Record<string, number>;
}

/** What bin/comis.js's `currentBundle` gives for a current bundle: its path and its list. */
export interface CurrentBundle {
  path: string;
  list: BundleList;
}

/** A bundle evaluated: its exports, and `save` to call once the run has compiled what it needs. */
export interface LoadedBundle {
  exports: Record<string, unknown>;
  /** True when there was no usable entry (none, or V8 refused it): `save` then writes one. */
  fresh: boolean;
  /** Writes the code cache when there was none or V8 refused it; never throws (a read-only home: the next run compiles again). */
  save: () => void;
}

/**
 * The dist modules a bundle has evaluated, as the URLs of their own files (and the bundle's own),
 * for test/helpers/trace-imports.mjs: a traced run lists the same modules either way it loads.
 */
const LOADED = Symbol.for('comis.bundle.loaded');

const dist = new URL('../', import.meta.url);

/** The bundle's import() of a package (a literal specifier, see the build scripts). */
const importPackage = (specifier: string): Promise<unknown> => import(specifier);

/** Age past which another build's entry of the same name is removed when an entry is written. */
const STALE_ENTRY_MS = 24 * 60 * 60 * 1000;

/**
 * Removes the entries of `name` for this node and arch other than `keep` that were written more
 * than a day ago: those of other builds of the bundle (an upgrade or a rebuild leaves one behind,
 * ~0.5 MB each, that nothing may read again). A day, not at once: two builds in use with one
 * `$COMIS_HOME` (two checkouts) would otherwise delete each other's entry on every run. Other node
 * versions' entries are left alone. A name is unlinked, never followed; best effort.
 */
function removeStaleEntries(keep: string, name: string): void {
  const dir = dirname(keep);
  const suffix = `-${process.version}-${process.arch}.v8`;
  const now = Date.now();
  try {
    for (const entry of readdirSync(dir)) {
      if (!entry.startsWith(`${name}-`) || !entry.endsWith(suffix) || entry === basename(keep)) continue;
      try {
        const path = join(dir, entry);
        if (now - lstatSync(path).mtimeMs > STALE_ENTRY_MS) unlinkSync(path);
      } catch {
        /* left for a later write */
      }
    }
  } catch {
    /* the directory is unreadable: nothing to tidy */
  }
}

/** `<name>-<sha256 prefix>-<node>-<arch>.v8` under `$COMIS_HOME/cache`. */
export function codeCachePath(name: string, sha256: string): string {
  return join(comisHome(), 'cache', `${name}-${sha256.slice(0, 16)}-${process.version}-${process.arch}.v8`);
}

/**
 * Compiles and evaluates the bundle at `bundle.path` (dist/cli/<file>) with the code cache named
 * `name`, its source read as `encoding`. Throws what evaluating it throws.
 */
export function loadBundle(name: string, bundle: CurrentBundle, encoding: 'latin1' | 'utf8'): LoadedBundle {
  const cacheFile = codeCachePath(name, bundle.list.sha256);
  let cachedData: Buffer | undefined;
  try {
    cachedData = readPrivateBytes(cacheFile);
  } catch {
    /* a miss: compiled from the source, and written after the run */
  }
  // 'latin1' for a bundle that is ASCII by construction (its build checks): read without decoding.
  const script = new vm.Script(readFileSync(bundle.path, encoding), {
    filename: bundle.path,
    ...(cachedData ? { cachedData } : {}),
  });
  const loaded = (globalThis as Record<symbol, Set<string> | undefined>)[LOADED] ?? new Set<string>();
  (globalThis as Record<symbol, unknown>)[LOADED] = loaded;
  loaded.add(new URL(`cli/${basename(bundle.path)}`, dist).href);
  for (const p of bundle.list.eager) loaded.add(new URL(p, dist).href);
  const module = { exports: {} as Record<string, unknown> };
  const url = (path: string): string => new URL(path, dist).href;
  const recordLoaded = (key: string): void => void loaded.add(new URL(key.replace(/^dist\//, ''), dist).href);
  (script.runInThisContext() as (...args: unknown[]) => void)(module.exports, createRequire(bundle.path), module, bundle.path, fileURLToPath(new URL('cli/', dist)), url, recordLoaded, importPackage);
  const fresh = !cachedData || script.cachedDataRejected === true;
  return {
    exports: module.exports,
    fresh,
    save: () => {
      if (!fresh) return;
      try {
        writePrivateFileAtomic(cacheFile, script.createCachedData());
      } catch {
        return; /* no cache this time */
      }
      removeStaleEntries(cacheFile, name);
    },
  };
}
