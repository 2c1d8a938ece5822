import { describe, expect, it } from 'vitest';

import { footprintOf, scanJavaScript, scanPython, slicesResults } from '../../src/lib/orchestrate/preflight.js';
import { prepareScript } from '../../src/lib/orchestrate/transpile.js';

async function jsFootprint(code: string) {
  return footprintOf(await scanJavaScript(code));
}

describe('pre-flight scan', () => {
  it('finds comis_tools calls in ESM, CommonJS and aliased forms', async () => {
    expect(await jsFootprint(`import { comis_tools } from './comis_tools.js';\nawait comis_tools.read({ path: 'a' });\nawait comis_tools.grep({ pattern: 'x' });`)).toEqual({
      tools: ['grep', 'read'],
      capabilities: ['orch:read'],
      parsed: true,
    });
    expect((await jsFootprint(`import { comis_tools as t } from './comis_tools.js'; await t.write({path:'a',content:'b'});`)).capabilities).toEqual(['orch:write']);
    expect((await jsFootprint(`import * as sdk from './comis_tools.js'; await sdk.comis_tools['write']({path:'a',content:'b'});`)).tools).toEqual(['write']);
    expect((await jsFootprint(`const { comis_tools } = require('./comis_tools.js'); comis_tools.read({path:'a'});`)).tools).toEqual(['read']);
    expect((await jsFootprint(`const sdk = require('./comis_tools.js'); sdk.comis_tools.grep({pattern:'a'});`)).tools).toEqual(['grep']);
    expect((await jsFootprint(`comis_tools.invoke('write', {});`)).tools).toEqual(['write']);
  });

  it('names orch:web for web_search and orch:read for memory_search / memory_get, from the table', async () => {
    expect(await jsFootprint(`await comis_tools.web_search({ query: 'q' }); await comis_tools.memory_search({ query: 'q' }); await comis_tools.memory_get({ path: 'memory/a.md' });`)).toEqual({
      tools: ['memory_get', 'memory_search', 'web_search'],
      capabilities: ['orch:read', 'orch:web'],
      parsed: true,
    });
  });

  it('misses dynamically computed names (advisory: the socket still gates them)', async () => {
    const f = await jsFootprint(`const name = 'wr' + 'ite'; await comis_tools[name]({ path: 'a', content: 'b' });`);
    expect(f.tools).toEqual([]);
  });

  it('ignores describe and names not in the table, and survives unparseable code', async () => {
    expect((await jsFootprint(`comis_tools.describe(); comis_tools.nope();`)).tools).toEqual([]);
    expect(await jsFootprint('this is not javascript(')).toEqual({ tools: [], capabilities: [], parsed: false });
  });

  it('scans transpiled TypeScript', async () => {
    const ts = await prepareScript(`import { comis_tools } from './comis_tools.js';\nconst r: { content: string } = await comis_tools.read({ path: 'x' });\nconsole.log(r.content as string);`, 'ts', 'job.ts');
    expect(ts.fileName).toBe('script.mjs');
    expect((await jsFootprint(ts.code)).tools).toEqual(['read']);
  });

  it('reports a TypeScript syntax error with file, line and column, before running anything', async () => {
    await expect(prepareScript('const x: number = ;\n', 'ts', 'bad.ts')).rejects.toMatchObject({ code: 'INPUT_INVALID', message: expect.stringContaining('bad.ts:1:19') });
  });

  it('scans Python with the ast module, including aliases and from-imports', () => {
    const f = footprintOf(scanPython(`import comis_tools as ct\nfrom comis_tools import write as w\nct.read({"path": "a"})\nw({"path": "x", "content": "y"})\nct.invoke("grep", {"pattern": "p"})\n`, 'python3'));
    expect(f).toEqual({ tools: ['grep', 'read', 'write'], capabilities: ['orch:read', 'orch:write'], parsed: true });
    expect(scanPython('def (:\n', 'python3').parsed).toBe(false);
  });
});

describe('pre-flight: does the script slice ResultRefs (pre-warm a DuckDB child)', () => {
  it('sees .sql( and .jsonpath( in either language, and nothing else', () => {
    expect(slicesResults("const rows = await ref.sql('SELECT 1');")).toBe(true);
    expect(slicesResults('v = ref.jsonpath ("$.a")')).toBe(true);
    expect(slicesResults('rows = ref.sql(\n  "SELECT 1")')).toBe(true);
    expect(slicesResults("const r = await ref.jq('.a'); const s = 'sql'; print(ref.read())")).toBe(false);
    expect(slicesResults('mysql(1); ref.sqlish(2)')).toBe(false);
  });
});
