/**
 * Where things sit in a Markdown skill file: frontmatter and its
 * `description` value, fenced and indented code blocks, inline code spans and
 * HTML comments. The scanner uses this to tell a command the skill only
 * documents from one it tells the agent to run, and to find hidden comments.
 * One linear pass over the lines; no regex with unbounded backtracking.
 */
import type { ScanRegion } from './types.js';

export interface Span {
  start: number;
  end: number;
  region: ScanRegion;
  /** Fenced code: the info string's first word, lower-cased ('' when none). */
  lang?: string;
  /** Code blocks: the last non-blank line before the block (at most 300 chars). */
  leadIn?: string;
  /** HTML comments: false when no `-->` closes it. */
  terminated?: boolean;
}

export interface MarkdownRegions {
  /** Frontmatter block including both `---` lines, or undefined when the file has none. */
  frontmatter?: { start: number; end: number; contentStart: number; contentEnd: number; opener: string };
  /** The value of the frontmatter `description` key (raw offsets). */
  description?: { start: number; end: number };
  /** Non-overlapping spans sorted by start: code blocks, inline code, comments. */
  spans: Span[];
  comments: Span[];
}

export function computeLineStarts(text: string): Int32Array {
  // One pass into a buffer sized for a line per 32 characters, doubled when short (a pass to count
  // the lines first cost as much as the pass that records them).
  let starts = new Int32Array(Math.max(16, text.length >> 5));
  let n = 1;
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) {
    if (n === starts.length) {
      const larger = new Int32Array(n * 2);
      larger.set(starts);
      starts = larger;
    }
    starts[n++] = i + 1;
  }
  return starts.slice(0, n);
}

/**
 * Index of the last of the ascending `starts[0..last]` at or before `position`
 * (0 when none): a binary search, for line starts, sentence starts and a view's pieces.
 */
export function lastStartAtOrBefore(starts: ArrayLike<number>, position: number, last = starts.length - 1): number {
  let lo = 0;
  let hi = last;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid]! <= position) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** 0-based line index of a position (binary search over line starts). */
export function lineIndexAt(lineStarts: Int32Array, position: number): number {
  return lastStartAtOrBefore(lineStarts, position);
}

const FRONTMATTER_OPEN = /^\uFEFF?(---[A-Za-z]*)[ \t]*\r?$/;

/**
 * The frontmatter block: a first line `---` (or `---yaml` etc.) up to the next line that is only
 * `---` or `...`. Walks lines with indexOf, so finding it costs nothing beyond the block.
 */
export function findFrontmatter(text: string): MarkdownRegions['frontmatter'] {
  const firstEnd = text.indexOf('\n');
  const first = text.slice(0, firstEnd < 0 ? text.length : firstEnd);
  const open = FRONTMATTER_OPEN.exec(first);
  if (!open || firstEnd < 0) return undefined;
  for (let s = firstEnd + 1; ;) {
    const nl = text.indexOf('\n', s);
    const e = nl < 0 ? text.length : nl;
    const line = text.slice(s, Math.min(e, s + 8)).replace(/\r$/, '');
    if (/^(---|\.\.\.)[ \t]*$/.test(line) && e - s <= 8) {
      return { start: 0, end: e, contentStart: firstEnd + 1, contentEnd: s, opener: open[1]! };
    }
    if (nl < 0) return undefined;
    s = nl + 1;
  }
}

