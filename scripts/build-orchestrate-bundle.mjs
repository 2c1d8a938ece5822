// Bundles bin/comis.js's `comis orchestrate` fast path (dist/cli/fast-orchestrate.js and every
// dist module it can reach, ~140) into one script, dist/cli/fast-orchestrate.bundle.cjs, that
// src/cli/orchestrate-bundle.ts compiles with node:vm and a V8 code cache kept under
// $COMIS_HOME/cache. Loading ~100 ES modules one by one (resolve, read, compile, link) was most
// of what comis itself spent before a run's jail was spawned (bench/README.md, issue 20).
//
// What the bundle keeps as it was:
// - laziness: esbuild's CommonJS output initialises a module only when it is first imported,
//   statically or by import(); a package a lazily imported module needs is require()d then, and a
//   package the sources import() is import()ed by the loader, an ES module beside the bundle
//   (node's own ESM loader, as before; a vm script's own import() would need experimental
//   hooks). A plain run still loads no zod, yaml, MCP SDK,
//   undici or DuckDB (test/e2e/run-hot-path.test.ts, which sees the bundle's modules, below);
// - one instance of every module (ComisError, the lease registry, the output guard's secrets);
// - `import.meta.url`: each module gets its own dist/ file's URL (files next to it, workers, SDK).
//
// Next to it, dist/cli/fast-orchestrate.bundle.json: the dist files it was built from with their
// sizes (the loader uses the bundle only while every one is unchanged and none is newer: else
// `npm run build:fast` or an edited dist file would be shadowed), the bundle's SHA-256 (its code
// cache is keyed by it), and the modules evaluated as soon as the bundle loads (the rest record
// their first use: the import tracer of the tests lists both as dist files). Run last in
// `npm run build`, after everything that writes dist/.
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { bundleCjs } from './lib/bundle-cjs.mjs';
import { bundleInputs } from './lib/bundle-inputs.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const outfile = join(dist, 'cli/fast-orchestrate.bundle.cjs');
// The transformations (import.meta.url, the lazy-module helper, import(), minification, the
// wrapper) are scripts/lib/bundle-cjs.mjs's, shared with the skill scan bundle.
const { wrapped, metafile, eager: eagerOf } = await bundleCjs(join(dist, 'cli/fast-orchestrate.js'), outfile, dist, 'build-orchestrate-bundle.mjs');
// src/cli/orchestrate-bundle.ts reads it as a one-byte (latin1) string, without decoding: ASCII only.
if (/[^\x00-\x7f]/.test(wrapped)) throw new Error('build-orchestrate-bundle.mjs: the bundle is not ASCII');
const inputs = bundleInputs(metafile, root, dist, 'build-orchestrate-bundle.mjs');
const eager = eagerOf(Object.keys(inputs));
writeFileSync(outfile, wrapped);
const sha256 = createHash('sha256').update(wrapped).digest('hex');
// Written after the bundle, so the bundle is never newer than the list that vouches for it.
writeFileSync(join(dist, 'cli/fast-orchestrate.bundle.json'), `${JSON.stringify({ sha256, eager, inputs })}\n`);
process.stdout.write(`dist/cli/fast-orchestrate.bundle.cjs written (${Object.keys(inputs).length} modules, ${eager.length} evaluated on load)\n`);
