/**
 * The types of inline data results: a data tool's result type is
 * `Sliceable<…>`, so the seed's `results.jq(...)` / `page.read(0, 60)`
 * type-check under strict whether the value is inline or a ResultRef, in TS
 * against comis_tools.ts and in JS (checkJs) against comis_tools.d.ts; a tool
 * whose result is not data (write) gets no slicing methods.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { emitSdk } from '../../src/lib/sdk/emit.js';
import { writeSdkFiles } from '../../src/lib/sdk/files.js';
import { repoRoot } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp.js';

const USE = `const results = await comis_tools.web_search({ query: 'comis autonomy model' });
const urls = (await results.jq('[.[].url][0:3]')) as string[];
const first: string | undefined = results instanceof ResultRef ? undefined : results[0]?.url;
const found = await comis_tools.memory_search({ query: 'runbook' });
const top = 'type' in found ? await found.read(0, 1) : found.matches[0]?.snippet;
const page = await comis_tools.read({ path: 'notes.md' });
const head: string = await page.read(0, 60);
const hits: Array<{ line: number; text: string }> = await page.grep('TODO');
const rows = await results.sql('SELECT 1');
console.log(urls, first, top, head, hits, rows, await found.jsonpath('$.matches'));
`;

describe('inline data results are typed with the ResultRef methods', () => {
  it('TS (comis_tools.ts) and JS with checkJs (comis_tools.d.ts) accept the seed calls; write results have no .jq', () => {
    const base = tempDir();
    const ts = join(base, 'ts');
    const js = join(base, 'js');
    mkdirSync(ts);
    mkdirSync(js);
    writeSdkFiles(ts, emitSdk('ts'));
    writeSdkFiles(js, emitSdk('js'));
    for (const d of [ts, js]) writeFileSync(join(d, 'package.json'), '{"type":"module"}\n');
    writeFileSync(join(ts, 'script.ts'), `import { comis_tools, ResultRef } from './comis_tools.js';\n${USE}`);
    writeFileSync(join(js, 'script.mjs'), `import { comis_tools, ResultRef } from './comis_tools.js';\n${USE.replace(' as string[]', '').replace(/(const \w+): [^=]+ =/g, '$1 =')}`);
    writeFileSync(join(ts, 'bad.ts'), `import { comis_tools } from './comis_tools.js';\nconst w = await comis_tools.write({ path: 'a', content: 'b' });\nawait w.jq('.');\n`);
    const compilerOptions = { strict: true, allowJs: true, checkJs: true, module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', noEmit: true, types: ['node'], typeRoots: [join(repoRoot, 'node_modules/@types')] };
    writeFileSync(join(base, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['ts/script.ts', 'js/script.mjs', 'ts/bad.ts'] }));
    const tsc = join(repoRoot, 'node_modules/typescript/bin/tsc');
    const res = spawnSync(process.execPath, [tsc, '-p', join(base, 'tsconfig.json')], { encoding: 'utf8' });
    // The only error is the deliberate one: write's result is not data.
    expect(res.stdout.trim().split('\n')).toEqual([expect.stringMatching(/ts\/bad\.ts\(3,9\): error TS2339: Property 'jq' does not exist on type/)]);
  });
});
