/**
 * Inline results that are data offer the ResultRef methods: the seed's
 * `results.jq("[.[].url][0:3]")` and `page.read(0, 60)` work whatever the
 * size. Checked from TS and Python against the same calls on a ResultRef of
 * the same data (same answers), with the values still plain JSON for
 * JSON.stringify / json.dumps, and .sql/.jsonpath on an inline value refused
 * with a clear code.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { parseJson } from '../helpers/cli.js';
import { runComisAsync, startFakeSearch, type FakeHit } from '../helpers/fake-search.js';
import { makeHome } from '../helpers/orchestrate.js';

const hitsFor = (query: string): FakeHit[] =>
  Array.from({ length: query === 'big' ? 20 : 3 }, (_, i) => ({
    title: `Result ${i}`,
    url: `https://example.org/r${i}`,
    snippet: query === 'big' ? `${'long snippet '.repeat(70)}${i}` : `short ${i}`,
  }));

async function home(): Promise<ReturnType<typeof makeHome>> {
  const fake = await startFakeSearch('searxng', hitsFor);
  const h = makeHome(`agents:\n  default:\n    web:\n      search:\n        provider: searxng\n        baseUrl: ${fake.baseUrl}\n        maxCount: 20\n`);
  const ws = h.workspace();
  writeFileSync(join(ws, 'notes.md'), 'first line\nTODO: ship it\nlast line\n');
  mkdirSync(join(ws, 'memory'));
  writeFileSync(join(ws, 'memory', 'ops.md'), '# Ops\n\nThe deploy runbook.\n');
  return h;
}

const EXPECTED = {
  smallIsRef: false,
  bigIsRef: true,
  plain: true,
  keys: ['0', '1', '2'],
  jq: ['https://example.org/r0', 'https://example.org/r1'],
  bigJq: ['https://example.org/r0', 'https://example.org/r1'],
  readIsJson: true,
  bigReadIsJson: true,
  grep: 1,
  bigGrep: 1,
  sql: 'inline_result',
  jsonpath: 'inline_result',
  refused: 'jq_refused',
  mem: 'memory/ops.md',
  page: 'TODO: ship it',
  pageGrep: [{ line: 2, text: 'TODO: ship it' }],
};

describe('inline results offer the ResultRef methods', () => {
  it('TS: .jq/.read/.grep on an inline web_search, memory_search and read answer as on a ResultRef; JSON.stringify sees plain data', async () => {
    const h = await home();
    const script = h.script(
      'inline.ts',
      `import { comis_tools, ResultRef } from './comis_tools.js';
const small = await comis_tools.web_search({ query: 'small', count: 3 });
const big = await comis_tools.web_search({ query: 'big', count: 20 });
const code = (p: Promise<unknown>) => p.then(() => 'NO ERROR', (e: { code: string }) => e.code);
const mem = await comis_tools.memory_search({ query: 'runbook' });
const page = await comis_tools.read({ path: 'notes.md' });
console.log(JSON.stringify({
  smallIsRef: small instanceof ResultRef,
  bigIsRef: big instanceof ResultRef,
  plain: JSON.stringify(small) === JSON.stringify(JSON.parse(JSON.stringify(small))) && !JSON.stringify(small).includes('jq'),
  keys: Object.keys(small),
  jq: await small.jq('[.[].url][0:2]'),
  bigJq: await big.jq('[.[].url][0:2]'),
  readIsJson: (await small.read(0, 1)) === JSON.stringify(small),
  bigReadIsJson: JSON.parse(await big.read(0, 1)).length === 20,
  grep: (await small.grep('example')).length,
  bigGrep: (await big.grep('example')).length,
  sql: await code(small.sql('SELECT 1')),
  jsonpath: await code(small.jsonpath('$[0]')),
  refused: await code(small.jq('$ENV')),
  mem: await mem.jq('.matches[0].path'),
  page: await page.read(1, 1),
  pageGrep: await page.grep('TODO'),
}));
`,
    );
    const res = await runComisAsync(['orchestrate', script, '--json'], { home: h.home });
    const body = parseJson(res.stdout);
    expect(body.status, res.stdout + res.stderr).toBe('ok');
    expect(JSON.parse(body.result.stdout)).toEqual(EXPECTED);
  });

  it('Python: the same methods on list and dict results, which json.dumps and print still see as plain data', async () => {
    const h = await home();
    const script = h.script(
      'inline.py',
      `import json, comis_tools
small = comis_tools.web_search({"query": "small", "count": 3})
big = comis_tools.web_search({"query": "big", "count": 20})
def code(f):
    try:
        f()
        return "NO ERROR"
    except comis_tools.ComisToolError as e:
        return e.code
mem = comis_tools.memory_search({"query": "runbook"})
page = comis_tools.read({"path": "notes.md"})
print(json.dumps({
    "smallIsRef": isinstance(small, comis_tools.ResultRef),
    "bigIsRef": isinstance(big, comis_tools.ResultRef),
    "plain": isinstance(small, list) and json.loads(json.dumps(small)) == list(small) and str(small) == str(list(small)),
    "keys": [str(i) for i in range(len(small))],
    "jq": small.jq("[.[].url][0:2]"),
    "bigJq": big.jq("[.[].url][0:2]"),
    "readIsJson": json.loads(small.read(0, 1)) == list(small),
    "bigReadIsJson": len(json.loads(big.read(0, 1))) == 20,
    "grep": len(small.grep("example")),
    "bigGrep": len(big.grep("example")),
    "sql": code(lambda: small.sql("SELECT 1")),
    "jsonpath": code(lambda: small.jsonpath("$[0]")),
    "refused": code(lambda: small.jq("$ENV")),
    "mem": mem.jq(".matches[0].path"),
    "page": page.read(1, 1),
    "pageGrep": page.grep("TODO"),
}))
`,
    );
    const res = await runComisAsync(['orchestrate', script, '--json'], { home: h.home });
    const body = parseJson(res.stdout);
    expect(body.status, res.stdout + res.stderr).toBe('ok');
    expect(JSON.parse(body.result.stdout)).toEqual(EXPECTED);
  });
});
