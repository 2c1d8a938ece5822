/**
 * The SIMD kernel that checks web_fetch's streamed CSV chunks
 * (src/lib/web/clean-scan.ts) gives exactly what cleanAsciiLines gives: the
 * same clean/not-clean verdict and the same LF count, over random and
 * adversarial bytes at every length around its 16-byte blocks and at every
 * alignment, with "untrusted" (any case) at every position of a block, across
 * blocks and at the very end. A wrong "clean" here would let a body skip the
 * sanitizer, so the kernel is held to the definition too, not only to the JS.
 */
import { describe, expect, it } from 'vitest';

import { cleanAsciiLines } from '../../src/lib/untrusted/envelope.js';
import { cleanLines, scanWithKernel } from '../../src/lib/web/clean-scan.js';
import { prng } from '../helpers/prng.js';

const definition = (b: Uint8Array): number => {
  for (const c of b) if (!((c >= 0x20 && c <= 0x7e) || c === 0x09 || c === 0x0a || c === 0x0d)) return -1;
  if (/untrusted/i.test(Buffer.from(b).toString('latin1'))) return -1;
  return b.reduce((k, c) => k + (c === 0x0a ? 1 : 0), 0);
};

/** The kernel's answer (it must be there on the Node versions we support), checked against the JS and the definition. */
function same(b: Uint8Array, what: string): number {
  const kernel = scanWithKernel(b);
  expect(kernel, `the kernel ran for ${what}`).not.toBeUndefined();
  const want = definition(b);
  expect(kernel, what).toBe(want);
  expect(cleanAsciiLines(b), what).toBe(want);
  expect(cleanLines(b), what).toBe(want);
  return want;
}

const PIECES = ['untrusted', 'UNTRUSTED', 'UnTrUsTeD', 'untruste', 'ntrusted', 'uuntrusted', 'u', 'U', 'uNTRUSTEd', '<<<EXTERNAL_UNTRUSTED_CONTENT', 'a', ' ', '\n', '\t', '\r', '1,2,3\n', 'item-7,'];
// Every byte class the kernel tells apart, and their neighbours: controls, TAB/LF/CR, space, ~, DEL, non-ASCII, u/U, and the letters of "ntrusted" with and without 0x20.
const BYTES = [0x00, 0x01, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x1f, 0x20, 0x29, 0x2a, 0x7e, 0x7f, 0x80, 0x89, 0x8a, 0x8d, 0xa0, 0xc2, 0xe2, 0xf5, 0xfe, 0xff, 0x75, 0x55, 0x95, 0xf5, 0x4e, 0x6e, 0x54, 0x74, 0x44, 0x64];

function adversarial(rand: () => number, n: number): Buffer {
  const parts: Buffer[] = [];
  let len = 0;
  while (len < n) {
    const part = rand() < 0.6 ? Buffer.from(PIECES[Math.floor(rand() * PIECES.length)]!) : Buffer.from([rand() < 0.6 ? BYTES[Math.floor(rand() * BYTES.length)]! : Math.floor(rand() * 256)]);
    parts.push(part);
    len += part.length;
  }
  return Buffer.concat(parts).subarray(0, n);
}

