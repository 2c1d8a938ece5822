/**
 * How a memory note is cut for the index, and how a query becomes an FTS5
 * expression. Pure functions over bytes and strings.
 *
 * Chunks follow the Markdown: a heading starts a new chunk, and a chunk ends
 * at a blank line once it holds 20 lines or 2 KiB (hard cut at 60 lines or
 * 8 KiB), so a match points at a section, not at a whole file, and the byte
 * range stored for it is small enough to read back for a snippet.
 */
/** One section of a note as the index stores it: where it starts (line, byte) and its text for FTS5. */
export interface Chunk {
  line: number;
  byteStart: number;
  byteLen: number;
  text: string;
}

const SOFT_LINES = 20;
const SOFT_BYTES = 2048;
const HARD_LINES = 60;
const HARD_BYTES = 8192;

const HEADING = /^ {0,3}#{1,6}(\s|$)/;

export function chunkMarkdown(data: Buffer): Chunk[] {
  const chunks: Chunk[] = [];
  let start = 0; // byte where the current chunk starts
  let startLine = 1;
  let lines = 0;
  let line = 1;
  let pos = 0;
  const close = (end: number): void => {
    if (end > start) {
      const text = data.subarray(start, end).toString('utf8');
      if (text.trim() !== '') chunks.push({ line: startLine, byteStart: start, byteLen: end - start, text });
    }
    start = end;
    startLine = line;
    lines = 0;
  };
  while (pos < data.length) {
    let nl = data.indexOf(0x0a, pos);
    if (nl === -1) nl = data.length;
    const text = data.subarray(pos, Math.min(nl, pos + 16)).toString('utf8');
    const blank = data.subarray(pos, nl).toString('utf8').trim() === '';
    if (HEADING.test(text) && lines > 0) close(pos);
    lines++;
    const size = nl + 1 - start;
    pos = nl + 1;
    line++;
    if ((blank && (lines >= SOFT_LINES || size >= SOFT_BYTES)) || lines >= HARD_LINES || size >= HARD_BYTES) close(Math.min(pos, data.length));
  }
  close(data.length);
  return chunks;
}

/** Plain words of a query (letters, digits, `_`), lowercased, at most 32 distinct. */
export function queryTerms(query: string): string[] {
  const words = query.toLowerCase().match(/[\p{L}\p{N}_]+/gu) ?? [];
  return [...new Set(words)].slice(0, 32);
}

/**
 * An FTS5 expression matching any of the terms, each quoted, so nothing a
 * script writes is FTS5 syntax (no column filters, NEAR, or `*` blowups).
 * BM25 ranks chunks that hold more of them first.
 */
export function ftsQuery(terms: readonly string[]): string {
  return terms.map((t) => `"${t}"`).join(' OR ');
}

/** The line of a chunk that best matches the terms (most terms, earliest), 0-based within the chunk. */
export function bestLine(chunkText: string, terms: readonly string[]): { index: number; text: string } {
  const lines = chunkText.split('\n');
  // The index stems (porter): "runbooks" matches "runbook"; a crude stem finds the line again.
  const stems = terms.map((t) => (t.length > 5 ? t.slice(0, t.length - 2) : t));
  let best = { index: 0, text: lines[0] ?? '', score: -1 };
  lines.forEach((text, index) => {
    const lower = text.toLowerCase();
    const score = stems.reduce((n, s) => n + (lower.includes(s) ? 1 : 0), 0);
    if (score > best.score) best = { index, text, score };
  });
  return { index: best.index, text: best.text };
}