function findDescription(text: string, fm: NonNullable<MarkdownRegions['frontmatter']>): MarkdownRegions['description'] {
  const body = text.slice(fm.contentStart, fm.contentEnd);
  const m = /^description[ \t]*:[ \t]*/m.exec(body);
  if (!m) return undefined;
  const start = fm.contentStart + m.index + m[0].length;
  // The value runs until the next top-level key or the end of the frontmatter.
  const rest = body.slice(m.index + m[0].length);
  const next = /\n(?=[^\s#-][^\n:]{0,200}:)/.exec(rest);
  return { start, end: next ? start + next.index : fm.contentEnd };
}

const FENCE = /^([ \t]*)(`{3,}|~{3,})[ \t]*([^\s`]*)/;

/**
 * Whether a UTF-16 code unit is one `String.prototype.trim` removes (white space and line terminators):
 * ASCII by its code, the rest asked of `trim` itself once per unit, so a blank line is found without
 * slicing and trimming it.
 */
function isTrimmed(c: number): boolean {
  if (c < 0x80) return c === 0x20 || (c >= 0x09 && c <= 0x0d);
  trimmedUnits ??= new Uint8Array(0x10000);
  let answer = trimmedUnits[c]!;
  if (answer === 0) {
    answer = String.fromCharCode(c).trim() === '' ? 2 : 1;
    trimmedUnits[c] = answer;
  }
  return answer === 2;
}
/** Per code unit at or above U+0080: 0 not asked yet, 1 kept by trim, 2 removed. */
let trimmedUnits: Uint8Array | undefined;

/** Backtick runs of the line being read, as start offsets and lengths (reused from line to line: most prose lines with code hold a few). */
let runStarts = new Int32Array(64);
let runLengths = new Int32Array(64);
let runNext = new Int32Array(64);
/** The last run seen of each length under 64, right to left, plus one (0: none); reset per line, entry by entry (Map.clear allocates). */
const lastShortRun = new Int32Array(64);

/**
 * Inline code spans of one line [lineStart, lineEnd), whose first backtick is at `tick` (lineEnd or
 * more when it has none): a backtick run opens a span closed by the next run of the same length.
 * Linear: "next run of length L" is precomputed right to left. Returns the first backtick after
 * the line (the next line's search starts there).
 */
function inlineCodeSpans(text: string, tick: number, lineEnd: number, out: Span[]): number {
  let count = 0;
  let i = tick;
  for (; i < lineEnd; i = nextAt(text, '`', -1, i)) {
    let j = i;
    while (j < lineEnd && text.charCodeAt(j) === 0x60) j += 1;
    if (count === runStarts.length) {
      runStarts = grow(runStarts);
      runLengths = grow(runLengths);
      runNext = grow(runNext);
    }
    runStarts[count] = i;
    runLengths[count] = j - i;
    count += 1;
    i = j;
  }
  if (count < 2) return i;
  let longRuns: Map<number, number> | undefined;
  for (let k = count - 1; k >= 0; k--) {
    const length = runLengths[k]!;
    if (length < 64) {
      runNext[k] = lastShortRun[length]! - 1;
      lastShortRun[length] = k + 1;
    } else {
      longRuns ??= new Map();
      runNext[k] = longRuns.get(length) ?? -1;
      longRuns.set(length, k);
    }
  }
  for (let k = 0; k < count; k++) if (runLengths[k]! < 64) lastShortRun[runLengths[k]!] = 0;
  for (let k = 0; k < count;) {
    const close = runNext[k]!;
    if (close < 0) {
      k += 1;
      continue;
    }
    out.push({ start: runStarts[k]!, end: runStarts[close]! + runLengths[close]!, region: 'inline-code' });
    k = close + 1;
  }
  return i;
}

function grow(a: Int32Array): Int32Array<ArrayBuffer> {
  const larger = new Int32Array(a.length * 2);
  larger.set(a);
  return larger;
}

/** The first offset at or after `from` of `needle`, text.length when none; `cursor` is an earlier answer for an offset at or before `from`. */
function nextAt(text: string, needle: string, cursor: number, from: number): number {
  if (cursor >= from) return cursor;
  const k = text.indexOf(needle, from);
  return k < 0 ? text.length : k;
}

/** A code block's lead-in: the text of the line (at most 300 characters of its first 200, trimmed), '' for none (-1). */
function leadInOf(text: string, lineStarts: Int32Array, line: number): string {
  if (line < 0) return '';
  const start = lineStarts[line]!;
  const end = line + 1 < lineStarts.length ? lineStarts[line + 1]! - 1 : text.length;
  return text
    .slice(start, Math.min(end, start + 200))
    .trim()
    .slice(0, 300);
}

/**
 * The line that closes a fenced block opened by `marker` on the line before `from`, or lineStarts.length
 * when none does. A closing line holds the marker's character (trimmed, it is a run of it), so only the
 * lines that hold one are read: the search jumps from one such character to the next.
 */
function closingFence(text: string, lineStarts: Int32Array, marker: string, from: number): number {
  const lines = lineStarts.length;
  if (from >= lines) return lines;
  const char = marker[0]!;
  for (let at = text.indexOf(char, lineStarts[from]!); at >= 0;) {
    const line = lastStartAtOrBefore(lineStarts, at, lines - 1);
    const cs = lineStarts[line]!;
    const ce = line + 1 < lines ? lineStarts[line + 1]! - 1 : text.length;
    // The first character after spaces and tabs: printable ASCII other than the marker's cannot close (trimmed, the line starts with it).
    let k = cs;
    while (k < ce && (text.charCodeAt(k) === 0x20 || text.charCodeAt(k) === 0x09)) k += 1;
    const c = text.charCodeAt(k);
    if (!(k < ce && c > 0x20 && c < 0x7f && c !== char.charCodeAt(0))) {
      const candidate = text.slice(cs, Math.min(ce, cs + 200)).trim();
      if (candidate.length >= marker.length && candidate[0] === char && /^(`+|~+)$/.test(candidate)) return line;
    }
    if (line + 1 >= lines) return lines;
    at = text.indexOf(char, lineStarts[line + 1]!);
  }
  return lines;
}

/** Computes the regions of a Markdown document. */
export function analyzeMarkdown(text: string, lineStarts: Int32Array = computeLineStarts(text)): MarkdownRegions {
  const frontmatter = findFrontmatter(text);
  const description = frontmatter ? findDescription(text, frontmatter) : undefined;
  const spans: Span[] = [];
  const comments: Span[] = [];
  let line = 0;
  if (frontmatter) line = lineIndexAt(lineStarts, frontmatter.end) + 1;
  // The next backtick and comment opener at or after the current line (text.length for none): found once,
  // not per line, so a line without either is passed over without a slice or a search of its own.
  let nextTick = -1;
  let nextOpen = -1;
  let prevBlank = true;
  let inIndented: Span | undefined;
  const lineEndOf = (i: number): number => (i + 1 < lineStarts.length ? lineStarts[i + 1]! - 1 : text.length);
  // The last non-blank line (its text is a code block's lead-in: built only for a block), -1 for none.
  let lastNonBlank = -1;
  while (line < lineStarts.length) {
    const s = lineStarts[line]!;
    const e = lineEndOf(line);
    if (s === e) {
      // An empty line: blank, and nothing else to find on it.
      prevBlank = true;
      line += 1;
      continue;
    }
    // Most lines start with a printable ASCII character other than a space, a tab, ` or ~: neither
    // blank nor a fence nor indented code, they are prose, read only for inline code and comments.
    const first = text.charCodeAt(s);
    let blank = false;
    if (first > 0x20 && first < 0x7f && first !== 0x60 && first !== 0x7e) {
      inIndented = undefined;
      nextTick = nextAt(text, '`', nextTick, s);
      nextOpen = nextAt(text, '<!--', nextOpen, s);
      if (nextTick >= e && nextOpen >= e) {
        lastNonBlank = line;
        prevBlank = false;
        line += 1;
        continue;
      }
    } else {
      // Blank: only what trim removes. FENCE needs ` or ~ after the indent: most lines that get here are blank or indented code.
      let k = s;
      while (k < e && isTrimmed(text.charCodeAt(k))) k += 1;
      blank = k === e;
      let indent = s;
      while (indent < e && (text.charCodeAt(indent) === 0x20 || text.charCodeAt(indent) === 0x09)) indent += 1;
      const marker0 = text.charCodeAt(indent);
      const fence = marker0 === 0x60 || marker0 === 0x7e ? FENCE.exec(text.slice(s, Math.min(e, s + 200))) : null;
      if (fence) {
        inIndented = undefined;
        const marker = fence[2]!;
        const lang = (fence[3] ?? '').toLowerCase();
        const close = closingFence(text, lineStarts, marker, line + 1);
        const end = close < lineStarts.length ? lineEndOf(close) : text.length;
        spans.push({ start: s, end, region: 'fenced-code', lang, leadIn: leadInOf(text, lineStarts, lastNonBlank) });
        lastNonBlank = -1;
        prevBlank = false;
        line = close + 1;
        continue;
      }

      const indented = (first === 0x09 || (text.charCodeAt(s) === 0x20 && text.charCodeAt(s + 1) === 0x20 && text.charCodeAt(s + 2) === 0x20 && text.charCodeAt(s + 3) === 0x20)) && !blank;
      if (indented && (prevBlank || inIndented)) {
        if (inIndented) inIndented.end = e;
        else {
          inIndented = { start: s, end: e, region: 'indented-code', lang: '', leadIn: leadInOf(text, lineStarts, lastNonBlank) };
          spans.push(inIndented);
        }
        prevBlank = false;
        line += 1;
        continue;
      }
      if (!blank) inIndented = undefined;
      nextTick = nextAt(text, '`', nextTick, s);
      nextOpen = nextAt(text, '<!--', nextOpen, s);
    }

    // Prose line: inline code first, then comments outside it.
    const inline: Span[] = [];
    nextTick = inlineCodeSpans(text, nextTick, e, inline);
    let consumedTo = e;
    let inlineIdx = 0;
    while (nextOpen < e) {
      const open = nextOpen;
      while (inlineIdx < inline.length && inline[inlineIdx]!.end <= open) spans.push(inline[inlineIdx++]!);
      const inSpan = inlineIdx < inline.length && inline[inlineIdx]!.start <= open;
      if (inSpan) {
        nextOpen = nextAt(text, '<!--', nextOpen, inline[inlineIdx]!.end);
        continue;
      }
      const close = text.indexOf('-->', open + 4);
      const comment: Span = { start: open, end: close < 0 ? text.length : close + 3, region: 'html-comment', terminated: close >= 0 };
      comments.push(comment);
      spans.push(comment);
      // Inline spans that start inside the comment were never code: the comment swallowed them.
      while (inlineIdx < inline.length && inline[inlineIdx]!.start < comment.end) inlineIdx += 1;
      nextOpen = nextAt(text, '<!--', nextOpen, comment.end);
      consumedTo = Math.max(e, comment.end);
      if (comment.end > e) break;
    }
    while (inlineIdx < inline.length) spans.push(inline[inlineIdx++]!);
    if (consumedTo > e) {
      // The comment ran over later lines: resume on the line after its end.
      line = lineIndexAt(lineStarts, consumedTo - 1) + 1;
      prevBlank = false;
      continue;
    }
    if (!blank) lastNonBlank = line;
    prevBlank = blank;
    line += 1;
  }
  // Pushed in order of their starts (a check costs less than sorting them again).
  for (let k = 1; k < spans.length; k++) {
    if (spans[k - 1]!.start > spans[k]!.start) {
      spans.sort((a, b) => a.start - b.start);
      break;
    }
  }
  return { frontmatter, description, spans, comments };
}

/** The innermost span containing a position, or undefined for prose. */
export function spanAt(spans: readonly Span[], position: number): Span | undefined {
  let lo = 0;
  let hi = spans.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (spans[mid]!.start <= position) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  // Spans do not nest, but an inline span may start inside a long comment's range; walk back a little.
  for (let k = found; k >= 0 && k > found - 4; k--) {
    const span = spans[k]!;
    if (span.start <= position && position < span.end) return span;
  }
  return undefined;
}
