import { describe, expect, it } from 'vitest';

import { decodeText, extractBody } from '../../src/lib/web/extract.js';
import { prng } from '../helpers/prng.js';

const reference = (body: Buffer, label = 'utf-8'): string => new TextDecoder(label).decode(body);

/** Bytes biased towards UTF-8's edge cases: lead bytes, continuations, overlongs, surrogates, out of range. */
function adversarial(rand: () => number, n: number): Buffer {
  const pool = [0x00, 0x41, 0x0a, 0x7f, 0x80, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xed, 0xef, 0xbb, 0xf0, 0xf4, 0xf5, 0xf8, 0xfe, 0xff, 0xa0, 0x9f, 0x90, 0x8f];
  return Buffer.from(Array.from({ length: n }, () => (rand() < 0.7 ? pool[Math.floor(rand() * pool.length)]! : Math.floor(rand() * 256))));
}

describe('decodeText: the same text TextDecoder gives, faster for UTF-8', () => {
  it('random and adversarial bytes, valid text, BOMs: equal to TextDecoder(utf-8)', () => {
    const rand = prng(0x1d2c3b4a);
    const cases: Buffer[] = [
      Buffer.alloc(0),
      Buffer.from('plain ascii\n'),
      Buffer.from('\ufeffwith a BOM'),
      Buffer.from('\ufeff\ufefftwo BOMs'),
      Buffer.from([0xef, 0xbb]), // half a BOM
      Buffer.from('héllo wörld ✓ 𝄞 漢字'),
      Buffer.from([0xed, 0xa0, 0x80]), // an encoded surrogate
      Buffer.from([0xc0, 0xaf]), // an overlong slash
      Buffer.from([0xf4, 0x90, 0x80, 0x80]), // past U+10FFFF
      Buffer.from([0xe2, 0x82]), // cut mid-character
    ];
    for (let i = 0; i < 3000; i++) cases.push(adversarial(rand, 1 + Math.floor(rand() * 24)));
    for (let i = 0; i < 50; i++) cases.push(Buffer.from(Array.from({ length: 4096 }, () => Math.floor(rand() * 256))));
    for (const body of cases) {
      expect(decodeText(body, 'text/plain'), body.toString('hex')).toBe(reference(body));
      expect(decodeText(body, 'text/csv; charset="UTF-8"'), body.toString('hex')).toBe(reference(body));
    }
  });

  it('other charsets still go through TextDecoder', () => {
    const latin1 = Buffer.from([0x63, 0x61, 0x66, 0xe9]); // "café" in windows-1252
    expect(decodeText(latin1, 'text/plain; charset=windows-1252')).toBe('café');
    expect(decodeText(Buffer.from('hi', 'utf16le'), 'text/plain; charset=utf-16le')).toBe('hi');
    // An unknown label falls back to UTF-8.
    expect(decodeText(Buffer.from('ok ✓'), 'text/plain; charset=x-nonsense')).toBe('ok ✓');
  });
});

describe('extractBody: the payload bytes taken from the body are exactly the text encoded', () => {
  const url = 'http://127.0.0.1:1/x';
  const csv = Buffer.from(`id,name\n${Array.from({ length: 2000 }, (_, i) => `${i},item-${i}`).join('\n')}\n`);

  it('a clean UTF-8 CSV or text body is reused, and equals the encoded text', async () => {
    for (const [body, kind, type] of [
      [csv, 'csv', 'text/csv'],
      [Buffer.from('naïve café ✓\n'.repeat(500)), 'csv', 'text/csv; charset=utf-8'],
      [Buffer.from('line\n'.repeat(3000)), 'text', 'text/plain'],
      [Buffer.from('no final newline'), 'text', 'text/plain'],
    ] as const) {
      const out = await extractBody(body, kind, type, url, 1_000_000, false);
      expect(out.bytes, `${kind} ${type}`).toBeDefined();
      expect(out.bytes!.equals(Buffer.from(out.text, 'utf8'))).toBe(true);
    }
  });

  it('whenever the text is not the body as it came (BOM, invalid bytes, sanitized, cut, other charset), the bytes are encoded from the text', async () => {
    const cases: [Buffer, 'csv' | 'text', string, boolean, number][] = [
      [Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), csv]), 'csv', 'text/csv', false, 1_000_000],
      [Buffer.concat([csv, Buffer.from([0xff, 0x0a])]), 'csv', 'text/csv', false, 1_000_000],
      [Buffer.from('a,b\nzero\u200bwidth,1\n'), 'csv', 'text/csv', false, 1_000_000], // an invisible character the sanitizer strips
      [Buffer.from('line\u00e9\n'.repeat(3000)), 'text', 'text/plain', false, 100], // cut at maxChars (not clean ASCII: the slow path)
      [Buffer.concat([csv, Buffer.from([0xe2, 0x82])]), 'csv', 'text/csv', true, 1_000_000], // cut mid-character
      [Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x0a]), 'text', 'text/plain; charset=windows-1252', false, 1_000_000],
      // Valid UTF-8 bytes labelled windows-1252: decoded as windows-1252, so the bytes are not the text's.
      [Buffer.from('caf\u00e9,1\n'), 'csv', 'text/csv; charset=windows-1252', false, 1_000_000],
      [Buffer.from('caf\u00e9\n'), 'text', 'text/plain; charset=windows-1252', false, 1_000_000],
    ];
    for (const [body, kind, type, cut, maxChars] of cases) {
      const out = await extractBody(body, kind, type, url, maxChars, cut);
      expect(out.bytes, `${kind} ${body.subarray(0, 8).toString('hex')}`).toBeUndefined();
    }
  });

  it('a clean text cut at maxChars: the envelope around the kept bytes of the body, exactly the text encoded', async () => {
    for (const body of [Buffer.from('line\n'.repeat(3000)), Buffer.from('no newline at the cut '.repeat(800))]) {
      const out = await extractBody(body, 'text', 'text/plain', url, 100, false);
      expect(out.cut).toBe(true);
      expect(out.bytes).toBeDefined();
      expect(out.bytes!.equals(Buffer.from(out.text, 'utf8'))).toBe(true);
      expect(String(out.content)).toBe(out.text);
    }
  });
});
