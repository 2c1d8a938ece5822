/**
 * Derived views of a raw file, each with a map from every view offset back to
 * the raw offsets it came from. Rules run on every view; a match anywhere is
 * reported at its raw position, so hiding tricks (comments splitting a word,
 * invisible characters, tag characters, full-width or Cyrillic letters) do
 * not move or hide a finding.
 */
import { confusableSkeleton, isBidiControl, isCombiningMark, isInvisible, isTagCharacter, memoizedPerCodePoint, nextNonAscii, type NonAsciiRuns } from './unicode.js';
import { lastStartAtOrBefore } from './markdown-regions.js';
import { htmlCommentSpans } from './sanitize.js';
import type { ScanView } from './types.js';

export interface TextView {
  name: ScanView;
  /** The whole view; a derived view may build it only when this is first read (see `slice`). */
  readonly text: string;
  /** Map from view offsets to raw offsets; undefined means identity. */
  map?: ViewMap;
  /**
   * Sorted view offsets where this view differs from the lower-cased raw text
   * (a comment removed, a non-ASCII character normalized or dropped).
   * Undefined for the raw view. Rules only need to look near these offsets,
   * since everything else was already scanned in the raw view.
   */
  changes?: number[];
  /** `text.length`, known without building the text. */
  readonly length: number;
  /** `text.slice(from, to)` (0 <= from <= to <= length), without building the whole text. */
  slice(from: number, to: number): string;
  /** True when `text.charCodeAt(offset)` is a line feed. */
  isLineFeed(offset: number): boolean;
}

/** A view whose text is a string at hand. */
export function plainView(name: ScanView, text: string, map?: ViewMap, changes?: number[]): TextView {
  return {
    name,
    text,
    map,
    changes,
    length: text.length,
    slice: (from, to) => text.slice(from, to),
    isLineFeed: (offset) => text.charCodeAt(offset) === 0x0a,
  };
}

/**
 * Segments of a view, sorted by view offset: segment k covers view offsets
 * [viewStart[k], viewStart[k + 1]). A copied segment maps offset v to the raw
 * character rawStart[k] + (v - viewStart[k]); a replaced one (a normalized
 * character, a decoded tag) maps each of its offsets to raw [rawStart[k], rawEnd[k]).
 * Sparse: a view costs one segment per change, not one entry per character.
 */
export interface ViewMap {
  viewStart: number[];
  rawStart: number[];
  /** -1 for a copied segment. */
  rawEnd: number[];
}

function segmentAt(map: ViewMap, offset: number): number {
  return lastStartAtOrBefore(map.viewStart, offset);
}

function rawStartOf(view: TextView, i: number): number {
  const map = view.map;
  if (!map) return i;
  const k = segmentAt(map, i);
  return map.rawEnd[k]! < 0 ? map.rawStart[k]! + (i - map.viewStart[k]!) : map.rawStart[k]!;
}

function rawEndOf(view: TextView, i: number): number {
  const map = view.map;
  if (!map) return i + 1;
  const k = segmentAt(map, i);
  return map.rawEnd[k]! < 0 ? map.rawStart[k]! + (i - map.viewStart[k]!) + 1 : map.rawEnd[k]!;
}

/** Maps a view match [from, to) to raw offsets [start, end). */
export function toRawRange(view: TextView, from: number, to: number): { start: number; end: number } {
  if (!view.map) return { start: from, end: to };
  const last = Math.max(from, to - 1);
  return { start: rawStartOf(view, from), end: rawEndOf(view, last) };
}

/**
 * The text of a normalized view, kept as its pieces: a piece is a string, or a range of the
 * input view's text standing for its lower case (runs hold neither U+0130 nor U+03A3, so
 * each code point's lower case is one of the same length, whatever surrounds it). The whole
 * text is built only when read; `slice` builds just the part asked for, so a view scanned in
 * windows costs the windows, not a text-sized copy.
 */
class LazyText {
  /** View offset where each piece starts, plus the total length at the end. */
  readonly starts: number[] = [0];
  /** A string, or the input offset of a lower-cased range (its length from `starts`). */
  readonly pieces: (string | number)[] = [];
  /** Strings pushed since the last range, kept as one piece (a view of dense changes has one per character). */
  private pending = '';
  private size = 0;
  private built: string | undefined;

  constructor(private readonly input: TextView) {}

  get length(): number {
    return this.size;
  }

  pushText(text: string): void {
    this.pending += text;
    this.size += text.length;
  }

