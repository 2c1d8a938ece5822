/**
 * How bin/comis.js loads the `comis orchestrate` fast path: as the one bundled
 * script scripts/build-orchestrate-bundle.mjs made of it (every dist module it
 * can reach), compiled with node:vm from a V8 code cache, while that bundle is
 * current; else as the modules themselves (dist/cli/fast-orchestrate.js).
 *
 * Current means: every dist file it was built from has the recorded size and
 * none is newer than the bundle (`npm run build:fast` rebuilds dist without
 * it); bin/comis.js checks that (`currentBundle`) and passes the bundle in.
 *
 * The code cache (bundle-loader.ts, shared with `skill scan`'s bundle) is V8's
 * compiled form of the bundle, written after a run (so it holds the functions
 * that run compiled) to `$COMIS_HOME/cache/orchestrate-<bundle sha256>-<node>-<arch>.v8`,
 * 0600 in a 0700 directory like every cache there (private-file.ts): an entry
 * someone else could have planted is never read.
 */
import { type CurrentBundle, loadBundle } from './bundle-loader.js';

type FastOrchestrate = (argv: string[]) => Promise<boolean>;

function fromBundle(bundle: CurrentBundle): FastOrchestrate | undefined {
  const { exports, fresh, save } = loadBundle('orchestrate', bundle, 'latin1');
  const fast = exports.tryFastOrchestrate as FastOrchestrate | undefined;
  if (typeof fast !== 'function') return undefined;
  if (!fresh) return fast;
  // No entry, or V8 refused it: write one once the run has compiled what it needs.
  return async (argv) => {
    try {
      return await fast(argv);
    } finally {
      save();
    }
  };
}

/**
 * `tryFastOrchestrate` of dist/cli/fast-orchestrate.ts: from the bundle when bin/comis.js found it
 * current (its `currentBundle`, the one check for every fast path's bundle), else the modules.
 */
export async function loadFastOrchestrate(bundle?: CurrentBundle): Promise<FastOrchestrate> {
  return (bundle && fromBundle(bundle)) ?? (await import('./fast-orchestrate.js')).tryFastOrchestrate;
}
