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
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

import { build, transform } from 'esbuild';

import { bundleInputs } from './lib/bundle-inputs.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const outfile = join(dist, 'cli/fast-orchestrate.bundle.cjs');

/** `import.meta.url` of a dist module, as the URL of that module's own file (the loader supplies __comisUrl). */
const importMetaUrl = {
  name: 'comis-import-meta-url',
  setup(b) {
    b.onLoad({ filter: /\.js$/ }, (args) => {
      const path = relative(dist, args.path);
      if (path.startsWith('..')) return undefined;
      const text = readFileSync(args.path, 'utf8');
      const contents = text.replaceAll('import.meta.url', `__comisUrl(${JSON.stringify(path)})`);
      if (/import\.meta/.test(contents)) throw new Error(`${path} uses import.meta beyond import.meta.url: teach build-orchestrate-bundle.mjs about it`);
      return { contents, loader: 'js' };
    });
  },
};

const result = await build({
  entryPoints: [join(dist, 'cli/fast-orchestrate.js')],
  write: false,
  outfile,
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  packages: 'external',
  metafile: true,
  plugins: [importMetaUrl],
  logLevel: 'warning',
  // Top-level await and the like cannot become CommonJS: fail the build rather than ship a broken path.
  logOverride: { 'empty-import-meta': 'error' },
});
let code = result.outputFiles[0].text;

// esbuild's lazy-module helper, taught to say which module it initialises (see the header).
const ESM_INIT = '    return fn && (res = (0, fn[__getOwnPropNames(fn)[0]])(fn = 0)), res;';
if (code.split(ESM_INIT).length !== 2) throw new Error("build-orchestrate-bundle.mjs: esbuild's __esm helper changed shape; update ESM_INIT");
code = code.replace(ESM_INIT, '    return fn && (__comisLoaded(__getOwnPropNames(fn)[0]), res = (0, fn[__getOwnPropNames(fn)[0]])(fn = 0)), res;');

// A package the sources import() is imported by the loader (an ES module next to the bundle, so the
// specifier resolves as it did from dist/): a vm script's own import() needs node's experimental hooks.
code = code.replace(/\bimport\((["'][^"'\n]+["'])\)/g, '__comisImport($1)');
if (/\bimport\(/.test(code)) throw new Error('build-orchestrate-bundle.mjs: an import() with a computed specifier is left in the bundle; give it a literal one');

const inputs = bundleInputs(result.metafile, root, dist, 'build-orchestrate-bundle.mjs');
// Modules esbuild did not wrap are evaluated when the bundle loads: every input not named by an __esm key.
const lazy = new Set([...code.matchAll(/= __esm\(\{\n {2}"(dist\/[^"]+)"\(\)/g)].map((m) => relative('dist', m[1])));
const eager = Object.keys(inputs).filter((p) => !lazy.has(p));

// Less to read and compile per run (names stay: stack traces, error classes). ASCII only (esbuild
// escapes the rest), so the loader reads it as a one-byte string without decoding it.
code = (await transform(code, { minifyWhitespace: true, minifySyntax: true, charset: 'ascii', legalComments: 'none' })).code;
if (/[^\x00-\x7f]/.test(code)) throw new Error('build-orchestrate-bundle.mjs: the bundle is not ASCII');

// A function of the CommonJS module scope plus the three names the loader supplies.
const wrapped = `(function (exports, require, module, __filename, __dirname, __comisUrl, __comisLoaded, __comisImport) {\n${code}\n})`;
writeFileSync(outfile, wrapped);
const sha256 = createHash('sha256').update(wrapped).digest('hex');
// Written after the bundle, so the bundle is never newer than the list that vouches for it.
writeFileSync(join(dist, 'cli/fast-orchestrate.bundle.json'), `${JSON.stringify({ sha256, eager, inputs })}\n`);
process.stdout.write(`dist/cli/fast-orchestrate.bundle.cjs written (${Object.keys(inputs).length} modules, ${eager.length} evaluated on load)\n`);
