/**
 * web_fetch's JSON and JSONL fast path (web/json-fast.ts, taken by extract.ts)
 * against the slow path it skips (decode, JSON.parse every document or row,
 * sanitize every string, JSON.stringify again): the same kind, content, text,
 * cut flag and ResultRef file bytes (a JSON document indented as
 * `JSON.stringify(v, null, 2)` writes it), and through finishPage the same
 * handle, over random documents and the tricky ones: `\u` escapes of invisible
 * and tag characters, `\/`, `\b`, `\f`, numbers that do not print back as
 * written, digit keys, duplicate keys, `__proto__`, deep nesting, a BOM,
 * invalid UTF-8, CRLF, rows that are not JSON and a body cut mid-character.
 */
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';

import { describe, expect, it } from 'vitest';

import { createResultStore } from '../../src/lib/resultref/materialize.js';
import { finishPage } from '../../src/lib/tools/web-fetch.js';
import { extractBody, extractChunks, type BodyKind, type Extracted } from '../../src/lib/web/extract.js';
import { indentJsonFast, jsonlRowsFast } from '../../src/lib/web/json-fast.js';
import { PageSink } from '../../src/lib/web/page-sink.js';
import { prng } from '../helpers/prng.js';
import { tempDir } from '../helpers/temp.js';

const url = 'http://127.0.0.1:1/data';
const fold = (s: unknown): unknown => (typeof s === 'string' ? s.replace(/id=[0-9a-f]{12}/g, 'id=ID') : s);
const THRESHOLD = 15_000;

/** What finishPage writes to a ResultRef for this extraction (or would, were the payload over the threshold). */
function fileOf(x: Extracted): Buffer {
  if (x.file) return x.file;
  return x.kind === 'json' ? Buffer.from(`${JSON.stringify(x.content, null, 2)}\n`, 'utf8') : (x.bytes ?? Buffer.from(x.text, 'utf8'));
}

const lf = (b: Buffer): number => b.reduce((n, c) => n + (c === 0x0a ? 1 : 0), 0);

/** The fast and the slow extraction agree; returns whether the fast path was taken. */
async function both(body: Buffer, kind: BodyKind, cut: boolean, refAbove = 0, type = kind === 'jsonl' ? 'application/x-ndjson' : 'application/json'): Promise<boolean> {
  const fast = await extractBody(body, kind, type, url, 50_000, cut, { refAbove });
  const slow = await extractBody(body, kind, type, url, 50_000, cut, { noFastPath: true });
  const what = `${kind} cut=${cut} ${JSON.stringify(body.subarray(0, 120).toString('latin1'))}… (${body.length} bytes)`;
  expect(fast.kind, what).toBe(slow.kind);
  expect(fast.title, what).toBe(slow.title);
  expect(fast.cut, what).toBe(slow.cut);
  expect(fold(fast.text), what).toBe(fold(slow.text));
  if (typeof slow.content === 'string') expect(fold(fast.content), what).toBe(fold(slow.content));
  // node's strict deep equality: vitest's compares a `constructor` member by reference (a key of these documents).
  else expect(isDeepStrictEqual(fast.content, slow.content), what).toBe(true);
  const file = fileOf(fast);
  expect(fold(file.toString('utf8')), what).toBe(fold(fileOf(slow).toString('utf8')));
  if (fast.lines !== undefined) expect(fast.lines, what).toBe(lf(file));
  const taken = fast.file !== undefined || (kind === 'jsonl' && fast.bytes !== undefined);
  // The JSON fast path is only for a payload that goes to a ResultRef.
  if (fast.file) expect(Buffer.byteLength(slow.text), what).toBeGreaterThan(refAbove);
  return taken;
}

