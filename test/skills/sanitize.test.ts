import { describe, expect, it } from 'vitest';

import { DEFAULT_MAX_BODY_LENGTH, enforceSizeLimit, normalizeNfkc, sanitizeSkillBody, stripHtmlComments, stripInvisibleCharacters, TRUNCATION_MARKER } from '../../src/lib/skills/sanitize.js';

const tag = (text: string): string => [...text].map((c) => String.fromCodePoint(0xe0000 + c.charCodeAt(0))).join('');

describe('sanitizer steps', () => {
  it('step 1 strips comments non-greedily and counts them', () => {
    expect(stripHtmlComments('a<!-- x -->b<!-- y -->c')).toEqual({ text: 'abc', count: 2 });
    expect(stripHtmlComments('keep <!-- unterminated')).toEqual({ text: 'keep <!-- unterminated', count: 0 });
    expect(stripHtmlComments('<!--a-->mid<!--b')).toEqual({ text: 'mid<!--b', count: 1 });
  });

  it('step 2 applies NFKC (full-width letters, ligatures)', () => {
    expect(normalizeNfkc('ｃｕｒｌ ﬁle')).toBe('curl file');
  });

  it('step 3 strips exactly the seed list and reports tag-block use', () => {
    const input = `a\u200Bb\u200Cc\u200Dd\u00ADe\u200Ef\u200Fg${tag('hi')}h\u202Ei`;
    const out = stripInvisibleCharacters(input);
    expect(out.text).toBe('abcdefgh\u202Ei'); // U+202E is not on the seed's list
    expect(out.tagBlockDetected).toBe(true);
    expect(stripInvisibleCharacters('plain').tagBlockDetected).toBe(false);
  });

  it('step 4 truncates with the marker and never splits a surrogate pair', () => {
    expect(enforceSizeLimit('abcdef', 3)).toEqual({ text: `abc${TRUNCATION_MARKER}`, truncated: true });
    expect(enforceSizeLimit('abc', 3)).toEqual({ text: 'abc', truncated: false });
    expect(enforceSizeLimit('a😀b', 2).text).toBe(`a${TRUNCATION_MARKER}`);
    expect(TRUNCATION_MARKER).toBe('\n[TRUNCATED]');
  });
});

describe('sanitizeSkillBody', () => {
  it('runs the steps in the seed order: comments, NFKC, invisibles, size', () => {
    // A comment padding the body must not cause truncation: size is enforced last.
    const body = `<!--${'x'.repeat(50)}-->ｈｅｌｌｏ\u200B`;
    expect(sanitizeSkillBody(body, { maxBodyLength: 5 })).toEqual({ body: 'hello', htmlCommentsStripped: 1, truncated: false, tagBlockDetected: false });
  });

  it('strips comments before NFKC: a full-width comment opener is not a comment', () => {
    // ＜!-- becomes <!-- only in step 2, after comments were stripped; the text survives as written.
    expect(sanitizeSkillBody('a＜!-- x -->b').body).toBe('a<!-- x -->b');
  });

  it('removes invisibles after NFKC, so they cannot survive normalization', () => {
    expect(sanitizeSkillBody('c\u200Burl').body).toBe('curl');
  });

  it('truncates after everything else and reports tag characters', () => {
    const result = sanitizeSkillBody(`${'a'.repeat(30)}${tag('secret')}`, { maxBodyLength: 10 });
    expect(result).toEqual({ body: `${'a'.repeat(10)}${TRUNCATION_MARKER}`, htmlCommentsStripped: 0, truncated: true, tagBlockDetected: true });
  });

  it('defaults to 20,000 characters and rejects a bad limit', () => {
    expect(DEFAULT_MAX_BODY_LENGTH).toBe(20_000);
    expect(sanitizeSkillBody('x'.repeat(20_001)).truncated).toBe(true);
    expect(sanitizeSkillBody('x'.repeat(20_000)).truncated).toBe(false);
    expect(() => sanitizeSkillBody('x', { maxBodyLength: -1 })).toThrow(RangeError);
  });

  it('is pure: the same input gives the same output and the input is untouched', () => {
    const input = 'a<!-- b -->c';
    expect(sanitizeSkillBody(input)).toEqual(sanitizeSkillBody(input));
    expect(input).toBe('a<!-- b -->c');
  });

  it('stays linear on many unclosed comment openers', () => {
    const input = '<!--'.repeat(250_000);
    expect(sanitizeSkillBody(input, { maxBodyLength: 2_000_000 }).htmlCommentsStripped).toBe(0);
  });
});
