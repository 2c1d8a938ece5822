/**
 * How bin/comis.js loads the `comis skill scan` fast path: as the one bundled script
 * scripts/build-skill-scan-bundle.mjs made of it, compiled with node:vm from a V8 code
 * cache (bundle-loader.ts: `$COMIS_HOME/cache/skill-scan-<bundle sha256>-<node>-<arch>.v8`,
 * private like every cache there), while that bundle is current; else as the modules
 * themselves (dist/cli/fast-skill-scan.js).
 *
 * The entry is written after the first scan, so it holds the scanner's functions compiled,
 * not only the bundle's top level. V8 rejects an entry made under other flags, and a scan
 * sets regex flags (skill-scan-main.ts's scanReport): they are set back to V8's defaults
 * before the entry is made, so the next run, which compiles the bundle before any scan, can
 * use it (test/e2e/skill-scan.test.ts: later runs keep the entry).
 */
import { setFlagsFromString } from 'node:v8';

import { type CurrentBundle, loadBundle } from './bundle-loader.js';

type FastSkillScan = (args: readonly string[]) => Promise<boolean>;

function fromBundle(bundle: CurrentBundle): FastSkillScan | undefined {
  const { exports, fresh, save } = loadBundle('skill-scan', bundle, 'utf8');
  const fast = exports.tryFastSkillScan as FastSkillScan | undefined;
  if (typeof fast !== 'function') return undefined;
  if (!fresh) return fast;
  // No entry, or V8 refused it: write one once a scan has compiled what it needs (not after a
  // run that went to oclif, which compiled next to nothing).
  return async (args) => {
    const done = await fast(args);
    if (done) {
      // The flags scanReport sets, back to V8's defaults (the scan is over: nothing runs after this but the write).
      setFlagsFromString('--regexp-tier-up-ticks=1');
      setFlagsFromString('--regexp-optimization');
      setFlagsFromString('--opt');
      save();
    }
    return done;
  };
}

/**
 * `tryFastSkillScan` of dist/cli/fast-skill-scan.ts: from the bundle when bin/comis.js found it
 * current (its `currentBundle`), else the modules.
 */
export async function loadFastSkillScan(bundle?: CurrentBundle): Promise<FastSkillScan> {
  return (bundle && fromBundle(bundle)) ?? (await import('./fast-skill-scan.js')).tryFastSkillScan;
}