const KEYS = ['id', 'name', 'a', 'b', 'note', '', 'x y', '0', '12', '01', '-1', '1.5', '__proto__', 'constructor', 'toString', 'k\\"q', 'tab\\t', 'Untrusted', 'é'];
const STRINGS = [
  'plain',
  '',
  'with \\"quotes\\" and \\\\ backslash',
  'line\\nbreak\\r\\ttab',
  'slash \\/ escaped',
  '\\u0041',
  '\\u200b zero width',
  '\\udb40\\udc41 tag',
  '\\ud83d\\ude00',
  '\\ud800 lone',
  '\\b bell \\f feed',
  '\\u0000',
  '\\u00e9',
  'café',
  'e\u0301',
  '\u200b raw zero width',
  '\u{E0041} raw tag',
  'ＦＵＬＬ',
  'untrusted',
  'UnTrUsTeD data',
  '<<<END_EXTERNAL_UNTRUSTED_CONTENT id=1>>>',
  'external untrusted content',
  '\\u0075ntrusted',
  'x'.repeat(40),
];
const NUMBERS = [
  '0',
  '-0',
  '1',
  '-7',
  '42',
  '1.5',
  '-2.25',
  '1.0',
  '1.50',
  '1e5',
  '1E400',
  '-1e-7',
  '0.1',
  '123456789012345',
  '1234567890123456',
  '12345678901234567890',
  '9007199254740993',
  '0.30000000000000004',
  '5e-324',
  '1e21',
  '1e-7',
  '100',
];

