/**
 * The fast paths of bin/comis.js that run a bundled script (`comis orchestrate <script>`,
 * `comis skill scan <paths>`), as one CommonJS file: scripts/build-fast-entry.mjs bundles this
 * module and what it imports into dist/cli/fast-entry.cjs, which bin/comis.js (CommonJS) requires.
 * Then nothing on those paths starts node's ES module loader, ~3.5 ms of every run (an ES module
 * entry, or the first import(), initialises it), nor loads the five ES modules it took to get
 * here. Without that file (dist built by `npm run build:fast`, or older than this module's own
 * dist file) bin/comis.js imports this module as it is.
 */
import { readFileSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import type { CurrentBundle } from './bundle-loader.js';
import { loadFastOrchestrate } from './orchestrate-bundle.js';
import { loadFastSkillScan } from './skill-scan-bundle.js';

/**
 * A fast path's bundle (scripts/build-*-bundle.mjs) while it is current: every dist file it was
 * built from has the size its list (the .json beside it) records and none is newer than the
 * bundle. Else undefined (missing, or dist rebuilt without it by `npm run build:fast`, or an
 * edited dist file), and the modules themselves load. Plain path strings: a run stats ~140 inputs.
 */
function currentBundle(name: string): CurrentBundle | undefined {
  try {
    const dist = fileURLToPath(new URL('../', import.meta.url));
    const path = `${dist}cli/${name}`;
    const builtAt = statSync(path).mtimeMs;
    const list = JSON.parse(readFileSync(path.replace(/\.c?js$/, '.json'), 'utf8')) as CurrentBundle['list'];
    for (const [file, size] of Object.entries(list.inputs)) {
      const stat = statSync(dist + file);
      if (stat.size !== size || stat.mtimeMs > builtAt) return undefined;
    }
    return { path, list };
  } catch {
    return undefined;
  }
}

/** `comis orchestrate <argv>` on its fast path; false when it is not one (oclif takes it). */
export async function fastOrchestrate(argv: string[]): Promise<boolean> {
  return (await loadFastOrchestrate(currentBundle('fast-orchestrate.bundle.cjs')))(argv);
}

/** `comis skill scan <args>` on its fast path; false when it is not one (oclif takes it). */
export async function fastSkillScan(args: string[]): Promise<boolean> {
  return (await loadFastSkillScan(currentBundle('fast-skill-scan.bundle.cjs')))(args);
}