  pushLowerCased(from: number, to: number): void {
    this.flush();
    this.pieces.push(from);
    this.size += to - from;
    this.starts.push(this.size);
  }

  private flush(): void {
    if (this.pending.length === 0) return;
    this.pieces.push(this.pending);
    this.starts.push(this.size);
    this.pending = '';
  }

  private pieceAt(offset: number): number {
    return lastStartAtOrBefore(this.starts, offset, this.starts.length - 2);
  }

  text(): string {
    this.flush();
    if (this.built === undefined) {
      const parts: string[] = [];
      for (let k = 0; k < this.pieces.length; k++) {
        const piece = this.pieces[k]!;
        parts.push(typeof piece === 'string' ? piece : this.input.slice(piece, piece + this.starts[k + 1]! - this.starts[k]!).toLowerCase());
      }
      this.built = parts.join('');
    }
    return this.built;
  }

  slice(from: number, to: number): string {
    this.flush();
    if (this.built !== undefined) return this.built.slice(from, to);
    if (to <= from) return '';
    const parts: string[] = [];
    for (let k = this.pieceAt(from); k < this.pieces.length && this.starts[k]! < to; k++) {
      const start = this.starts[k]!;
      const end = this.starts[k + 1]!;
      const a = Math.max(from, start) - start;
      const b = Math.min(to, end) - start;
      const piece = this.pieces[k]!;
      if (typeof piece === 'string') {
        parts.push(piece.slice(a, b));
        continue;
      }
      // One more code unit on each side (inside the run) keeps a surrogate pair at the cut whole.
      const a1 = Math.max(0, a - 1);
      const b1 = Math.min(end - start, b + 1);
      parts.push(
        this.input
          .slice(piece + a1, piece + b1)
          .toLowerCase()
          .slice(a - a1, b - a1),
      );
    }
    return parts.join('');
  }

  isLineFeed(offset: number): boolean {
    this.flush();
    if (this.built !== undefined) return this.built.charCodeAt(offset) === 0x0a;
    if (offset < 0 || offset >= this.length) return false;
    const k = this.pieceAt(offset);
    const piece = this.pieces[k]!;
    const at = offset - this.starts[k]!;
    // Lower-casing neither makes nor removes a line feed.
    return typeof piece === 'string' ? piece.charCodeAt(at) === 0x0a : this.input.isLineFeed(piece + at);
  }
}

class MappedBuilder {
  private parts: string[] = [];
  private length = 0;
  private readonly map: ViewMap = { viewStart: [], rawStart: [], rawEnd: [] };
  /** Set for a normalized view: pieces are kept, not joined (see LazyText). */
  private readonly lazy: LazyText | undefined;

  constructor(lazyInput?: TextView) {
    this.lazy = lazyInput ? new LazyText(lazyInput) : undefined;
  }

  private segment(viewStart: number, rawStart: number, rawEnd: number): void {
    this.map.viewStart.push(viewStart);
    this.map.rawStart.push(rawStart);
    this.map.rawEnd.push(rawEnd);
  }

  /** Text that stands for raw [rawStart, rawEnd) as a whole. */
  push(text: string, rawStart: number, rawEnd: number): void {
    if (text.length === 0) return;
    this.segment(this.length, rawStart, rawEnd);
    if (this.lazy) this.lazy.pushText(text);
    else this.parts.push(text);
    this.length += text.length;
  }

  /** Copies source[from, to) with its existing mapping (lower-cased: only into a lazy builder over `source`). */
  pushRange(source: TextView, from: number, to: number, lowerCase = false): void {
    if (to <= from) return;
    const map = source.map;
    if (!map) this.segment(this.length, from, -1);
    else {
      for (let k = segmentAt(map, from); k < map.viewStart.length && map.viewStart[k]! < to; k++) {
        const at = Math.max(from, map.viewStart[k]!);
        const copied = map.rawEnd[k]! < 0;
        this.segment(this.length + (at - from), copied ? map.rawStart[k]! + (at - map.viewStart[k]!) : map.rawStart[k]!, map.rawEnd[k]!);
      }
    }
    if (this.lazy) {
      if (lowerCase) this.lazy.pushLowerCased(from, to);
      else this.lazy.pushText(source.slice(from, to));
    } else this.parts.push(lowerCase ? source.slice(from, to).toLowerCase() : source.slice(from, to));
    this.length += to - from;
  }

  get size(): number {
    return this.length;
  }

