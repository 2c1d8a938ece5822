// Bundles bin/comis.js's `skill scan` fast path (dist/cli/fast-skill-scan.js and the ~40
// scanner modules it loads) into one file, dist/cli/fast-skill-scan.bundle.js: loading one
// module instead of forty is a good part of what a one-file scan costs (bench/README.md,
// issue 19). npm packages stay outside it (loaded from node_modules as before).
//
// Next to it, dist/cli/fast-skill-scan.bundle.json lists the dist files it was built from
// with their sizes. bin/comis.js uses the bundle only while every one of them has that size
// and none is newer than the bundle; otherwise (`npm run build:fast`, which rebuilds dist
// without this step, or an edited dist file) it loads the modules themselves. Run last in
// `npm run build`, after everything that writes dist/.
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { build } from 'esbuild';

import { bundleInputs } from './lib/bundle-inputs.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const outfile = join(dist, 'cli/fast-skill-scan.bundle.js');
const result = await build({
  entryPoints: [join(dist, 'cli/fast-skill-scan.js')],
  outfile,
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  packages: 'external',
  metafile: true,
  logLevel: 'warning',
});
const inputs = bundleInputs(result.metafile, root, dist, 'build-skill-scan-bundle.mjs');
// Written after the bundle, so the bundle is never newer than the list that vouches for it.
writeFileSync(join(dist, 'cli/fast-skill-scan.bundle.json'), `${JSON.stringify({ inputs })}\n`);
process.stdout.write(`dist/cli/fast-skill-scan.bundle.js written (${Object.keys(inputs).length} modules)\n`);
