/**
 * Content from outside (web pages, search results, MCP results, resumed
 * checkpoints) is DATA: a jailed script reads it, and whatever the script
 * prints may reach a model, so the text must never be able to pose as our own
 * framing. Two steps, always in this order:
 *
 *  1. `sanitizeUntrustedText` removes what a reader cannot see but a model
 *     does: Unicode tag characters (U+E0000–U+E007F, "ASCII smuggling"), bidi
 *     controls and overrides, zero-width and other invisible format
 *     characters, and C0/C1 control characters except tab, newline and CR;
 *     then it defuses every spelling of our envelope markers inside the text
 *     (case, spacing, `_`/`-`, fullwidth forms after NFKC), so a page cannot
 *     close the envelope early or open a fake "trusted" section.
 *  2. `wrapUntrusted` frames the sanitized text in the fixed, documented
 *     envelope (docs/security-model.md, "Content from outside"):
 *
 *       <<<EXTERNAL_UNTRUSTED_CONTENT id=3f9c… source=web_fetch origin="https://example.org/">>>
 *       …the text…
 *       <<<END_EXTERNAL_UNTRUSTED_CONTENT id=3f9c…>>>
 *
 *     The id is random per envelope: even a marker that survived step 1
 *     could not name it.
 *
 * Structured payloads (JSON, JSONL, CSV) are not wrapped in text, or `.jq`
 * and `.sql` could not read them; their string values still go through
 * `sanitizeUntrustedValue`, and the handle carries `untrusted: true`.
 */
import { isAscii } from 'node:buffer';
import { randomBytes } from 'node:crypto';

export const ENVELOPE_OPEN = '<<<EXTERNAL_UNTRUSTED_CONTENT';
export const ENVELOPE_CLOSE = '<<<END_EXTERNAL_UNTRUSTED_CONTENT';
/** What a defused marker is replaced with (visible, so a reader sees something was there). */
export const DEFUSED_MARKER = '[marker removed]';

export interface UntrustedSource {
  /** The tool the content came through: web_fetch, web_search, mcp:<server>.<tool>, checkpoint. */
  source: string;
  /** Where it came from (a URL, a server name); sanitized and quoted. */
  origin?: string;
}

/**
 * Format characters that render: Arabic, Syriac and Kaithi marks prefixed to a number (Unicode's
 * Prepended_Concatenation_Mark), kept although they are `Cf`.
 */
const VISIBLE_FORMAT = new Set([0x0600, 0x0601, 0x0602, 0x0603, 0x0604, 0x0605, 0x06dd, 0x070f, 0x0890, 0x0891, 0x08e2, 0x110bd, 0x110cd]);
/** Every other invisible: Unicode's default-ignorable code points and format characters (the engine's Unicode data). */
const IGNORABLE = /[\p{Default_Ignorable_Code_Point}\p{Cf}]/u;

/** The reference definition of what step 1 strips (the regex below is checked against it for every code point). */
export function isStrippedCodePoint(cp: number): boolean {
  if (cp === 0x09 || cp === 0x0a || cp === 0x0d) return false;
  if (!VISIBLE_FORMAT.has(cp) && IGNORABLE.test(String.fromCodePoint(cp))) return true;
  return isListedInvisible(cp);
}

/** The code points listed by hand before the Unicode classes were added (all still stripped; tab, LF and CR are kept by the caller). */
function isListedInvisible(cp: number): boolean {
  if (cp >= 0xe0000 && cp <= 0xe007f) return true; // tag characters
  if (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)) return true; // C0, DEL, C1
  if (cp === 0x00ad || cp === 0x034f || cp === 0x061c || cp === 0x115f || cp === 0x1160 || cp === 0x17b4 || cp === 0x17b5) return true;
  if (cp === 0x180e || cp === 0x3164 || cp === 0xffa0 || cp === 0xfeff) return true;
  if (cp >= 0x200b && cp <= 0x200f) return true; // zero-width, LRM/RLM
  if (cp >= 0x202a && cp <= 0x202e) return true; // bidi embeddings/overrides
  if (cp >= 0x2060 && cp <= 0x206f) return true; // word joiner, invisible operators, bidi isolates
  if (cp >= 0xfe00 && cp <= 0xfe0f) return true; // variation selectors
  if (cp >= 0xe0100 && cp <= 0xe01ef) return true; // variation selectors supplement
  if (cp >= 0xfff9 && cp <= 0xfffb) return true; // interlinear annotations
  return false;
}

