import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { parseJson } from '../helpers/cli.js';
import { makeHome } from '../helpers/orchestrate.js';

/** A 5 MB JSONL in the workspace; the marker appears in every row, never in a 5-row slice. */
function seed(ws: string): number {
  const rows: string[] = [];
  for (let i = 0; i < 40_000; i++) rows.push(JSON.stringify({ id: i, price: (i * 7919) % 1000, name: `item-${i}`, blob: 'PAYLOAD-MARKER'.padEnd(90, 'x') }));
  const text = `${rows.join('\n')}\n`;
  writeFileSync(join(ws, 'data.jsonl'), text);
  return Buffer.byteLength(text);
}

describe('ResultRef end to end', () => {
  it('TS: a 5 MB JSONL comes back as a ResultRef; .sql/.jq/.grep/.read/.jsonpath print small slices; the record has refs and savings', () => {
    const h = makeHome();
    const bytes = seed(h.workspace());
    writeFileSync(join(h.workspace(), 'doc.json'), JSON.stringify({ items: Array.from({ length: 3000 }, (_, i) => ({ price: i, tag: 'PAYLOAD-MARKER' })) }));
    const script = h.script(
      'slice.ts',
      `import { comis_tools, ResultRef } from './comis_tools.js';
const ref = await comis_tools.read({ path: 'data.jsonl' });
if (!(ref instanceof ResultRef)) throw new Error('expected a ResultRef');
const top = await ref.sql(\`SELECT id, price FROM read_json_auto('\${ref.ref}') WHERE price > 990 ORDER BY price DESC, id LIMIT 5\`);
const jq = (await ref.jq('select(.price > 998) | .id')) as number[];
const hits = await ref.grep('"id":1234[0-9],');
const head = await ref.read(2, 1);
const doc = await comis_tools.read({ path: 'doc.json' });
const price = doc instanceof ResultRef ? await doc.jsonpath('$.items[7].price') : null;
console.log(JSON.stringify({ kind: ref.kind, rows: ref.rows, top, jq: jq.slice(0, 5), hits: hits.length, head: JSON.parse(head).id, price }));
`,
    );
    const res = h.run(['orchestrate', script, '--json']);
    const body = parseJson(res.stdout);
    expect(body.status, res.stdout).toBe('ok');
    const out = JSON.parse(body.result.stdout);
    expect(out.kind).toBe('jsonl');
    expect(out.rows).toBe(40_000);
    expect(out.top).toHaveLength(5);
    expect(out.top[0].price).toBe(999);
    expect(out.jq.length).toBeGreaterThan(0);
    expect(out.hits).toBe(10);
    expect(out.head).toBe(2);
    expect(out.price).toBe(7);
    expect(body.result.stdout).not.toContain('PAYLOAD-MARKER');
    expect(body.result.resultRefs.count).toBe(2);
    expect(body.result.resultRefs.bytes).toBeGreaterThan(bytes);
    expect(body.result.savings.estSavedTokens).toBeGreaterThan(1_000_000);
    expect(body.result.savings.savedRatio).toBeGreaterThan(0.99);
  });

  it('Python: the same slices, synchronously', () => {
    const h = makeHome();
    seed(h.workspace());
    const script = h.script(
      'slice.py',
      `import json, comis_tools
ref = comis_tools.read({"path": "data.jsonl"})
assert isinstance(ref, comis_tools.ResultRef), ref
top = ref.sql(f"SELECT id, price FROM read_json_auto('{ref.ref}') WHERE price > 990 ORDER BY price DESC, id LIMIT 5")
ids = ref.jq("select(.price > 998) | .id")
hits = ref.grep('"id": ?1234[0-9],')
head = json.loads(ref.read(3, 1))["id"]
print(json.dumps({"top": top, "ids": ids[:3], "hits": len(hits), "head": head, "rows": ref.rows}))
`,
    );
    const res = h.run(['orchestrate', script, '--json']);
    const body = parseJson(res.stdout);
    expect(body.status, res.stdout).toBe('ok');
    const out = JSON.parse(body.result.stdout);
    expect(out.top).toHaveLength(5);
    expect(out.hits).toBe(10);
    expect(out.head).toBe(3);
    expect(out.rows).toBe(40_000);
    expect(body.result.stdout).not.toContain('PAYLOAD-MARKER');
    expect(body.result.savings.estSavedTokens).toBeGreaterThan(1_000_000);
  });

  it('refused SQL and jq tricks are errors in the script, never data', () => {
    const h = makeHome();
    seed(h.workspace());
    const script = h.script(
      'evil.mjs',
      `import { comis_tools } from './comis_tools.js';
const ref = await comis_tools.read({ path: 'data.jsonl' });
const tries = [
  () => ref.sql("SELECT * FROM read_csv('/etc/passwd')"),
  () => ref.sql("SELECT content FROM read_text('/etc/hostname')"),
  () => ref.sql("INSTALL httpfs"),
  () => ref.sql("SET enable_external_access = true"),
  () => ref.jq('$ENV'),
  () => ref.jq('input_filename'),
  () => ref.jq('import "x" as y; .'),
];
for (const t of tries) {
  try { const r = await t(); console.log('ALLOWED', JSON.stringify(r).slice(0, 80)); } catch (e) { console.log('refused', e.code); }
}
`,
    );
    const res = h.run(['orchestrate', script]);
    expect(res.status).toBe(0);
    expect(res.stdout).not.toContain('ALLOWED');
    expect(res.stdout).not.toContain('root:');
    expect(res.stdout.trim().split('\n')).toHaveLength(7);
  });

  it('a result over the per-file cap is a clear tool error', () => {
    const h = makeHome();
    writeFileSync(join(h.workspace(), 'huge.txt'), 'z'.repeat(9 * 1024 * 1024));
    const res = h.run(['orchestrate', h.script('huge.mjs', `import { comis_tools } from './comis_tools.js';\ntry { await comis_tools.read({ path: 'huge.txt' }); } catch (e) { console.log(e.code); }`)]);
    expect(res.stdout).toBe('result_too_large\n');
  });
});