  build(name: ScanView, changes: number[]): TextView {
    const lazy = this.lazy;
    if (!lazy) return plainView(name, this.parts.join(''), this.map, changes);
    return {
      name,
      get text() {
        return lazy.text();
      },
      map: this.map,
      changes,
      length: lazy.length,
      slice: (from, to) => lazy.slice(from, to),
      isLineFeed: (offset) => lazy.isLineFeed(offset),
    };
  }
}

/**
 * A view whose text is ranges of one string laid end to end (the comments-stripped view: the
 * raw text between comments): piece k is base[baseStarts[k], baseStarts[k] + viewStarts[k + 1]
 * - viewStarts[k]). Read through this, the normalized view of it needs no text-sized copy.
 */
interface Ranged {
  base: string;
  /** View offset of each piece, plus the length at the end; no piece is empty. */
  viewStarts: number[];
  baseStarts: number[];
}

/** The pieces of the views made of ranges (a view's own field would be read by spreads and tests). */
const RANGED = new WeakMap<TextView, Ranged>();

function pieceOf(r: Ranged, offset: number): number {
  return lastStartAtOrBefore(r.viewStarts, offset, r.viewStarts.length - 2);
}

function rangedSlice(r: Ranged, from: number, to: number): string {
  if (to <= from) return '';
  const parts: string[] = [];
  for (let k = pieceOf(r, from); k < r.viewStarts.length - 1 && r.viewStarts[k]! < to; k++) {
    const start = r.viewStarts[k]!;
    const offset = r.baseStarts[k]! - start;
    parts.push(r.base.slice(Math.max(from, start) + offset, Math.min(to, r.viewStarts[k + 1]!) + offset));
  }
  return parts.length === 1 ? parts[0]! : parts.join('');
}

/**
 * The text with complete HTML comments removed (as the seed's step 1 does), mapped to raw.
 * Kept as the ranges between comments: the whole text is built only when `text` is read
 * (the scan reads slices of it, and its normalized view reads it through its ranges).
 */
export function commentsStrippedView(raw: TextView): TextView | undefined {
  const text = raw.text;
  if (!text.includes('<!--')) return undefined;
  const spans = htmlCommentSpans(text);
  if (spans.length === 0) return undefined;
  const map: ViewMap = { viewStart: [], rawStart: [], rawEnd: [] };
  const ranged: Ranged = { base: text, viewStarts: [], baseStarts: [] };
  const changes: number[] = [];
  let size = 0;
  const push = (from: number, to: number): void => {
    if (to <= from) return;
    map.viewStart.push(size);
    map.rawStart.push(from);
    map.rawEnd.push(-1);
    ranged.viewStarts.push(size);
    ranged.baseStarts.push(from);
    size += to - from;
  };
  let from = 0;
  for (const [open, end] of spans) {
    push(from, open);
    changes.push(size);
    from = end;
  }
  push(from, text.length);
  ranged.viewStarts.push(size);
  let built: string | undefined;
  const view: TextView = {
    name: 'comments-stripped',
    get text() {
      built ??= rangedSlice(ranged, 0, size);
      return built;
    },
    map,
    changes,
    length: size,
    slice: (a, b) => (built !== undefined ? built.slice(a, b) : rangedSlice(ranged, a, b)),
    isLineFeed: (offset) => {
      if (offset < 0 || offset >= size) return false;
      const k = pieceOf(ranged, offset);
      return text.charCodeAt(ranged.baseStarts[k]! + offset - ranged.viewStarts[k]!) === 0x0a;
    },
  };
  RANGED.set(view, ranged);
  return view;
}

/** What the normalized view reads of its input's text: `charCodeAt`, `codePointAt`, `slice` and {@link nextSpecial}. */
interface Source {
  length: number;
  code(offset: number): number;
  point(offset: number): number;
  slice(from: number, to: number): string;
  nextSpecial(from: number): number;
  asciiOnly(): boolean;
}

/** `runs`: those of `text`, when at hand. */
function stringSource(text: string, runs: NonAsciiRuns | undefined): Source {
  return {
    length: text.length,
    code: (offset) => text.charCodeAt(offset),
    point: (offset) => text.codePointAt(offset)!,
    slice: (from, to) => text.slice(from, to),
    nextSpecial: (from) => nextSpecial(text, from, runs),
    asciiOnly: () => (runs ? runs.count === 0 : ASCII_ONLY.test(text)),
  };
}

