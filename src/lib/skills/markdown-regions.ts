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
 * Inline code spans of one line: a backtick run opens a span closed by the
 * next run of the same length. Linear: "next run of length L" is precomputed
 * right to left.
 */
function inlineCodeSpans(text: string, lineStart: number, lineEnd: number, out: Span[]): void {
  const runs: { start: number; len: number }[] = [];
  // Search the line alone: indexOf on the whole text would run ahead to later lines (quadratic).
  const lineText = text.slice(lineStart, lineEnd);
  for (let i = lineText.indexOf('`'); i >= 0; i = lineText.indexOf('`', i)) {
    let j = i;
    while (j < lineText.length && lineText.charCodeAt(j) === 0x60) j += 1;
    runs.push({ start: lineStart + i, len: j - i });
    i = j;
  }
  if (runs.length < 2) return;
  const next = new Int32Array(runs.length).fill(-1);
  const lastByLen = new Map<number, number>();
  for (let k = runs.length - 1; k >= 0; k--) {
    next[k] = lastByLen.get(runs[k]!.len) ?? -1;
    lastByLen.set(runs[k]!.len, k);
  }
  for (let k = 0; k < runs.length;) {
    const close = next[k]!;
    if (close < 0) {
      k += 1;
      continue;
    }
    const open = runs[k]!;
    const closing = runs[close]!;
    out.push({ start: open.start, end: closing.start + closing.len, region: 'inline-code' });
    k = close + 1;
  }
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
    }
    const head = text.slice(s, Math.min(e, s + 200));
    const blank = head.trim() === '' && (e - s <= 200 || text.slice(s, e).trim() === '');

    // FENCE needs ` or ~ after the indent: most lines that get here are blank or indented code.
    let indent = s;
    while (indent < e && (text.charCodeAt(indent) === 0x20 || text.charCodeAt(indent) === 0x09)) indent += 1;
    const marker0 = text.charCodeAt(indent);
    const fence = marker0 === 0x60 || marker0 === 0x7e ? FENCE.exec(head) : null;
    if (fence) {
      inIndented = undefined;
      const marker = fence[2]!;
      const lang = (fence[3] ?? '').toLowerCase();
      let close = line + 1;
      for (; close < lineStarts.length; close++) {
        const cs = lineStarts[close]!;
        const ce = lineEndOf(close);
        // A line whose first character after spaces and tabs is printable ASCII other than the marker's
        // cannot close the block (trimmed, it starts with that character): no slice for most code lines.
        let k = cs;
        while (k < ce && (text.charCodeAt(k) === 0x20 || text.charCodeAt(k) === 0x09)) k += 1;
        const c = text.charCodeAt(k);
        if (k < ce && c > 0x20 && c < 0x7f && c !== marker.charCodeAt(0)) continue;
        const candidate = text.slice(cs, Math.min(ce, cs + 200)).trim();
        if (candidate.length >= marker.length && candidate[0] === marker[0] && /^(`+|~+)$/.test(candidate)) break;
      }
      const end = close < lineStarts.length ? lineEndOf(close) : text.length;
      spans.push({ start: s, end, region: 'fenced-code', lang, leadIn: leadInOf(text, lineStarts, lastNonBlank) });
      lastNonBlank = -1;
      prevBlank = false;
      line = close + 1;
      continue;
    }

    const indented = (first === 0x09 || text.startsWith('    ', s)) && !blank;
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

    // Prose line: inline code first, then comments outside it.
    const inline: Span[] = [];
    inlineCodeSpans(text, s, e, inline);
    let consumedTo = e;
    let searchFrom = s;
    let inlineIdx = 0;
    const lineText = text.slice(s, e);
    for (;;) {
      const local = searchFrom - s < lineText.length ? lineText.indexOf('<!--', searchFrom - s) : -1;
      if (local < 0) break;
      const open = s + local;
      while (inlineIdx < inline.length && inline[inlineIdx]!.end <= open) spans.push(inline[inlineIdx++]!);
      const inSpan = inlineIdx < inline.length && inline[inlineIdx]!.start <= open;
      if (inSpan) {
        searchFrom = inline[inlineIdx]!.end;
        continue;
      }
      const close = text.indexOf('-->', open + 4);
      const comment: Span = { start: open, end: close < 0 ? text.length : close + 3, region: 'html-comment', terminated: close >= 0 };
      comments.push(comment);
      spans.push(comment);
      // Inline spans that start inside the comment were never code: the comment swallowed them.
      while (inlineIdx < inline.length && inline[inlineIdx]!.start < comment.end) inlineIdx += 1;
      searchFrom = comment.end;
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
  spans.sort((a, b) => a.start - b.start);
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
