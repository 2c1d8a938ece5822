/**
 * Finds the optional `@duckdb/node-api` package and its native binding for
 * this platform without importing them (importing costs ~100 ms and belongs
 * in the child, which loads it from the path found here).
 */
import { createRequire } from 'node:module';
import { dirname } from 'node:path';

import type { ResolveDuckDb } from './slice-types.js';

const require = createRequire(import.meta.url);

export const resolveDuckDb: ResolveDuckDb = () => {
  try {
    const apiPkg = require.resolve('@duckdb/node-api/package.json');
    const apiDir = dirname(apiPkg);
    const scopeDir = dirname(apiDir);
    const bindingsPkg = require.resolve('@duckdb/node-bindings/package.json', { paths: [apiDir] });
    const nativePkg = require.resolve(`@duckdb/node-bindings-${process.platform}-${process.arch}/package.json`, { paths: [dirname(bindingsPkg)] });
    // The child (and a jail) sees one `@duckdb` directory: all three must live in it.
    if (dirname(dirname(bindingsPkg)) !== scopeDir || dirname(dirname(nativePkg)) !== scopeDir) return undefined;
    const { version } = require(apiPkg) as { version: string };
    return { scopeDir, version };
  } catch {
    return undefined;
  }
};

/** True when `.sql()`/`.jsonpath()` can run here (the optional dependency is installed). */
export function isDuckDbAvailable(resolve: ResolveDuckDb = resolveDuckDb): boolean {
  return resolve() !== undefined;
}