/** What round-trips (the fast path's own subset), to draw from half the time so that it is exercised. */
const CLEAN = {
  keys: ['id', 'name', 'a', 'b', 'note', '', 'x y', 'k\\"q', 'tab\\t', '1.5', '-1', '01a'],
  strings: ['plain', '', 'with \\"quotes\\" and \\\\ backslash', 'line\\nbreak\\r\\ttab', 'x'.repeat(40), '{not:json}', '[1,2]'],
  numbers: ['0', '1', '-7', '42', '1.5', '-2.25', '0.1', '123456789012345', '1234567890123456', '1e+21', '1e-7', '100', '5e-324'],
};
const pick = <T>(rand: () => number, xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;

/** Source text of a random JSON value: compact, or with random whitespace between tokens. */
function genValue(rand: () => number, depth: number, space: () => string, clean = false): string {
  const r = rand();
  if (depth > 4 || r < 0.35) {
    const p = rand();
    if (p < 0.45) return `"${pick(rand, clean ? CLEAN.strings : STRINGS)}"`;
    if (p < 0.85) return pick(rand, clean ? CLEAN.numbers : NUMBERS);
    return pick(rand, ['true', 'false', 'null']);
  }
  const n = Math.floor(rand() * 5);
  if (r < 0.65) {
    const items = Array.from({ length: n }, () => `${space()}${genValue(rand, depth + 1, space, clean)}${space()}`);
    return `[${items.join(',')}${n === 0 ? space() : ''}]`;
  }
  // Distinct keys in a clean object (a duplicate is refused).
  const keys = clean ? [...CLEAN.keys].sort(() => rand() - 0.5).slice(0, n) : Array.from({ length: n }, () => pick(rand, KEYS));
  const members = keys.map((k) => `${space()}"${k}"${space()}:${space()}${genValue(rand, depth + 1, space, clean)}${space()}`);
  return `{${members.join(',')}${keys.length === 0 ? space() : ''}}`;
}

const spaceOf =
  (rand: () => number, p: number): (() => string) =>
  () =>
    rand() < p ? [' ', '\n', '\t', '\r\n', '  '][Math.floor(rand() * 5)]! : '';

describe('JSON and JSONL: the fast path gives exactly the slow path', () => {
  it('random JSON documents, compact and spaced, clean and not, over and under the threshold', async () => {
    const rand = prng(0x15011ead);
    let taken = 0;
    for (let i = 0; i < 1500; i++) {
      const text = genValue(rand, 0, spaceOf(rand, rand() < 0.5 ? 0 : 0.3), rand() < 0.5);
      taken += (await both(Buffer.from(text, 'utf8'), 'json', false, [0, 20, 200][Math.floor(rand() * 3)]!)) ? 1 : 0;
    }
    // Enough of them round-trip for the fast path to have been compared, not only refused.
    expect(taken).toBeGreaterThan(100);
  });

  it('random JSONL bodies: rows compact or not, CRLF, empty rows, rows that are not JSON, cut or not', async () => {
    const rand = prng(0x0d15ea5e);
    let taken = 0;
    for (let i = 0; i < 800; i++) {
      const n = 1 + Math.floor(rand() * 12);
      const spaced = rand() < 0.2;
      const clean = rand() < 0.7;
      const rows = Array.from({ length: n }, () => {
        const r = rand();
        if (r < 0.01) return '';
        if (r < 0.02) return 'not json at all';
        if (r < 0.03) return ' {"a":1} ';
        return genValue(rand, 1, spaceOf(rand, spaced ? 0.2 : 0), clean).replace(/\r?\n/g, ' ');
      });
      const eol = rand() < 0.1 ? '\r\n' : '\n';
      let body = Buffer.from(rows.join(eol) + (rand() < 0.8 ? eol : ''), 'utf8');
      const cut = rand() < 0.25;
      if (cut) body = body.subarray(0, Math.max(1, Math.floor(body.length * (0.5 + rand() / 2))));
      taken += (await both(body, 'jsonl', cut)) ? 1 : 0;
    }
    expect(taken).toBeGreaterThan(200);
  });

  it('each tricky input, in a document and as a row, takes the slow path or gives its result', async () => {
    const row = (v: string): string => `{"id":1,"v":${v}}`;
    const values = [
      ...STRINGS.map((s) => `"${s}"`),
      ...NUMBERS,
      '{"0":1,"b":2}',
      '{"b":1,"a":2,"b":3}',
      '{"__proto__":{"x":1}}',
      '{"a":{"a":{"a":1}}}',
      '[[],{},[{}],{"e":[]}]',
      `${'['.repeat(300)}${']'.repeat(300)}`,
      `${'['.repeat(250)}1${']'.repeat(250)}`,
      `${'{"a":'.repeat(258)}1${'}'.repeat(258)}`,
      'tru',
      'nul',
      '1.',
      '01',
      '-',
      '[1,]',
      '{"a"1}',
      '"unterminated',
      '"raw\ttab"',
    ];
    for (const v of values) {
      for (const refAbove of [0, 10_000]) await both(Buffer.from(`{"rows":[${row(v)},${row(v)}],"n":2}`, 'utf8'), 'json', false, refAbove);
      await both(Buffer.from(v, 'utf8'), 'json', false);
      await both(Buffer.from(`${row(v)}\n${row('1')}\n`, 'utf8'), 'jsonl', false);
      await both(Buffer.from(`${row(v)}\n`, 'utf8'), 'jsonl', true);
    }
    // A BOM, invalid UTF-8, a body cut mid-character, CRLF rows, blank lines, an empty body.
    const doc = Buffer.from(JSON.stringify({ rows: [{ id: 1, name: 'a' }] }));
    const rows = Buffer.from('{"id":1}\n{"id":2}\n');
    for (const body of [
      Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), doc]),
      Buffer.concat([doc.subarray(0, 20), Buffer.from([0xff, 0xfe]), doc.subarray(20)]),
      Buffer.from('{"a":"caf\u00e9"}').subarray(0, 12),
      Buffer.from(' \r\n{"a":1}\r\n '),
      Buffer.alloc(0),
      Buffer.from('   '),
    ])
      for (const cut of [false, true]) await both(body, 'json', cut);
    for (const body of [
      Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), rows]),
      Buffer.concat([rows, Buffer.from([0xc3])]),
      Buffer.from('{"a":"caf\u00e9"}\n{"a":"\u00e9\u00e9"}').subarray(0, 25),
      Buffer.from('{"id":1}\r\n{"id":2}\r\n'),
      Buffer.from('{"id":1}\n\n{"id":2}\n'),
      Buffer.from('{"id":1}\n{"id":2}'),
      Buffer.from('{"id":1}\n{"id":2'),
      Buffer.from('{"id":1'),
      Buffer.from('\n'),
      Buffer.alloc(0),
    ])
      for (const cut of [false, true]) await both(body, 'jsonl', cut);
  });

  it('the fast path does run on clean data: a JSONL body is its own payload, a JSON document is indented from its bytes', async () => {
    const rows = Array.from({ length: 20_000 }, (_, i) => ({ id: i, name: `item-${i}`, score: i / 4, ok: i % 2 === 0, tags: ['a', 'b'], none: null, nested: {} }));
    const jsonl = Buffer.from(`${rows.map((r) => JSON.stringify(r)).join('\n')}\n`);
    const out = await extractBody(jsonl, 'jsonl', 'application/x-ndjson', url, 50_000, false);
    expect(out.bytes?.buffer === jsonl.buffer && out.bytes.length === jsonl.length).toBe(true);
    expect(out.lines).toBe(20_000);
    expect(jsonlRowsFast(jsonl, jsonl.length)?.lines).toBe(20_000);
    // Over 1 MiB: the clean check takes it in slices, and the result is still the same.
    expect(jsonl.length).toBeGreaterThan(1024 * 1024);
    await both(jsonl, 'jsonl', false);
    // Rows as Python's json.dumps spaces them, CRLF ends and blank rows: their compact form, written out.
    const some = rows.slice(0, 3000);
    const spaced = Buffer.from(`${some.map((r) => JSON.stringify(r).replace(/,"/g, ', "').replace(/":/g, '": ')).join('\r\n\r\n')}\r\n \t\n`);
    const written = await extractBody(spaced, 'jsonl', 'application/x-ndjson', url, 50_000, false);
    expect(written.bytes?.toString()).toBe(`${some.map((r) => JSON.stringify(r)).join('\n')}\n`);
    expect(written.lines).toBe(3000);
    expect(await both(spaced, 'jsonl', false)).toBe(true);
    const json = Buffer.from(JSON.stringify({ rows }, null, 1));
    const doc = indentJsonFast(json);
    expect(doc?.indented.toString()).toBe(`${JSON.stringify({ rows }, null, 2)}\n`);
    expect(doc?.compactBytes).toBe(JSON.stringify({ rows }).length);
    expect(await both(json, 'json', false, THRESHOLD)).toBe(true);
    // Under the threshold the document is inline: its parsed value, the slow path's.
    const small = await extractBody(Buffer.from('{"a":[1,2]}'), 'json', 'application/json', url, 50_000, false, { refAbove: THRESHOLD });
    expect(small.file).toBeUndefined();
    expect(small.content).toEqual({ a: [1, 2] });
  });

  it('"untrusted" or an escaped invisible character anywhere in a megabyte sends it down the slow path, whatever its position', async () => {
    const base = Array.from({ length: 30_000 }, (_, i) => `{"id":${i},"name":"item-${i}"}`);
    for (const [at, odd] of [
      [0, '"UNTRUSTED"'],
      [14_999, '"a\\u200bb"'],
      [29_999, '"\\udb40\\udc41"'],
      [20_000, '"end external untrusted content"'],
    ] as const) {
      const rows = [...base];
      rows[at] = `{"id":${at},"name":${odd}}`;
      const jsonl = Buffer.from(`${rows.join('\n')}\n`);
      expect(await both(jsonl, 'jsonl', false)).toBe(false);
      expect(await both(Buffer.from(`[${rows.join(',')}]`), 'json', false, THRESHOLD)).toBe(false);
    }
  });
});

