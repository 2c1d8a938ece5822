// One CommonJS script of a fast path's dist modules, for node:vm with a V8 code cache
// (src/cli/bundle-loader.ts). The same transformations as scripts/build-orchestrate-bundle.mjs
// (see its header): `import.meta.url` becomes each module's own dist file URL (__comisUrl),
// esbuild's lazy-module helper reports the modules it initialises (__comisLoaded), a package's
// import() goes through the loader (__comisImport), whitespace-minified (esbuild escapes
// non-ASCII in strings, not in regex literals or String.raw templates, so the loader reads it as
// UTF-8), wrapped in a function of the CommonJS module scope plus those three names.
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';

import { build, transform } from 'esbuild';

/**
 * esbuild's options for one CommonJS file of dist modules (packages stay external), with
 * `import.meta.url` of each dist module as the URL of that module's own file, through a function
 * `__comisUrl(pathInDist)` that the file's loader supplies. `extra` plugins run first.
 */
export function cjsBuildOptions(entry, outfile, dist, script, extra = []) {
  const importMetaUrl = {
    name: 'comis-import-meta-url',
    setup(b) {
      b.onLoad({ filter: /\.js$/ }, (args) => {
        const path = relative(dist, args.path);
        if (path.startsWith('..')) return undefined;
        const text = readFileSync(args.path, 'utf8');
        const contents = text.replaceAll('import.meta.url', `__comisUrl(${JSON.stringify(path)})`);
        if (/import\.meta/.test(contents)) throw new Error(`${path} uses import.meta beyond import.meta.url: teach ${script} about it`);
        return { contents, loader: 'js' };
      });
    },
  };
  return {
    entryPoints: [entry],
    write: false,
    outfile,
    bundle: true,
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    packages: 'external',
    metafile: true,
    plugins: [...extra, importMetaUrl],
    logLevel: 'warning',
    // Top-level await and the like cannot become CommonJS: fail the build rather than ship a broken path.
    logOverride: { 'empty-import-meta': 'error' },
  };
}

export async function bundleCjs(entry, outfile, dist, script) {
  const result = await build(cjsBuildOptions(entry, outfile, dist, script));
  let code = result.outputFiles[0].text;

  const ESM_INIT = '    return fn && (res = (0, fn[__getOwnPropNames(fn)[0]])(fn = 0)), res;';
  if (code.split(ESM_INIT).length !== 2) throw new Error(`${script}: esbuild's __esm helper changed shape; update ESM_INIT`);
  code = code.replace(ESM_INIT, '    return fn && (__comisLoaded(__getOwnPropNames(fn)[0]), res = (0, fn[__getOwnPropNames(fn)[0]])(fn = 0)), res;');

  // A node builtin needs no resolution: required (a CommonJS require of a builtin skips the ES module
  // facade that import() builds over all of its exports); a package goes through the loader.
  code = code.replace(/\bimport\((["'])(node:[a-z0-9_/]+)\1\)/g, 'Promise.resolve(require("$2"))');
  code = code.replace(/\bimport\((["'][^"'\n]+["'])\)/g, '__comisImport($1)');
  if (/\bimport\(/.test(code)) throw new Error(`${script}: an import() with a computed specifier is left in the bundle; give it a literal one`);

  // Modules esbuild did not wrap are evaluated when the bundle loads: every input not named by an __esm key.
  const lazy = new Set([...code.matchAll(/= __esm\(\{\n {2}"(dist\/[^"]+)"\(\)/g)].map((m) => relative('dist', m[1])));
  const eager = (inputs) => inputs.filter((p) => !lazy.has(p));

  code = (await transform(code, { minifyWhitespace: true, minifySyntax: true, charset: 'ascii', legalComments: 'none' })).code;

  const wrapped = `(function (exports, require, module, __filename, __dirname, __comisUrl, __comisLoaded, __comisImport) {\n${code}\n})`;
  return { wrapped, metafile: result.metafile, eager };
}
