/**
 * web/json-indent.ts: the indented length of a JSON document without building it, and web_fetch's
 * use of it: a page whose indented form would pass the ResultRef per-file cap (indentation grows with
 * the depth: 200 KB nested 200 deep is ~40 MB indented) is written as its one compact line instead of
 * being indented in memory and then refused.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { createResultStore } from '../../src/lib/resultref/materialize.js';
import { finishPage } from '../../src/lib/tools/web-fetch.js';
import { extractBody, extractChunks } from '../../src/lib/web/extract.js';
import { indentedJsonLength } from '../../src/lib/web/json-indent.js';
import { PageSink } from '../../src/lib/web/page-sink.js';
import { prng } from '../helpers/prng.js';
import { tempDir } from '../helpers/temp.js';

const STRINGS = ['', 'plain', 'a "quoted" one', 'back\\slash\\', 'brackets [ ] { } , :', 'line\nbreak', 'é ü', '\u2028', '😀', '\\"', '"]},:['];

function randomValue(rand: () => number, depth: number): unknown {
  const r = rand();
  if (depth > 5 || r < 0.3) {
    const p = rand();
    if (p < 0.5) return STRINGS[Math.floor(rand() * STRINGS.length)];
    if (p < 0.8) return Math.round((rand() - 0.5) * 1e6) / 100;
    return [true, false, null][Math.floor(rand() * 3)];
  }
  const n = Math.floor(rand() * 5);
  if (r < 0.65) return Array.from({ length: n }, () => randomValue(rand, depth + 1));
  return Object.fromEntries(Array.from({ length: n }, (_, i) => [`${STRINGS[Math.floor(rand() * STRINGS.length)]}${i}`, randomValue(rand, depth + 1)]));
}

/** `[[[ … [0,1,…] … ]]]`: `depth` levels around `items` numbers. */
const deep = (depth: number, items: number): string => `${'['.repeat(depth)}${Array.from({ length: items }, (_, i) => i % 10).join(',')}${']'.repeat(depth)}`;

describe('indentedJsonLength', () => {
  it("is the byte length of JSON.stringify(value, null, 2) for the value's compact form", () => {
    const rand = prng(20261203);
    const values: unknown[] = [[], {}, [[]], { a: {} }, 'x', 1, null, [1, [2, [3, {}]]], JSON.parse(deep(30, 7))];
    for (let i = 0; i < 3000; i++) values.push(randomValue(rand, 0));
    for (const v of values) {
      const compact = Buffer.from(JSON.stringify(v), 'utf8');
      expect(indentedJsonLength(compact), compact.toString()).toBe(Buffer.byteLength(JSON.stringify(v, null, 2)));
    }
  });
});

describe('web_fetch: a JSON page too deep to indent within the per-file cap', () => {
  it('is written as its compact line, by the fast and the slow path, instead of being refused', async () => {
    const body = Buffer.from(deep(200, 100_000)); // 0.2 MB, ~40 MB indented
    const maxFileBytes = 4 * 1024 * 1024;
    // The document is what the test says: indented, it would pass the cap (and the length is exact, see above).
    expect(indentedJsonLength(body)).toBeGreaterThan(maxFileBytes);
    const slowExtract: typeof extractChunks = (chunks, size, kind, type, finalUrl, maxChars, cut) => extractBody(Buffer.concat(chunks, size), kind, type, finalUrl, maxChars, cut, { noFastPath: true });
    for (const extract of [extractChunks, slowExtract]) {
      const dir = join(tempDir(), 'results');
      mkdirSync(dir, { recursive: true });
      const store = createResultStore(dir, { budget: { remainingBytes: 64 * 1024 * 1024 }, maxFileBytes });
      const sink = new PageSink(store, 50_000);
      sink.open('application/json')(body);
      const url = 'http://127.0.0.1:1/deep.json';
      const value = (await finishPage(store, sink, { url, finalUrl: url, status: 200, contentType: 'application/json', bytes: body.length, truncated: false }, 50_000, extract)) as Record<string, unknown>;
      expect(value.type).toBe('ResultRef');
      expect(value.kind).toBe('json');
      expect(readFileSync(join(dir, '..', String(value.ref)))).toEqual(body);
    }
  });
});