/**
 * {@link isStrippedCodePoint} as one regex: controls, default-ignorables and format characters
 * but tab, LF, CR and the marks that render, as one class (`v` flag: a set difference). Every
 * code point listed by hand before is in it. A per-character loop building a new string cost
 * ~230 ms per MB; this ~7 ms per MB of non-ASCII text (ASCII never reaches it).
 * test/untrusted/envelope-strip.test.ts checks it against the predicate on every code point.
 */
export const STRIPPED_CHARS = new RegExp('[[\\p{Cc}\\p{Default_Ignorable_Code_Point}\\p{Cf}]--[\\t\\n\\r\\u0600-\\u0605\\u06DD\\u070F\\u0890\\u0891\\u08E2\\u{110BD}\\u{110CD}]]', 'gv');

function stripInvisible(text: string): string {
  return text.replace(STRIPPED_CHARS, '');
}

/**
 * Any spelling of the two marker words: `EXTERNAL_UNTRUSTED_CONTENT`,
 * `external untrusted content`, `END-EXTERNAL…`, with any run of separators.
 * Run after NFKC, so fullwidth letters fold to ASCII first.
 *
 * Linear in the text: a run of `<` is taken whole from its first `<` only
 * (the lookbehind). Without it, a match was tried from every `<` of a run,
 * each try reading the rest of the run, so a text of `<`s holding the word
 * "untrusted" held comis's event loop for O(n²): 10 s for 160 KB of a page
 * or of a checkpoint. A match from inside a run ends where the one from its
 * first `<` does, so the matches are the same (test/untrusted/envelope.test.ts
 * compares the two on random texts).
 */
export const MARKER = /(?:(?<!<)<{2,}\s*)?(?:end[\s_\-.]*)?external[\s_\-.]*untrusted[\s_\-.]*content(?:[^\n>]{0,80}>{2,})?/giu;

/** Printable ASCII, tab, LF, CR only: NFKC leaves it unchanged and it holds nothing to strip. */
const NOT_PLAIN_ASCII = /[^\x20-\x7e\t\n\r]/;
/** A necessary condition of MARKER (same flags), cheap to test: most text never names the markers. */
const MARKER_WORD = /untrusted/iu;

/** Step 1: invisible characters out, envelope markers defused. Pure. */
export function sanitizeUntrustedText(text: string): string {
  // Fast paths with the same result: megabyte pages are the common case for web_fetch.
  const visible = NOT_PLAIN_ASCII.test(text) ? stripInvisible(text.normalize('NFKC')) : text;
  return MARKER_WORD.test(visible) ? visible.replace(MARKER, DEFUSED_MARKER) : visible;
}

const UNTRUSTED_TAIL = [0x6e, 0x74, 0x72, 0x75, 0x73, 0x74, 0x65, 0x64]; // "ntrusted"

/** Byte `i` of `bytes` (known to be ASCII) is printable, tab, LF or CR, and does not start "untrusted" in any case. */
function cleanAsciiByte(bytes: Uint8Array, i: number): boolean {
  const c = bytes[i]!;
  if (c < 0x20) return c === 0x09 || c === 0x0a || c === 0x0d;
  if (c === 0x7f) return false;
  if ((c | 0x20) === 0x75 && i + 8 < bytes.length) {
    let j = 0;
    while (j < 8 && (bytes[i + 1 + j]! | 0x20) === UNTRUSTED_TAIL[j]) j++;
    if (j === 8) return false;
  }
  return true;
}

/**
 * True only when `bytes` are printable ASCII, tab, LF and CR and nowhere spell
 * "untrusted" (in any case): their text (UTF-8 and latin1 decode them alike) is
 * then exactly what {@link sanitizeUntrustedText} returns for it, so a caller may
 * skip decoding and sanitizing a megabyte body. Conservative: false does not mean
 * the sanitizer would change anything. One pass, four bytes at a time: a word with
 * no control byte, DEL or u/U is passed whole (the per-byte check runs on the rest).
 * test/untrusted/clean-ascii.test.ts holds it to that definition over random and
 * adversarial bytes.
 */
export function isCleanAscii(bytes: Uint8Array): boolean {
  return cleanAsciiLines(bytes) >= 0;
}

/** Whether "untrusted" (any case) starts at `i` of `bytes`: its u/U there is already known. */
function untrustedAt(bytes: Uint8Array, i: number): boolean {
  if (i + 8 >= bytes.length) return false;
  for (let j = 0; j < 8; j++) if ((bytes[i + 1 + j]! | 0x20) !== UNTRUSTED_TAIL[j]) return false;
  return true;
}

/** The high bit of each byte of `x` (all bytes < 0x80) that is zero, exactly (no borrow: x + 0x7f per byte stays under 0x100). */
function zeroBytes(x: number): number {
  return ~(x + 0x7f7f7f7f) & 0x80808080;
}

