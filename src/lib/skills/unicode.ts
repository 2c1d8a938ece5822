/**
 * Character classes the scanner needs, as pure predicates on code points.
 * Kept apart from the rules so that the sanitizer, the views and the hiding
 * detectors agree on what "invisible" means.
 */

const DEFAULT_IGNORABLE = /\p{Default_Ignorable_Code_Point}/u;
const EXTENDED_PICTOGRAPHIC = /\p{Extended_Pictographic}/u;
const LETTER = /\p{L}/u;
const MARK = /\p{M}/u;

/**
 * Answers of `test` per code point, kept in a table of one byte per code
 * point (0 not asked yet, 1 false, 2 true; 1.1 MB, made on first use): a text
 * repeats few distinct characters, and a string and a regex test per call
 * cost ten times a look-up. The table's size is fixed, whatever a file holds.
 */
export function memoizedPerCodePoint(test: (cp: number) => boolean): (cp: number) => boolean {
  let known: Uint8Array | undefined;
  return (cp) => {
    known ??= new Uint8Array(0x110000);
    let answer = known[cp];
    if (answer === 0) {
      answer = test(cp) ? 2 : 1;
      known[cp] = answer;
    }
    return answer === 2;
  };
}

const defaultIgnorable = memoizedPerCodePoint((cp) => DEFAULT_IGNORABLE.test(String.fromCodePoint(cp)));
const mark = memoizedPerCodePoint((cp) => MARK.test(String.fromCodePoint(cp)));

/** Unicode tag block (U+E0000-U+E007F): invisible ASCII look-alikes used to smuggle text. */
export function isTagCharacter(cp: number): boolean {
  return cp >= 0xe0000 && cp <= 0xe007f;
}

/** Bidirectional controls that reorder what a reader sees (Trojan Source). */
export function isBidiControl(cp: number): boolean {
  return (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) || cp === 0x200e || cp === 0x200f || cp === 0x061c;
}