describe('clean-scan kernel', () => {
  it('equals cleanAsciiLines and the definition on random and adversarial bytes, every length near a block edge, every alignment', () => {
    const rand = prng(0xc1ea5);
    let clean = 0;
    let dirty = 0;
    for (let i = 0; i < 5000; i++) {
      const n = i < 80 ? i : Math.floor(rand() * (i % 10 === 0 ? 3000 : 70));
      const mostlyClean = rand() < 0.6;
      const body = mostlyClean ? Buffer.from(Array.from({ length: n }, () => (rand() < 0.05 ? 0x0a : 0x20 + Math.floor(rand() * 0x5f)))) : adversarial(rand, n);
      if (mostlyClean && rand() < 0.3 && n > 0) body[Math.floor(rand() * n)] = BYTES[Math.floor(rand() * BYTES.length)]!;
      const offset = i % 16;
      const backing = Buffer.alloc(n + 16, 0x75);
      body.copy(backing, offset);
      if (same(backing.subarray(offset, offset + n), `${body.toString('hex')} @${offset}`) >= 0) clean++;
      else dirty++;
    }
    expect(clean).toBeGreaterThan(1000);
    expect(dirty).toBeGreaterThan(1000);
  });

  it('sees "untrusted" in any case at every position of a 64-byte step, across blocks and steps and at the very end, and not a word short of it', () => {
    for (let pad = 0; pad < 80; pad++) {
      for (const word of ['untrusted', 'UNTRUSTED', 'uNtRuStEd', 'Untrusted']) {
        for (const after of ['', 'x', ',1\n', 'y'.repeat(17)]) {
          expect(same(Buffer.from(`${'x'.repeat(pad)}${word}${after}`), `${pad} ${word} ${after}`)).toBe(-1);
          // One letter short, or a letter off by something other than case: clean.
          expect(same(Buffer.from(`${'x'.repeat(pad)}${word.slice(0, 8)}${after.replace(/^x/, '')}`), `${pad} short`)).toBeGreaterThanOrEqual(0);
          expect(same(Buffer.from(`${'x'.repeat(pad)}${word.slice(0, 8)}e${after}`), `${pad} ...e`)).toBeGreaterThanOrEqual(0);
        }
      }
    }
  });

  it('one bad byte anywhere in a long clean chunk is seen, whatever it is', () => {
    const base = Buffer.from('id,name,note\n0,item-0,xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n'.repeat(40));
    for (const bad of BYTES.filter((b) => !((b >= 0x20 && b <= 0x7e) || b === 0x09 || b === 0x0a || b === 0x0d))) {
      for (let at = 0; at < 48; at++) {
        const b = Buffer.from(base);
        b[(at * 37) % b.length] = bad;
        expect(same(b, `0x${bad.toString(16)} at ${(at * 37) % b.length}`)).toBe(-1);
      }
    }
  });

  it('counts the LFs of a 64 KiB chunk like the JS, and a stale longer chunk in its memory does not leak into a shorter one', () => {
    const rows = Buffer.from(
      Array.from({ length: 3000 }, (_, i) => `${i},item-${i},note\n`)
        .join('')
        .slice(0, 65536),
    );
    expect(same(rows, '64 KiB of rows')).toBe(cleanAsciiLines(rows));
    // After a long chunk full of "untrusted", a short clean one: the kernel reads only its own bytes and spaces.
    same(Buffer.from('untrusted\u0000'.repeat(5000)), 'long dirty');
    expect(same(Buffer.from('abc'), 'short after long')).toBe(0);
    expect(same(Buffer.from('u'), 'a lone u after long')).toBe(0);
    expect(same(Buffer.alloc(0), 'empty')).toBe(0);
  });

  it('over 1 MiB the kernel takes 1 MiB slices (its memory stays bounded), with the same result', () => {
    const big = Buffer.alloc(1024 * 1024 + 1, 0x61);
    big[big.length - 1] = 0x0a;
    expect(scanWithKernel(big)).toBeUndefined();
    expect(cleanLines(big)).toBe(1);
    big[7] = 0x7f;
    expect(cleanLines(big)).toBe(-1);
  });

  it('over 1 MiB: "untrusted" across a slice seam at every offset, a bad byte on either side of it, LFs counted once', () => {
    const MiB = 1024 * 1024;
    const body = Buffer.alloc(2 * MiB + 4321, 0x61);
    for (let i = 100; i < body.length; i += 977) body[i] = 0x0a;
    const clean = cleanAsciiLines(body);
    expect(cleanLines(body)).toBe(clean);
    for (const seam of [MiB, 2 * MiB]) {
      for (let k = -9; k <= 1; k++) {
        const word = Buffer.from(k % 2 === 0 ? 'untrusted' : 'UNTRUSTED');
        const b = Buffer.from(body);
        word.copy(b, seam + k);
        expect(cleanLines(b), `seam ${seam} at ${k}`).toBe(cleanAsciiLines(b));
      }
      for (const at of [seam - 1, seam]) {
        const b = Buffer.from(body);
        b[at] = 0x01;
        expect(cleanLines(b), `bad byte at ${at}`).toBe(-1);
      }
    }
  });
});