/**
 * {@link isCleanAscii} and, when clean, the number of LF bytes in `bytes`
 * (else -1), in the same pass: web_fetch checks and counts the rows of a CSV
 * body chunk by chunk as it streams to its ResultRef. Four bytes at a time
 * with exact per-byte masks (the bytes are ASCII, so no mask borrows across
 * bytes): a word with no byte below 0x20, no DEL and no u/U is passed whole;
 * one with tab/LF/CR only counts its LFs and goes on; only a u/U is looked at
 * byte by byte.
 */
export function cleanAsciiLines(bytes: Uint8Array): number {
  if (!isAscii(bytes)) return -1;
  const n = bytes.length;
  let lines = 0;
  const byteAt = (i: number): boolean => {
    if (!cleanAsciiByte(bytes, i)) return false;
    if (bytes[i] === 0x0a) lines++;
    return true;
  };
  const head = Math.min(n, (4 - (bytes.byteOffset & 3)) & 3);
  for (let i = 0; i < head; i++) if (!byteAt(i)) return -1;
  const count = (n - head) >> 2;
  const words = count === 0 ? new Uint32Array(0) : new Uint32Array(bytes.buffer, bytes.byteOffset + head, count);
  for (let k = 0; k < count; k++) {
    const w = words[k]!;
    // Bytes below 0x20 (b + 0x60 stays under 0x80 exactly for them), DEL, and u or U.
    const ctl = ~(w + 0x60606060) & 0x80808080;
    const del = zeroBytes(w ^ 0x7f7f7f7f);
    const u = zeroBytes((w | 0x20202020) ^ 0x75757575);
    if ((ctl | del | u) === 0) continue;
    if (del !== 0) return -1;
    if (ctl !== 0) {
      const lf = zeroBytes(w ^ 0x0a0a0a0a);
      if ((ctl & ~(lf | zeroBytes(w ^ 0x09090909) | zeroBytes(w ^ 0x0d0d0d0d))) !== 0) return -1;
      lines += Math.imul(lf >>> 7, 0x01010101) >>> 24;
    }
    if (u !== 0) {
      const base = head + (k << 2);
      for (let i = base; i < base + 4; i++) if ((bytes[i]! | 0x20) === 0x75 && untrustedAt(bytes, i)) return -1;
    }
  }
  for (let i = head + (count << 2); i < n; i++) if (!byteAt(i)) return -1;
  return lines;
}

/**
 * Envelope ids come from a pool of CSPRNG bytes refilled 4 KiB at a time
 * (one syscall per ~680 envelopes instead of one each: an MCP call wraps its
 * text on the hot path). Every id is still 48 fresh random bits, used once.
 */
const ID_BYTES = 6;
let idPool = Buffer.alloc(0);
let idOffset = 0;
function newId(): string {
  if (idOffset + ID_BYTES > idPool.length) {
    idPool = randomBytes(4096);
    idOffset = 0;
  }
  const id = idPool.toString('hex', idOffset, idOffset + ID_BYTES);
  idOffset += ID_BYTES;
  return id;
}

function quoteOrigin(origin: string): string {
  const clean = sanitizeUntrustedText(origin)
    .replace(/[\r\n]/g, ' ')
    .replace(/"/g, '%22')
    .replace(/>/g, '%3E');
  return clean.length > 512 ? `${clean.slice(0, 512)}…` : clean;
}

function safeSource(source: string): string {
  return source.replace(/[^A-Za-z0-9_.:-]/g, '_').slice(0, 200);
}

/** Step 2: the sanitized text in the fixed envelope. */
export function wrapUntrusted(text: string, from: UntrustedSource, id: string = newId()): string {
  const origin = from.origin === undefined ? '' : ` origin="${quoteOrigin(from.origin)}"`;
  const head = `${ENVELOPE_OPEN} id=${id} source=${safeSource(from.source)}${origin}>>>`;
  const body = sanitizeUntrustedText(text);
  return `${head}\n${body}${body.endsWith('\n') ? '' : '\n'}${ENVELOPE_CLOSE} id=${id}>>>`;
}

/**
 * Structured data from outside: every string (keys too) sanitized, the shape
 * kept. Depth-bounded so a hostile document cannot recurse us into a stack
 * overflow (JSON.parse output is already finite; this bounds our own walk).
 */
export function sanitizeUntrustedValue(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return sanitizeUntrustedText(value);
  if (value === null || typeof value !== 'object') return value;
  if (depth > 256) return null;
  if (Array.isArray(value)) return value.map((v) => sanitizeUntrustedValue(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    const key = sanitizeUntrustedText(k);
    if (key === '__proto__') continue;
    out[key] = sanitizeUntrustedValue(v, depth + 1);
  }
  return out;
}