/** The same reads over a view made of ranges, offset by offset as over its whole text (a surrogate pair split by a removed comment is one code point, as in the text). */
/** `runs`: those of `r.base`, when at hand. */
function rangedSource(r: Ranged, runs: NonAsciiRuns | undefined): Source {
  const length = r.viewStarts[r.viewStarts.length - 1]!;
  /** The first non-ASCII base offset after the last ASCII run looked up (normalizedView asks nextSpecial for increasing offsets). */
  let nonAscii = -1;
  const code = (offset: number): number => {
    if (offset < 0 || offset >= length) return NaN;
    const k = pieceOf(r, offset);
    return r.base.charCodeAt(r.baseStarts[k]! + offset - r.viewStarts[k]!);
  };
  const point = (offset: number): number => {
    const c = code(offset);
    if (c >= 0xd800 && c <= 0xdbff && offset + 1 < length) {
      const d = code(offset + 1);
      if (d >= 0xdc00 && d <= 0xdfff) return (c - 0xd800) * 0x400 + (d - 0xdc00) + 0x10000;
    }
    return c;
  };
  return {
    length,
    code,
    point,
    slice: (from, to) => rangedSlice(r, from, to),
    nextSpecial: (from) => {
      // nextSpecial over the ranges: ASCII is skipped range by range, the rest read through `point`.
      let k = pieceOf(r, from);
      let p = from;
      while (p < length) {
        while (r.viewStarts[k + 1]! <= p) k += 1;
        const end = r.viewStarts[k + 1]!;
        const offset = r.baseStarts[k]! - r.viewStarts[k]!;
        if (r.base.charCodeAt(p + offset) < 0x80) {
          // The base's next non-ASCII offset is kept: an ASCII run through many short pieces is read once.
          if (nonAscii <= p + offset) nonAscii = asciiRunEnd(r.base, p + offset, runs);
          p = Math.min(end, nonAscii - offset);
        }
        if (p >= end) continue;
        const cp = point(p);
        const width = cp > 0xffff ? 2 : 1;
        if (cp === 0x3a3 || cp === 0x130 || changesUnderNormalization(cp)) return p;
        if (p + width < length && code(p + width) >= 0x300 && isCombiningMark(point(p + width))) return p;
        p += width;
      }
      return length;
    },
    asciiOnly: () => {
      if (runs?.count === 0) return true;
      for (let k = 0; k < r.viewStarts.length - 1; k++) {
        const from = r.baseStarts[k]!;
        if (!ASCII_ONLY.test(r.base.slice(from, from + r.viewStarts[k + 1]! - r.viewStarts[k]!))) return false;
      }
      return true;
    },
  };
}

const ASCII_ONLY = /^[\x00-\x7f]*$/;
/** Sticky: the run of ASCII characters at `lastIndex`, possibly empty (`test` leaves `lastIndex` at its end). */
const ASCII_RUN = /[\x00-\x7f]*/y;

/**
 * The first offset at or after `from` (<= text.length) that holds no ASCII character, or text.length:
 * the regex engine's native loop over the run, where a loop of `charCodeAt` costs several times more
 * (the normalized views and needsNormalizedView skip the whole text's ASCII this way).
 */
function asciiRunEnd(text: string, from: number, runs: NonAsciiRuns | undefined): number {
  if (runs) return nextNonAscii(runs, from);
  ASCII_RUN.lastIndex = from;
  ASCII_RUN.test(text);
  return ASCII_RUN.lastIndex;
}

/**
 * NFKC + case fold + invisible and bidi characters removed + tag characters
 * decoded to the ASCII they stand for + a confusable skeleton (Cyrillic,
 * Greek and other look-alike letters to Latin). NFKC is applied per base
 * character with its combining marks, which keeps every output offset mapped
 * to a raw range.
 */
/** Per code point: does the normalized view change it beyond lower-casing? Computed once per distinct character. */
const changesUnderNormalization = memoizedPerCodePoint((cp) => {
  const ch = String.fromCodePoint(cp);
  const folded = ch.normalize('NFKC').toLowerCase();
  let skeleton = '';
  for (const c of folded) skeleton += confusableSkeleton(c.codePointAt(0)!) ?? c;
  return isTagCharacter(cp) || isInvisible(cp) || isBidiControl(cp) || isCombiningMark(cp) || skeleton !== ch.toLowerCase();
});

/**
 * True when some character of the text normalizes to something else than its lower case:
 * only then is the normalized view worth building (most non-ASCII text, such as emoji,
 * arrows, dashes and curly quotes, is left as it is). One pass over the non-ASCII characters.
 */
