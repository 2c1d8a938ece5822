/**
 * The DuckDB child is an ordinary module (src/lib/resultref/duckdb/query-child.ts)
 * that runs ALONE in its jail: only itself and the @duckdb packages are there.
 * Whichever compiler printed it (esbuild from src/, tsc into dist/), the program
 * the spawner writes must import nothing but Node's builtins.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { queryChildProgram } from '../../src/lib/resultref/duckdb/child-program.js';
import { repoRoot } from '../helpers/cli.js';

function importsOf(program: string): string[] {
  return [...program.matchAll(/^\s*(?:import|export)\b[^'"]*?\bfrom\s*['"]([^'"]+)['"]|^\s*import\s*['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]/gm)].map((m) => m[1] ?? m[2] ?? m[3]!);
}

describe('the DuckDB child program', () => {
  it('from the source tree: type-stripped, ESM, importing only node: builtins', () => {
    const program = queryChildProgram();
    expect(program).toContain('SET lock_configuration = true');
    expect(program).not.toMatch(/\binterface\s+DuckApi\b/); // types are gone
    const imports = importsOf(program);
    expect(imports.length).toBeGreaterThan(0);
    expect(imports.filter((m) => !m.startsWith('node:'))).toEqual([]);
  });

  it('as built into dist/ (what the packed install runs): the same, with the wire types erased', () => {
    const built = join(repoRoot, 'dist/lib/resultref/duckdb/query-child.js');
    if (!existsSync(built)) return expect.fail('dist/ is not built: run `npm run build` (npm test does)');
    const program = readFileSync(built, 'utf8');
    expect(program).toContain('SET lock_configuration = true');
    expect(importsOf(program).filter((m) => !m.startsWith('node:'))).toEqual([]);
  });
});
