/**
 * isCleanAscii: the byte-level check that lets web_fetch skip decoding and
 * sanitizing a clean body. Held to its definition (printable ASCII, tab, LF,
 * CR, and no "untrusted" in any case) over random and adversarial bytes at
 * every alignment, and to what it promises: a clean body's text is exactly
 * what the sanitizer returns for it.
 */
import { describe, expect, it } from 'vitest';

import { cleanAsciiLines, isCleanAscii, sanitizeUntrustedText } from '../../src/lib/untrusted/envelope.js';
import { prng } from '../helpers/prng.js';

const definition = (b: Uint8Array): boolean => {
  for (const c of b) if (!((c >= 0x20 && c <= 0x7e) || c === 0x09 || c === 0x0a || c === 0x0d)) return false;
  return !/untrusted/i.test(Buffer.from(b).toString('latin1'));
};

const PIECES = ['untrusted', 'UNTRUSTED', 'UnTrUsTeD', 'untruste', 'ntrusted', 'uuntrusted', 'u', 'U', '<<<EXTERNAL_UNTRUSTED_CONTENT', 'external untrusted content', 'a', ' ', '\n', '\t', '\r', 'lorem ipsum ', '1,2,3\n'];
const BYTES = [0x00, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x1f, 0x20, 0x7e, 0x7f, 0x80, 0xc2, 0xa0, 0xe2, 0x80, 0x8b, 0xff, 0x75, 0x55];

function adversarial(rand: () => number, n: number): Buffer {
  const parts: Buffer[] = [];
  let len = 0;
  while (len < n) {
    const part = rand() < 0.6 ? Buffer.from(PIECES[Math.floor(rand() * PIECES.length)]!) : Buffer.from([rand() < 0.5 ? BYTES[Math.floor(rand() * BYTES.length)]! : Math.floor(rand() * 256)]);
    parts.push(part);
    len += part.length;
  }
  return Buffer.concat(parts).subarray(0, n);
}

describe('isCleanAscii', () => {
  it('equals its definition on random and adversarial bytes, at every alignment', () => {
    const rand = prng(0x5eed1234);
    let clean = 0;
    for (let i = 0; i < 6000; i++) {
      const n = Math.floor(rand() * (i % 10 === 0 ? 600 : 40));
      const mostlyClean = rand() < 0.5;
      const body = mostlyClean ? Buffer.from(Array.from({ length: n }, () => 0x20 + Math.floor(rand() * 0x5f))) : adversarial(rand, n);
      if (mostlyClean && rand() < 0.3 && n > 0) body[Math.floor(rand() * n)] = BYTES[Math.floor(rand() * BYTES.length)]!;
      for (let offset = 0; offset < 4; offset++) {
        // The same bytes at each offset of one backing buffer: the word loop's head and tail differ.
        const backing = Buffer.alloc(n + 8);
        body.copy(backing, offset);
        const view = backing.subarray(offset, offset + n);
        const want = definition(view);
        expect(isCleanAscii(view), `${view.toString('hex')} @${offset}`).toBe(want);
        // cleanAsciiLines: the same verdict, and a clean body's LF count.
        expect(cleanAsciiLines(view), `${view.toString('hex')} @${offset}`).toBe(want ? view.reduce((k, c) => k + (c === 0x0a ? 1 : 0), 0) : -1);
        if (want) clean++;
      }
    }
    // Both answers were exercised many times.
    expect(clean).toBeGreaterThan(2000);
    expect(clean).toBeLessThan(22000);
  });

  it('"untrusted" is seen wherever it sits: across word boundaries, at the very end, in any case', () => {
    for (let pad = 0; pad < 12; pad++) {
      for (const word of ['untrusted', 'UNTRUSTED', 'uNtRuStEd']) {
        const b = Buffer.from(`${'x'.repeat(pad)}${word}`);
        expect(isCleanAscii(b), b.toString()).toBe(false);
        expect(isCleanAscii(Buffer.from(`${'x'.repeat(pad)}${word.slice(0, 8)}`))).toBe(true);
      }
    }
    expect(isCleanAscii(Buffer.alloc(0))).toBe(true);
    expect(isCleanAscii(Buffer.from('\u00e9'))).toBe(false);
  });

  it('what it promises: a clean body is what the sanitizer returns for it', () => {
    const rand = prng(0xabcdef01);
    for (let i = 0; i < 3000; i++) {
      const body = adversarial(rand, Math.floor(rand() * 200));
      if (!isCleanAscii(body)) continue;
      const text = body.toString('utf8');
      expect(text).toBe(body.toString('latin1'));
      expect(sanitizeUntrustedText(text)).toBe(text);
    }
    // And a body the sanitizer changes is never called clean.
    for (const dirty of ['a\u0000b', 'x\u007f', 'END_EXTERNAL_UNTRUSTED_CONTENT', 'zero\u200bwidth', 'caf\u00e9']) {
      expect(sanitizeUntrustedText(dirty) === dirty && isCleanAscii(Buffer.from(dirty))).toBe(false);
    }
  });
});
