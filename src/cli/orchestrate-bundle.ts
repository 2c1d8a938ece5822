/**
 * How bin/comis.js loads the `comis orchestrate` fast path: as the one bundled
 * script scripts/build-orchestrate-bundle.mjs made of it (every dist module it
 * can reach), compiled with node:vm from a V8 code cache, while that bundle is
 * current; else as the modules themselves (dist/cli/fast-orchestrate.js).
 *
 * Current means: every dist file it was built from has the recorded size and
 * none is newer than the bundle (`npm run build:fast` rebuilds dist without
 * it); bin/comis.js checks that (`currentBundle`) and passes the bundle in. The packages the bundle import()s are imported from here, an ES module
 * in dist/cli as the bundle's modules were, so they resolve as before.
 *
 * The code cache is V8's compiled form of the bundle, written after a run
 * (so it holds the functions that run compiled) to
 * `$COMIS_HOME/cache/orchestrate-<bundle sha256>-<node>-<arch>.v8`, 0600 in a
 * 0700 directory like every cache there (private-file.ts): an entry someone
 * else could have planted is never read. V8 checks that an entry matches its
 * own version, flags and the source's length, and rejects it otherwise; the
 * name pins it to the bundle's exact bytes. A rejected, corrupt or missing
 * entry costs one uncached compile and is rewritten.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';

import { comisHome } from '../lib/config/paths.js';
import { readPrivateBytes, writePrivateFileAtomic } from '../lib/private-file.js';

type FastOrchestrate = (argv: string[]) => Promise<boolean>;

interface BundleList {
  sha256: string;
  eager: string[];
  inputs: Record<string, number>;
}

/** What bin/comis.js's `currentBundle` gives for a current bundle: its path and its list. */
interface CurrentBundle {
  path: string;
  list: BundleList;
}

/**
 * The dist modules the bundle has evaluated, as the URLs of their own files (and the bundle's own),
 * for test/helpers/trace-imports.mjs: a traced run lists the same modules either way it loads.
 */
const LOADED = Symbol.for('comis.bundle.loaded');

const dist = new URL('../', import.meta.url);

/** The bundle's import() of a package (a literal specifier, see the build script). */
const importPackage = (specifier: string): Promise<unknown> => import(specifier);

function codeCachePath(sha256: string): string {
  return join(comisHome(), 'cache', `orchestrate-${sha256.slice(0, 16)}-${process.version}-${process.arch}.v8`);
}

function loadBundle(bundle: CurrentBundle): FastOrchestrate | undefined {
  const cacheFile = codeCachePath(bundle.list.sha256);
  let cachedData: Buffer | undefined;
  try {
    cachedData = readPrivateBytes(cacheFile);
  } catch {
    /* a miss: compiled from the source, and written after the run */
  }
  // ASCII by construction (the build checks): read without decoding.
  const script = new vm.Script(readFileSync(bundle.path, 'latin1'), {
    filename: bundle.path,
    ...(cachedData ? { cachedData } : {}),
  });
  const loaded = new Set<string>([new URL('cli/fast-orchestrate.bundle.cjs', dist).href, ...bundle.list.eager.map((p) => new URL(p, dist).href)]);
  (globalThis as Record<symbol, unknown>)[LOADED] = loaded;
  const module = { exports: {} as { tryFastOrchestrate?: FastOrchestrate } };
  const url = (path: string): string => new URL(path, dist).href;
  const recordLoaded = (key: string): void => void loaded.add(new URL(key.replace(/^dist\//, ''), dist).href);
  (script.runInThisContext() as (...args: unknown[]) => void)(module.exports, createRequire(bundle.path), module, bundle.path, fileURLToPath(new URL('cli/', dist)), url, recordLoaded, importPackage);
  const fast = module.exports.tryFastOrchestrate;
  if (typeof fast !== 'function') return undefined;
  if (cachedData && !script.cachedDataRejected) return fast;
  // No entry, or V8 refused it: write one once the run has compiled what it needs.
  return async (argv) => {
    try {
      return await fast(argv);
    } finally {
      try {
        writePrivateFileAtomic(cacheFile, script.createCachedData());
      } catch {
        /* no cache this time (a read-only home): the next run compiles again */
      }
    }
  };
}

/**
 * `tryFastOrchestrate` of dist/cli/fast-orchestrate.ts: from the bundle when bin/comis.js found it
 * current (its `currentBundle`, the one check for every fast path's bundle), else the modules.
 */
export async function loadFastOrchestrate(bundle?: CurrentBundle): Promise<FastOrchestrate> {
  return (bundle && loadBundle(bundle)) ?? (await import('./fast-orchestrate.js')).tryFastOrchestrate;
}
