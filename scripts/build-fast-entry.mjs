// Bundles dist/cli/fast-entry.js (src/cli/fast-entry.ts) and what it imports into one CommonJS
// file, dist/cli/fast-entry.cjs, which bin/comis.js (CommonJS) requires for `orchestrate` and
// `skill scan`: no ES module loader on those paths (see fast-entry.ts). The modules' fallbacks
// (`import('./fast-orchestrate.js')`, `import('./fast-skill-scan.js')`) stay real imports of the
// dist files, and `import.meta.url` becomes the URL of each module's own dist file, as it was.
import { build } from 'esbuild';
import { join, dirname, relative } from 'node:path';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const outfile = join(dist, 'cli/fast-entry.cjs');
const FALLBACKS = /^\.\/fast-(orchestrate|skill-scan)\.js$/;
const result = await build({
  entryPoints: [join(dist, 'cli/fast-entry.js')],
  write: false,
  outfile,
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  packages: 'external',
  logLevel: 'warning',
  logOverride: { 'empty-import-meta': 'error' },
  banner: { js: '"use strict";\nconst __comisUrl = (p) => require("node:url").pathToFileURL(require("node:path").join(__dirname, "..", p)).href;' },
  plugins: [
    {
      name: 'comis-fast-entry',
      setup(b) {
        b.onResolve({ filter: FALLBACKS }, (args) => ({ path: args.path, external: true }));
        b.onLoad({ filter: /\.js$/ }, (args) => {
          const path = relative(dist, args.path);
          if (path.startsWith('..')) return undefined;
          const contents = readFileSync(args.path, 'utf8').replaceAll('import.meta.url', `__comisUrl(${JSON.stringify(path)})`);
          if (/import\.meta/.test(contents)) throw new Error(`build-fast-entry.mjs: ${path} uses import.meta beyond import.meta.url`);
          return { contents, loader: 'js' };
        });
      },
    },
  ],
});
const code = result.outputFiles[0].text;
// The fallbacks must stay import()s of the dist files (esbuild would otherwise inline or require them).
for (const name of ['fast-orchestrate', 'fast-skill-scan']) {
  if (!code.includes(`import("./${name}.js")`)) throw new Error(`build-fast-entry.mjs: the fallback import("./${name}.js") is not in the bundle`);
}
writeFileSync(outfile, code);
process.stdout.write(`dist/cli/fast-entry.cjs written (${code.length} bytes)\n`);
