/**
 * The seed's 4-step sanitization pipeline for a prompt-skill body, in its
 * strict order: strip HTML comments, NFKC-normalize, strip invisible
 * characters, enforce the size limit. This is what a platform feeds into a
 * system prompt; the scanner does NOT scan this output (it scans the raw text
 * and derived views), because sanitizing first would hide what attackers use.
 *
 * All functions are pure.
 */

export interface SanitizeOptions {
  /** Maximum length of the sanitized body in UTF-16 code units (default 20,000). */
  maxBodyLength?: number;
}

export interface SanitizeResult {
  /** Final sanitized content. */
  body: string;
  /** Count of HTML comments removed. */
  htmlCommentsStripped: number;
  /** Whether the size limit was hit. */
  truncated: boolean;
  /** Unicode tag-block characters (U+E0000-U+E007F) were present. */
  tagBlockDetected: boolean;
}

export const DEFAULT_MAX_BODY_LENGTH = 20_000;
export const TRUNCATION_MARKER = '\n[TRUNCATED]';

/**
 * Step 1. Non-greedy, so two comments separated by text are removed one by
 * one and the text between them survives. An unterminated `<!--` is left in
 * place: the seed strips only complete comments (the scanner reports the
 * unterminated one).
 */
export function stripHtmlComments(text: string): { text: string; count: number } {
  const spans = htmlCommentSpans(text);
  if (spans.length === 0) return { text, count: 0 };
  let out = '';
  let from = 0;
  for (const [open, end] of spans) {
    out += text.slice(from, open);
    from = end;
  }
  return { text: out + text.slice(from), count: spans.length };
}

/**
 * The `[start, end)` spans of complete HTML comments, non-greedy and in order.
 * Same matches as /<!--[\s\S]*?-->/g, but with indexOf: the regex is
 * quadratic on many unclosed `<!--` (each start scans to the end of the text).
 */
export function htmlCommentSpans(text: string): Array<[number, number]> {
  const spans: Array<[number, number]> = [];
  let from = 0;
  for (;;) {
    const open = text.indexOf('<!--', from);
    if (open < 0) break;
    const close = text.indexOf('-->', open + 4);
    if (close < 0) break;
    spans.push([open, close + 3]);
    from = close + 3;
  }
  return spans;
}

/** Step 2. Compatibility decomposition + canonical composition (full-width, ligatures, ...). */
export function normalizeNfkc(text: string): string {
  return text.normalize('NFKC');
}

/** The seed's list: ZWJ, ZWNJ, ZWSP, soft hyphen, LRM, RLM and the tag block. */
// eslint-disable-next-line no-misleading-character-class -- a set of single invisible code points (ZWJ among them), never a joined sequence
const SEED_INVISIBLES = /[\u200B\u200C\u200D\u00AD\u200E\u200F]|[\u{E0000}-\u{E007F}]/gu;
const TAG_BLOCK = /[\u{E0000}-\u{E007F}]/u;

/** Step 3. Removes the seed's invisible characters and says whether tag characters were among them. */
export function stripInvisibleCharacters(text: string): { text: string; tagBlockDetected: boolean } {
  return { text: text.replace(SEED_INVISIBLES, ''), tagBlockDetected: TAG_BLOCK.test(text) };
}

/**
 * Step 4. Applied after the other steps so that comments cannot push real
 * content over the limit. Never splits a surrogate pair.
 */
export function enforceSizeLimit(text: string, maxBodyLength: number): { text: string; truncated: boolean } {
  if (text.length <= maxBodyLength) return { text, truncated: false };
  let cut = maxBodyLength;
  const last = text.charCodeAt(cut - 1);
  if (last >= 0xd800 && last <= 0xdbff) cut -= 1;
  return { text: text.slice(0, cut) + TRUNCATION_MARKER, truncated: true };
}

/**
 * Runs the four steps in the seed's order. Security property: the returned
 * body contains no complete HTML comment, none of the seed's invisible
 * characters, is NFKC-normalized, and is at most `maxBodyLength` code units
 * plus the truncation marker.
 */
export function sanitizeSkillBody(body: string, options: SanitizeOptions = {}): SanitizeResult {
  const maxBodyLength = options.maxBodyLength ?? DEFAULT_MAX_BODY_LENGTH;
  if (!Number.isInteger(maxBodyLength) || maxBodyLength < 0) {
    throw new RangeError(`maxBodyLength must be a non-negative integer, got ${maxBodyLength}`);
  }
  const comments = stripHtmlComments(body);
  const normalized = normalizeNfkc(comments.text);
  const visible = stripInvisibleCharacters(normalized);
  const sized = enforceSizeLimit(visible.text, maxBodyLength);
  return {
    body: sized.text,
    htmlCommentsStripped: comments.count,
    truncated: sized.truncated,
    tagBlockDetected: visible.tagBlockDetected,
  };
}