export function needsNormalizedView(text: string, runs?: NonAsciiRuns): boolean {
  // ASCII skipped by the engine's native loop, the rest read code point by code point (a lone surrogate
  // is one): a /[^\x00-\x7f]/gu exec loop reads the same code points, but the `u` flag makes its search
  // of the ASCII six times slower (1.1 against 6.7 ms over the 2.8 MB corpus), the whole text's for a
  // file that holds no character normalization changes, as most do.
  for (let p = asciiRunEnd(text, 0, runs); p < text.length; p = asciiRunEnd(text, p, runs)) {
    const cp = text.codePointAt(p)!;
    if (changesUnderNormalization(cp)) return true;
    p += cp > 0xffff ? 2 : 1;
  }
  return false;
}

/**
 * The first offset at or after `from` where the normalized view needs more than
 * the lower case of the text: a character that normalization changes, a
 * non-ASCII character followed by a combining mark (the two are normalized as
 * one cluster), U+03A3 (whose lower case depends on the next letter) or U+0130
 * (whose lower case is two characters), which are lower-cased alone. Everything before it is copied lower-cased, with
 * its offsets, and is not a change: emoji, dashes, curly quotes and CJK text do
 * not make the derived views worth scanning.
 */
function nextSpecial(text: string, from: number, runs: NonAsciiRuns | undefined): number {
  for (let p = from; p < text.length; p++) {
    const c = text.charCodeAt(p);
    if (c < 0x80) {
      p = asciiRunEnd(text, p, runs) - 1;
      continue;
    }
    const cp = text.codePointAt(p)!;
    const width = cp > 0xffff ? 2 : 1;
    if (cp === 0x3a3 || cp === 0x130 || changesUnderNormalization(cp)) return p;
    if (p + width < text.length && text.charCodeAt(p + width) >= 0x300 && isCombiningMark(text.codePointAt(p + width)!)) return p;
    p += width - 1;
  }
  return text.length;
}

/** `runs`: those of the text `input` is made of (its ranges' base, or its text), when at hand. */
export function normalizedView(input: TextView, name: ScanView, runs?: NonAsciiRuns): TextView & { differs: boolean } {
  const ranged = RANGED.get(input);
  const text = ranged ? rangedSource(ranged, runs) : stringSource(input.text, runs);
  if (text.asciiOnly()) {
    if (!ranged) return { ...plainView(name, input.text.toLowerCase(), input.map, input.changes), differs: false };
    // The lower case of ASCII keeps every offset: built only if read.
    let built: string | undefined;
    return {
      name,
      get text() {
        built ??= input.text.toLowerCase();
        return built;
      },
      map: input.map,
      changes: input.changes,
      length: input.length,
      slice: (from, to) => (built !== undefined ? built.slice(from, to) : input.slice(from, to).toLowerCase()),
      isLineFeed: (offset) => input.isLineFeed(offset),
      differs: false,
    };
  }
  const builder = new MappedBuilder(input);
  const changes: number[] = [];
  const inherited = input.changes ?? [];
  // Runs are lower-cased one by one (a whole-text copy is one more text-sized string): they hold
  // neither U+0130 nor U+03A3 (nextSpecial), so their lower case keeps their length and offsets.
  // True once some character comes out other than its own lower case (else the caller compares the texts).
  let differs = false;
  let k = 0;
  let i = 0;
  while (i < text.length) {
    const j = text.nextSpecial(i);
    if (j > i) {
      while (k < inherited.length && inherited[k]! < j) changes.push(builder.size + Math.max(0, inherited[k++]! - i));
      builder.pushRange(input, i, j, true);
      i = j;
      continue;
    }
    while (k < inherited.length && inherited[k]! <= i) {
      changes.push(builder.size);
      k += 1;
    }
    changes.push(builder.size);
    const cp = text.point(i);
    const width = cp > 0xffff ? 2 : 1;
    if (isTagCharacter(cp)) {
      const ascii = cp - 0xe0000;
      if (ascii >= 0x20 && ascii <= 0x7e) builder.push(String.fromCharCode(ascii).toLowerCase(), rawStartOf(input, i), rawEndOf(input, i + width - 1));
      differs = true;
      i += width;
      continue;
    }
    if (isInvisible(cp) || isBidiControl(cp)) {
      differs = true;
      i += width;
      continue;
    }
    let j2 = i + width;
    while (j2 < text.length) {
      const after = text.point(j2);
      if (!isCombiningMark(after)) break;
      j2 += after > 0xffff ? 2 : 1;
    }
    const source = text.slice(i, j2);
    const cluster = source.normalize('NFKC').toLowerCase();
    let out = '';
    for (const ch of cluster) out += confusableSkeleton(ch.codePointAt(0)!) ?? ch;
    if (!differs && out !== source.toLowerCase()) differs = true;
    builder.push(out, rawStartOf(input, i), rawEndOf(input, j2 - 1));
    i = j2;
  }
  while (k < inherited.length) {
    changes.push(builder.size);
    k += 1;
  }
  // Not a spread: that would read (and build) the text.
  return Object.assign(builder.build(name, changes), { differs });
}

