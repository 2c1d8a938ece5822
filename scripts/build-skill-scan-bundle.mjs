// Bundles bin/comis.js's `skill scan` fast path (dist/cli/fast-skill-scan.js and the ~40
// scanner modules it loads) into one CommonJS script, dist/cli/fast-skill-scan.bundle.cjs,
// that src/cli/skill-scan-bundle.ts compiles with node:vm and a V8 code cache kept under
// $COMIS_HOME/cache (src/cli/bundle-loader.ts, shared with the orchestrate bundle). Loading
// one script instead of forty modules, compiled from a cache written after a scan (so it holds
// the scanner's functions compiled, not only the top level), is a good part of what a one-file
// scan costs (bench/README.md, issue 19). npm packages stay outside it (loaded from
// node_modules as before).
//
// What the bundle keeps as it was (the same transformations as build-orchestrate-bundle.mjs):
// - laziness: esbuild's CommonJS output initialises a module only when it is first imported;
//   packages the sources import() are import()ed by the loader, an ES module beside the bundle;
// - one instance of every module;
// - `import.meta.url`: each module gets its own dist/ file's URL (package.json, createRequire).
//
// Next to it, dist/cli/fast-skill-scan.bundle.json lists the dist files it was built from with
// their sizes, the bundle's SHA-256 (its code cache is keyed by it) and the modules evaluated as
// soon as it loads. bin/comis.js uses the bundle only while every input has that size and none
// is newer than the bundle; otherwise (`npm run build:fast`, which rebuilds dist without this
// step, or an edited dist file) it loads the modules themselves. Run last in `npm run build`,
// after everything that writes dist/.
import { createHash } from 'node:crypto';
import { rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { bundleCjs } from './lib/bundle-cjs.mjs';
import { bundleInputs } from './lib/bundle-inputs.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const outfile = join(dist, 'cli/fast-skill-scan.bundle.cjs');
const { wrapped: bundled, metafile, eager: eagerOf } = await bundleCjs(join(dist, 'cli/fast-skill-scan.js'), outfile, dist, 'build-skill-scan-bundle.mjs');
// Every rule regex's extent (src/lib/skills/prefilter.ts regexExtent), and its lead and first
// characters (regexStarts, with the rule's triggers), computed here from the dist modules the
// bundle was just built from and declared at its top as `__comisRegexExtents`, keyed
// `<flags>/<source>`: the scanner (extentOf) reads it instead of parsing the patterns at run time.
// A regex missing from it (never, from this build) is parsed as before.
const { RULES } = await import(join(dist, 'lib/skills/rules.js'));
const { regexStarts } = await import(join(dist, 'lib/skills/prefilter.js'));
const extents = new Map();
for (const rule of RULES) {
  const re = rule.kind === 'pattern' ? rule.pattern : rule.anchor;
  if (!(re instanceof RegExp)) continue;
  const key = JSON.stringify(`${re.flags}/${re.source}`);
  const { len, min, reach, back, lead, first, afterNonWord } = regexStarts(re, rule.triggers ?? [], rule.wordStartTriggers ?? []);
  // The numbers as JavaScript literals (Infinity is no JSON).
  const value = `[${len},${min},${reach},${back},${lead ?? null},${first === undefined ? null : JSON.stringify(first)},${afterNonWord}]`;
  // The lead depends on the triggers: two rules with one pattern must agree on it.
  if (extents.has(key) && extents.get(key) !== value) throw new Error(`build-skill-scan-bundle.mjs: rules with the pattern ${key} differ in their triggers`);
  extents.set(key, value);
}
const wrapped = bundled.replace(/^(\(function \([^)]*\) \{\n"use strict";)/, (head) => `${head}var __comisRegexExtents={${[...extents].map(([key, value]) => `${key}:${value}`).join(',')}};`);
if (wrapped === bundled) throw new Error('build-skill-scan-bundle.mjs: the bundle does not start as bundle-cjs.mjs wraps it');
const inputs = bundleInputs(metafile, root, dist, 'build-skill-scan-bundle.mjs');
const eager = eagerOf(Object.keys(inputs));
// The ES module bundle of earlier builds, if this dist/ still has it: bin/comis.js no longer uses it.
rmSync(join(dist, 'cli/fast-skill-scan.bundle.js'), { force: true });
writeFileSync(outfile, wrapped);
const sha256 = createHash('sha256').update(wrapped).digest('hex');
// Written after the bundle, so the bundle is never newer than the list that vouches for it.
writeFileSync(join(dist, 'cli/fast-skill-scan.bundle.json'), `${JSON.stringify({ sha256, eager, inputs })}\n`);
process.stdout.write(`dist/cli/fast-skill-scan.bundle.cjs written (${Object.keys(inputs).length} modules, ${eager.length} evaluated on load)\n`);