/** The bidi controls that override or isolate (as opposed to the weaker LRM/RLM/ALM marks). */
export function isBidiOverride(cp: number): boolean {
  return (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

/**
 * Characters that render as nothing: all of Default_Ignorable_Code_Point,
 * plus the Braille blank and the line/paragraph separators that many viewers
 * draw as nothing.
 */
export function isInvisible(cp: number): boolean {
  if (cp < 0xa0) return false;
  if (cp === 0x2800 || cp === 0x2028 || cp === 0x2029) return true;
  return defaultIgnorable(cp);
}

export function isEmoji(cp: number): boolean {
  if (cp < 0xa9) return false;
  if (cp >= 0x1f1e6 && cp <= 0x1f1ff) return true; // regional indicators (flags)
  if (cp >= 0x1f3fb && cp <= 0x1f3ff) return true; // skin-tone modifiers
  return EXTENDED_PICTOGRAPHIC.test(String.fromCodePoint(cp));
}

export function isLetter(cp: number): boolean {
  if (cp < 0x80) return (cp >= 0x41 && cp <= 0x5a) || (cp >= 0x61 && cp <= 0x7a);
  return LETTER.test(String.fromCodePoint(cp));
}

export function isCombiningMark(cp: number): boolean {
  if (cp < 0x300) return false;
  return mark(cp);
}

export function isAsciiAlphanumeric(cp: number): boolean {
  return (cp >= 0x30 && cp <= 0x39) || (cp >= 0x41 && cp <= 0x5a) || (cp >= 0x61 && cp <= 0x7a);
}

/**
 * Lower-case letters from other scripts that look like Latin ones, mapped to
 * the Latin letter. A small hand-made subset of Unicode's confusables: the
 * letters attackers actually use to spell commands (Cyrillic, Greek,
 * Armenian, IPA). NFKC already folds full-width and mathematical letters.
 */
const CONFUSABLE_TO_LATIN: ReadonlyMap<number, string> = new Map(
  Object.entries({
    // Cyrillic
    а: 'a',
    в: 'b',
    е: 'e',
    ё: 'e',
    һ: 'h',
    і: 'i',
    ї: 'i',
    ј: 'j',
    к: 'k',
    м: 'm',
    н: 'h',
    о: 'o',
    р: 'p',
    с: 'c',
    т: 't',
    у: 'y',
    х: 'x',
    ѕ: 's',
    ԁ: 'd',
    ԛ: 'q',
    ԝ: 'w',
    ӏ: 'l',
    ɡ: 'g',
    ү: 'y',
    ց: 'g',
    // Greek
    α: 'a',
    β: 'b',
    ε: 'e',
    η: 'n',
    ι: 'i',
    κ: 'k',
    ν: 'v',
    ο: 'o',
    ρ: 'p',
    τ: 't',
    υ: 'u',
    χ: 'x',
    ϲ: 'c',
    ϳ: 'j',
    // Armenian
    օ: 'o',
    ս: 'u',
    հ: 'h',
    ո: 'n',
    զ: 'q',
    // Latin look-alikes outside ASCII
    ı: 'i',
    ȷ: 'j',
    ɑ: 'a',
    ʏ: 'y',
    ɩ: 'i',
    ʟ: 'l',
    ɴ: 'n',
    ꮃ: 'w',
  }).map(([k, v]) => [k.codePointAt(0)!, v]),
);

/** The Latin letter a character is confusable with, or undefined. Expects lower-case input. */
export function confusableSkeleton(cp: number): string | undefined {
  if (cp < 0x80) return undefined;
  return CONFUSABLE_TO_LATIN.get(cp);
}

/** `<U+202E>` notation for a code point. */
export function codePointLabel(cp: number): string {
  return `<U+${cp.toString(16).toUpperCase().padStart(4, '0')}>`;
}

/**
 * Replaces every character that could hide or reorder text when printed
 * (controls other than tab, invisibles, bidi controls, tag characters) with
 * its `<U+XXXX>` label. Used for every excerpt comis shows or stores.
 */
export function escapeForDisplay(text: string): string {
  let out = '';
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    if (cp === 0x0a) out += '\\n';
    else if (cp === 0x0d) out += '\\r';
    else if ((cp < 0x20 && cp !== 0x09) || cp === 0x7f || (cp >= 0x80 && cp < 0xa0) || isInvisible(cp) || isBidiControl(cp) || isTagCharacter(cp)) {
      out += codePointLabel(cp);
    } else out += ch;
  }
  return out;
}

/**
 * The runs of non-ASCII code units of one text, as [starts[k], ends[k]) in order. A scan finds
 * them once and its views and detectors jump from one to the next: each of them searched the
 * text's ASCII for the next non-ASCII character itself (five regex passes over the raw text,
 * about 7% of a scan).
 */
export interface NonAsciiRuns {
  readonly text: string;
  readonly starts: Int32Array;
  readonly ends: Int32Array;
  readonly count: number;
  /** The run the last look-up found: the next one usually asks for the same run or the one after. */
  cursor: number;
}

const NON_ASCII_RUN = /[^\x00-\x7f]+/g;

export function nonAsciiRuns(text: string): NonAsciiRuns {
  let starts = new Int32Array(64);
  let ends = new Int32Array(64);
  let count = 0;
  NON_ASCII_RUN.lastIndex = 0;
  for (let m = NON_ASCII_RUN.exec(text); m; m = NON_ASCII_RUN.exec(text)) {
    if (count === starts.length) {
      const moreStarts = new Int32Array(count * 2);
      const moreEnds = new Int32Array(count * 2);
      moreStarts.set(starts);
      moreEnds.set(ends);
      starts = moreStarts;
      ends = moreEnds;
    }
    starts[count] = m.index;
    ends[count] = m.index + m[0].length;
    count += 1;
  }
  NON_ASCII_RUN.lastIndex = 0;
  return { text, starts, ends, count, cursor: 0 };
}

/** The first offset at or after `from` that holds a non-ASCII code unit of `runs.text`, or the text's length. */
export function nextNonAscii(runs: NonAsciiRuns, from: number): number {
  const { starts, ends, count } = runs;
  // The first run that ends after `from`: the last one found or the next (a walk through the text: each
  // look-up after a constant step), else a binary search (several walks take turns).
  let lo = runs.cursor;
  if (!(lo < count && ends[lo]! > from && (lo === 0 || ends[lo - 1]! <= from))) {
    lo += 1;
    if (!(lo < count && ends[lo]! > from && ends[lo - 1]! <= from)) {
      lo = 0;
      let hi = count;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (ends[mid]! <= from) lo = mid + 1;
        else hi = mid;
      }
    }
  }
  if (lo === count) return runs.text.length;
  runs.cursor = lo;
  return Math.max(from, starts[lo]!);
}
