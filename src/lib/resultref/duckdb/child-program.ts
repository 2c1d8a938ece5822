/**
 * The DuckDB child's program text, for the spawner to write into the child's
 * private directory (as `query-child.mjs`: in the jail no package.json says
 * "module", so the extension must).
 *
 * The program is an ordinary, type-checked module, query-child.ts, that the
 * build compiles like every other. Where comis runs from dist/ (the packed
 * install, `bin/comis.js`), tsc's output `query-child.js` sits beside this
 * module and is used as is. Where it runs from src/ (vitest, the benches),
 * there is no compiled sibling and Node 20 cannot strip types, so the source
 * is type-stripped here with esbuild (already the runtime dependency that
 * transpiles users' TS scripts); the module has no TS-only runtime
 * constructs, so both compilers print the same program. Read once per process.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const COMPILED = new URL('./query-child.js', import.meta.url);
const SOURCE = new URL('./query-child.ts', import.meta.url);

let program: string | undefined;

export function queryChildProgram(): string {
  if (program !== undefined) return program;
  if (existsSync(COMPILED)) {
    program = readFileSync(COMPILED, 'utf8');
  } else {
    // Loaded only on this source-tree path: production never imports esbuild for the slicer.
    const esbuild = createRequire(import.meta.url)('esbuild') as typeof import('esbuild');
    program = esbuild.transformSync(readFileSync(SOURCE, 'utf8'), { loader: 'ts', format: 'esm', target: 'node20', sourcefile: 'query-child.ts' }).code;
  }
  return program;
}
