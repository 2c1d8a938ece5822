// Bundles dist/cli/fast-entry.js (src/cli/fast-entry.ts) and what it imports into one CommonJS
// file, dist/cli/fast-entry.cjs, which bin/comis.js (CommonJS) requires for `orchestrate` and
// `skill scan`: no ES module loader on those paths (see fast-entry.ts). The modules' fallbacks
// (`import('./fast-orchestrate.js')`, `import('./fast-skill-scan.js')`) stay real imports of the
// dist files, and `import.meta.url` becomes the URL of each module's own dist file, as it was.
import { build } from 'esbuild';
import { join, dirname } from 'node:path';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

import { cjsBuildOptions } from './lib/bundle-cjs.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const outfile = join(dist, 'cli/fast-entry.cjs');
const FALLBACKS = /^\.\/fast-(orchestrate|skill-scan)\.js$/;
const keepFallbacks = { name: 'comis-fast-entry-fallbacks', setup: (b) => b.onResolve({ filter: FALLBACKS }, (args) => ({ path: args.path, external: true })) };
const result = await build({
  ...cjsBuildOptions(join(dist, 'cli/fast-entry.js'), outfile, dist, 'build-fast-entry.mjs', [keepFallbacks]),
  // A plain CommonJS file that bin/comis.js requires: __comisUrl is defined at its top.
  banner: { js: '"use strict";\nconst __comisUrl = (p) => require("node:url").pathToFileURL(require("node:path").join(__dirname, "..", p)).href;' },
});
const code = result.outputFiles[0].text;
// The fallbacks must stay import()s of the dist files (esbuild would otherwise inline or require them).
for (const name of ['fast-orchestrate', 'fast-skill-scan']) {
  if (!code.includes(`import("./${name}.js")`)) throw new Error(`build-fast-entry.mjs: the fallback import("./${name}.js") is not in the bundle`);
}
writeFileSync(outfile, code);
process.stdout.write(`dist/cli/fast-entry.cjs written (${code.length} bytes)\n`);
