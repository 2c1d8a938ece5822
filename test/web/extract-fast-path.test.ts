/**
 * web_fetch's clean-ASCII fast path (extract.ts) against the slow path it
 * skips (decode the whole body, sanitize, cut, envelope): the same kind,
 * content, payload bytes and cut flag over random and adversarial CSV and text
 * bodies, with envelope markers, "untrusted" in any case, long marker-alphabet
 * runs and combining marks placed around the cut and the decoded margin.
 */
import { describe, expect, it } from 'vitest';

import { extractBody, type BodyKind } from '../../src/lib/web/extract.js';
import { prng } from '../helpers/prng.js';

const url = 'http://127.0.0.1:1/page';
// Envelope ids are random per call: compare with them folded.
const fold = (s: unknown): unknown => (typeof s === 'string' ? s.replace(/id=[0-9a-f]{12}/g, 'id=ID') : s);

async function both(body: Buffer, kind: BodyKind, type: string, maxChars: number, cut: boolean): Promise<void> {
  const fast = await extractBody(body, kind, type, url, maxChars, cut);
  const slow = await extractBody(body, kind, type, url, maxChars, cut, { noFastPath: true });
  const what = `${kind} ${type} max=${maxChars} cut=${cut} ${body.subarray(0, 40).toString('hex')}… (${body.length} bytes)`;
  expect(fast.kind, what).toBe(slow.kind);
  expect(fast.title, what).toBe(slow.title);
  expect(fast.cut, what).toBe(slow.cut);
  expect(fold(fast.content), what).toBe(fold(slow.content));
  expect(fold(fast.text), what).toBe(fold(slow.text));
  const payload = (x: typeof fast): string => fold((x.bytes ?? Buffer.from(x.text, 'utf8')).toString('utf8')) as string;
  expect(payload(fast), what).toBe(payload(slow));
  if (fast.bytes) expect(fast.bytes.equals(Buffer.from(fast.text, 'utf8')), what).toBe(true);
}

const WORDS = [
  'lorem',
  'ipsum',
  'dolor',
  ' ',
  ' ',
  '\n',
  ',',
  '1',
  '42',
  'untrusted',
  'UnTrUsTeD',
  'external',
  'EXTERNAL',
  'end',
  'content',
  '<<<',
  '<<',
  '>>>',
  '_',
  '-',
  '.',
  '\t',
  '\r\n',
  'a',
  'e',
  'n',
  'd',
  'x',
  't',
  'r',
  'l',
  's',
  'u',
];
const ODD = ['\u0000', '\u007f', '\u200b', '\u00e9', 'e\u0301', '\u0301', '\u017f', 'ＵＮＴＲＵＳＴＥＤ', '\ufeff', '\u{e0041}', '\u202e'];
const MARKERS = ['<<<EXTERNAL_UNTRUSTED_CONTENT id=1 source=x>>>', '<<<END_EXTERNAL_UNTRUSTED_CONTENT id=1>>>', 'external  untrusted content', 'END-external.untrusted_content'];

function text(rand: () => number, n: number, odd: number): string {
  let s = '';
  while (s.length < n) {
    const r = rand();
    s += r < odd ? ODD[Math.floor(rand() * ODD.length)]! : r < odd + 0.02 ? MARKERS[Math.floor(rand() * MARKERS.length)]! : WORDS[Math.floor(rand() * WORDS.length)]!;
  }
  return s;
}

describe('extractBody: the clean-ASCII fast path gives exactly the slow path', () => {
  it('random CSV and text bodies, clean and not, cut and not, around every threshold', async () => {
    const rand = prng(0x7e57f00d);
    for (let i = 0; i < 400; i++) {
      const kind: BodyKind = rand() < 0.5 ? 'csv' : 'text';
      const maxChars = [1, 10, 100, 2000][Math.floor(rand() * 4)]!;
      const size = Math.floor(rand() * (maxChars * 3 + 2200));
      // Mostly clean bodies (the fast path runs), some with odd characters anywhere.
      const body = Buffer.from(text(rand, size, rand() < 0.6 ? 0 : 0.01), 'utf8');
      const type = ['text/plain', 'text/csv; charset=utf-8', 'text/plain; charset="UTF-8"', 'text/plain; charset=windows-1252'][Math.floor(rand() * 4)]!;
      await both(body, kind, type, maxChars, rand() < 0.3);
    }
  });

  it('a marker, "untrusted" or an odd character placed just before, at and after the cut and the margin', async () => {
    const maxChars = 300;
    for (const insert of [...MARKERS, 'untrusted', 'xUNTRUSTED', '<'.repeat(2000) + 'end external untrusted content>>>', '_'.repeat(1500) + 'external untrusted', ...ODD]) {
      for (const at of [0, maxChars - 60, maxChars - 9, maxChars - 1, maxChars, maxChars + 1, maxChars + 500, maxChars + 1023, maxChars + 1024, maxChars + 1025, maxChars + 3000]) {
        const before = 'lorem ipsum, dolor\n'.repeat(400).slice(0, at);
        const body = Buffer.from(`${before}${insert}${'tail text, 1,2,3\n'.repeat(300)}`, 'utf8');
        await both(body, 'text', 'text/plain', maxChars, false);
        await both(body, 'csv', 'text/csv', maxChars, true);
      }
    }
    // A marker-alphabet run from before the cut through the whole margin: the fast path must step aside.
    const run = Buffer.from(`${'a'.repeat(maxChars - 5)}${'<'.repeat(3000)} external untrusted content>>> rest`);
    await both(run, 'text', 'text/plain', maxChars, false);
  });

  it('the fast path does run: a clean 1 MB CSV is the body itself, a clean text decodes only near the cut', async () => {
    const csv = Buffer.from(`id,name\n${Array.from({ length: 40_000 }, (_, i) => `${i},item-${i}`).join('\n')}\n`);
    const out = await extractBody(csv, 'csv', 'text/csv', url, 50_000, false);
    expect(out.bytes && out.bytes.buffer === csv.buffer && out.bytes.length === csv.length).toBe(true);
    const page = Buffer.from('lorem ipsum dolor sit amet\n'.repeat(40_000));
    const t = await extractBody(page, 'text', 'text/plain', url, 50_000, false);
    expect(t.cut).toBe(true);
    expect(String(t.content)).toContain('lorem ipsum');
  });
});