/**
 * True when a normalized view's text is not its input's lower case. Without `differs`, every
 * piece of the view is the lower case of the input text it stands for, and lower-casing is
 * per code point except for U+03A3 (final or not: Unicode's Final_Sigma context), which the
 * view lower-cases alone: so a text without it is its input's lower case, and only a text
 * with it is built and compared.
 */
function differsFromLowerCase(view: TextView & { differs: boolean }, input: TextView): boolean {
  if (view.differs) return true;
  // A view made of ranges of a text holds no character that text lacks: no need to build it to know.
  const ranged = RANGED.get(input);
  if (!(ranged ? ranged.base : input.text).includes('\u03a3')) return false;
  return view.text !== input.text.toLowerCase();
}

/**
 * The views rules run on, most literal first. Views equal to an earlier one
 * (or to its lower-case form, since every rule is case-insensitive or runs on
 * the literal views only) are dropped.
 * `runs`: the non-ASCII runs of `raw`, when at hand (else each view looks for them itself).
 */
export function buildViews(raw: string, withComments: boolean, runs?: NonAsciiRuns): TextView[] {
  const rawView = plainView('raw', raw);
  const views: TextView[] = [rawView];
  const stripped = withComments ? commentsStrippedView(rawView) : undefined;
  if (stripped) views.push(stripped);
  // Derived views only where they can differ: no character that normalization changes means the
  // normalized view is the lower-cased raw text, which the case-insensitive rules already saw.
  if (!needsNormalizedView(raw, runs)) return views;
  // A view that differs from the lower-cased text it came from is kept (`differs` says so without comparing).
  const normalized = normalizedView(rawView, 'normalized', runs);
  if (differsFromLowerCase(normalized, rawView)) views.push(normalized);
  if (stripped) {
    const normalizedStripped = normalizedView(stripped, 'normalized-comments-stripped', runs);
    if (differsFromLowerCase(normalizedStripped, stripped)) views.push(normalizedStripped);
  }
  return views;
}

/** Context kept on each side of a change: longer than any single rule match. */
const WINDOW_MARGIN = 1_000;

/**
 * The parts of a derived view worth scanning: line-aligned windows around its
 * changes, merged. Undefined means the whole view (raw view, or changes so
 * dense that windows would cover most of it).
 */
export function scanWindows(view: TextView): [number, number][] | undefined {
  if (!view.changes) return undefined;
  const length = view.length;
  const limit = length * 0.6;
  const windows: [number, number][] = [];
  let covered = 0;
  // Line-align a finished window, looking at most one margin further (long lines stay bounded).
  const close = (w: [number, number]): void => {
    for (let k = 0; w[0] > 0 && k < WINDOW_MARGIN && !view.isLineFeed(w[0] - 1); k++) w[0] -= 1;
    for (let k = 0; w[1] < length && k < WINDOW_MARGIN && !view.isLineFeed(w[1]); k++) w[1] += 1;
  };
  for (const change of view.changes) {
    const start = Math.max(0, change - WINDOW_MARGIN);
    const end = Math.min(length, change + WINDOW_MARGIN);
    const last = windows[windows.length - 1];
    if (last && start <= last[1] + WINDOW_MARGIN) {
      if (end > last[1]) {
        covered += end - last[1];
        last[1] = end;
      }
    } else {
      if (last) close(last);
      windows.push([start, end]);
      covered += end - start;
    }
    if (covered > limit) return undefined;
  }
  const last = windows[windows.length - 1];
  if (last) close(last);
  // Closing can make neighbours touch; merge them.
  const merged: [number, number][] = [];
  for (const w of windows) {
    const prev = merged[merged.length - 1];
    if (prev && w[0] <= prev[1]) prev[1] = Math.max(prev[1], w[1]);
    else merged.push(w);
  }
  return merged;
}