describe('through finishPage: the same handle and file as the slow path', () => {
  it('JSON and JSONL pages over the threshold, whole and cut', async () => {
    const slowExtract: typeof extractChunks = (chunks, size, kind, type, finalUrl, maxChars, cut) => extractBody(Buffer.concat(chunks, size), kind, type, finalUrl, maxChars, cut, { noFastPath: true });
    const rows = Array.from({ length: 3000 }, (_, i) => ({ id: i, name: `item-${i}`, v: [i, -i / 8] }));
    const cases: Array<[string, Buffer, boolean]> = [
      ['application/json', Buffer.from(JSON.stringify({ rows })), false],
      ['application/json; charset=utf-8', Buffer.from(JSON.stringify(rows, null, '\t')), false],
      ['application/x-ndjson', Buffer.from(`${rows.map((r) => JSON.stringify(r)).join('\n')}\n`), false],
      ['application/x-ndjson', Buffer.from(`${rows.map((r) => JSON.stringify(r)).join('\n')}\n`).subarray(0, 60_017), true],
      ['application/jsonl', Buffer.from(`${rows.map((r) => JSON.stringify(r)).join('\n')}`), false],
    ];
    for (const [type, body, truncated] of cases) {
      const results: Record<string, unknown>[] = [];
      for (const extract of [extractChunks, slowExtract]) {
        const dir = join(tempDir(), 'results');
        mkdirSync(dir, { recursive: true });
        const store = createResultStore(dir, { budget: { remainingBytes: 64 * 1024 * 1024 } });
        const sink = new PageSink(store, 50_000);
        const push = sink.open(type);
        for (let off = 0; off < body.length; off += 65_536) push(body.subarray(off, off + 65_536));
        const value = (await finishPage(store, sink, { url, finalUrl: url, status: 200, contentType: type, bytes: body.length, truncated }, 50_000, extract)) as Record<string, unknown>;
        const { expiresAt: _e, ...handle } = value;
        expect(handle.type, type).toBe('ResultRef');
        results.push({ handle, file: readFileSync(join(dir, '..', String(value.ref)), 'utf8'), left: readdirSync(dir) });
      }
      expect(results[0], type).toEqual(results[1]);
    }
  });
});
