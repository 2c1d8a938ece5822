/**
 * Rules that are code rather than one regex: hiding techniques (comments,
 * tag characters, bidi controls, invisible characters, padding), encoded
 * payloads that are decoded and rescanned, homoglyph words and
 * download-then-run. Each walks the text once (linear); decoding work is
 * capped per file.
 */
import type { MarkdownRegions } from './markdown-regions.js';
import type { ContentKind, ScanSeverity, ScanView } from './types.js';
import { codePointLabel, confusableSkeleton, escapeForDisplay, isAsciiAlphanumeric, isBidiControl, isBidiOverride, isEmoji, isInvisible, isLetter, isTagCharacter, nextNonAscii, type NonAsciiRuns } from './unicode.js';

/** A detector's finding before context and line numbers are added. */
export interface RawHit {
  ruleId: string;
  start: number;
  end: number;
  message?: string;
  severity?: ScanSeverity;
  view?: ScanView;
}

/** A finding of the rescan of decoded text: which rule, and what it matched. */
export interface InnerHit {
  ruleId: string;
  matched: string;
}

export interface DetectorInput {
  raw: string;
  kind: ContentKind;
  regions: MarkdownRegions | undefined;
  /** Findings of the regex rules so far (raw offsets), for the comment detector. */
  earlier: readonly { ruleId: string; start: number; end: number }[];
  /** Runs the regex rules on decoded text. */
  rescan(text: string): InnerHit[];
  /** Nesting depth of decoding (the rescan of decoded text does not decode again past 2). */
  depth: number;
  /** The non-ASCII runs of `raw`. */
  nonAscii: NonAsciiRuns;
  /**
   * Where each maximal run of {@link BASE64_RUN_CHARS} at least {@link BASE64_MIN_RUN} long starts in
   * `raw`, ascending (the scanner's trigger pass records them); undefined: detectBase64 searches.
   */
  base64Runs?: readonly number[];
}

const MAX_DECODE_CANDIDATES = 2_000;
const MAX_DECODED_PREVIEW = 80;

function preview(text: string): string {
  const flat = escapeForDisplay(text.length > MAX_DECODED_PREVIEW ? `${text.slice(0, MAX_DECODED_PREVIEW)}…` : text);
  return `"${flat}"`;
}

function isMostlyPrintable(text: string): boolean {
  if (text.length === 0) return false;
  let bad = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if ((c < 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) || c === 0xfffd || (c >= 0x7f && c < 0xa0)) bad += 1;
  }
  return bad / text.length < 0.05;
}

/** Several words (letters separated by spaces or underscores) or a URL: text meant to be read. */
function looksLikeReadableText(text: string): boolean {
  if (/https?:\/\//i.test(text)) return true;
  const words = text.match(/[A-Za-z]{2,}(?=[\s_]|$)/g);
  const separators = text.match(/[ _]/g);
  return (words?.length ?? 0) >= 4 && (separators?.length ?? 0) >= 3;
}

const UTF8 = new TextDecoder('utf-8', { fatal: false });

function decodeBase64(candidate: string): string | undefined {
  const body = candidate.replace(/=+$/, '');
  if (body.length % 4 === 1) return undefined;
  const bytes = Buffer.from(body, body.includes('-') || body.includes('_') ? 'base64url' : 'base64');
  if (bytes.length === 0) return undefined;
  return UTF8.decode(bytes);
}

/** The 6-bit value of each base64 and base64url character (Buffer's decoders take both alphabets), -1 for others. */
const SEXTET = new Int8Array(128).fill(-1);
'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'.split('').forEach((c, k) => (SEXTET[c.charCodeAt(0)] = k));
SEXTET[0x2d] = 62; // -
SEXTET[0x5f] = 63; // _

/**
 * True when the base64 run raw[start, end) decodes to bytes that cannot be mostly printable text, decided
 * from the bytes as they are decoded, without a buffer or a string: each ASCII control byte decodes to
 * itself, each of C0, C1 and F5-FF to its own U+FFFD (no UTF-8 sequence takes them), and the text has at
 * most one code unit per byte, so that many bad characters in that many bytes is a lower bound of
 * isMostlyPrintable's ratio. Most candidates are identifiers and decode to noise (decoding each cost
 * about a sixth of the detector); false leaves the answer to the decoder.
 */
function decodesToBinary(raw: string, start: number, end: number): boolean {
  let body = end;
  while (body > start && raw.charCodeAt(body - 1) === 0x3d) body -= 1;
  if ((body - start) % 4 === 1) return false;
  let bytes = 0;
  let bad = 0;
  let bits = 0;
  let acc = 0;
  for (let k = start; k < body; k++) {
    acc = ((acc << 6) | SEXTET[raw.charCodeAt(k)]!) & 0xffff;
    bits += 6;
    if (bits < 8) continue;
    bits -= 8;
    const b = (acc >> bits) & 0xff;
    bytes += 1;
    if ((b < 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d) || b === 0x7f || b === 0xc0 || b === 0xc1 || b >= 0xf5) bad += 1;
  }
  return bytes > 0 && bad / bytes >= 0.05;
}

const DATA_URI_MAGIC: Record<string, (b: Buffer) => boolean> = {
  'image/png': (b) => b[0] === 0x89 && b[1] === 0x50 && b[2] === 0x4e && b[3] === 0x47,
  'image/jpeg': (b) => b[0] === 0xff && b[1] === 0xd8,
  'image/jpg': (b) => b[0] === 0xff && b[1] === 0xd8,
  'image/gif': (b) => b.subarray(0, 3).toString('latin1') === 'GIF',
  'image/webp': (b) => b.subarray(0, 4).toString('latin1') === 'RIFF',
  'image/x-icon': (b) => b[0] === 0 && b[1] === 0,
  'application/pdf': (b) => b.subarray(0, 4).toString('latin1') === '%PDF',
  'font/woff2': (b) => b.subarray(0, 4).toString('latin1') === 'wOF2',
  'font/woff': (b) => b.subarray(0, 4).toString('latin1') === 'wOFF',
};

/**
 * 1 for the characters of the base64 and base64url alphabets, 2 for the padding `=`, 0 for every other
 * UTF-16 code unit: a table over all of them (64 KiB, once) is read without a range test first, which
 * makes the search for runs (most of detectBase64) about 7% faster.
 */
const BASE64_CHAR = new Uint8Array(0x10000);
/** The characters of the base64 and base64url alphabets (no padding). */
export const BASE64_RUN_CHARS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-';
/** The shortest run of them that is a candidate. */
export const BASE64_MIN_RUN = 16;
for (const c of BASE64_RUN_CHARS) BASE64_CHAR[c.charCodeAt(0)] = 1;
BASE64_CHAR[0x3d] = 2;

function isBase64Code(c: number): boolean {
  return BASE64_CHAR[c] === 1;
}

/**
 * The next match at or after `from` of /(?<![A-Za-z0-9+/_=-])[A-Za-z0-9+/_-]{16,}={0,2}/g, as
 * [start, end]: the same matches as that regex's exec loop. Boyer-Moore over a class: a window of
 * 16 characters is read from its last one back, and a character outside the alphabet at q means
 * no run of 16 holds q, so the next window ends 16 past q. Prose, mostly words shorter than that,
 * is read about one character in three, where reading every one of them cost 10% of a scan.
 */
function nextBase64Run(raw: string, from: number): [number, number] | undefined {
  const n = raw.length;
  let last = from + 15;
  while (last < n) {
    let q = last;
    while (q > last - 16 && isBase64Code(raw.charCodeAt(q))) q -= 1;
    if (q > last - 16) {
      last = q + 16;
      continue;
    }
    // raw[last - 15, last] is in the alphabet: widen it to its run.
    let i = last - 15;
    while (i > from && isBase64Code(raw.charCodeAt(i - 1))) i -= 1;
    let j = last + 1;
    while (j < n && isBase64Code(raw.charCodeAt(j))) j += 1;
    if (i === 0 || BASE64_CHAR[raw.charCodeAt(i - 1)] === 0) {
      let end = j;
      while (end < n && end - j < 2 && raw.charCodeAt(end) === 0x3d) end += 1;
      return [i, end];
    }
    last = j + 16;
  }
  return undefined;
}

/**
 * The same runs as {@link nextBase64Run}, from `starts` (DetectorInput.base64Runs), the next from
 * `cursor.k` on: a maximal run of the alphabet 16 or more long is a match where no `=` precedes it
 * (no alphabet character can: it is maximal), widened by up to two `=`.
 */
function nextListedRun(raw: string, starts: readonly number[], cursor: { k: number }): [number, number] | undefined {
  const n = raw.length;
  while (cursor.k < starts.length) {
    const i = starts[cursor.k++]!;
    if (i > 0 && BASE64_CHAR[raw.charCodeAt(i - 1)] !== 0) continue;
    let j = i + BASE64_MIN_RUN;
    while (j < n && isBase64Code(raw.charCodeAt(j))) j += 1;
    let end = j;
    while (end < n && end - j < 2 && raw.charCodeAt(end) === 0x3d) end += 1;
    return [i, end];
  }
  return undefined;
}

/**
 * The letters, digits, hex digits and separators (`-_/+`) of raw[start, end), a base64 run, counted in one
 * pass: what detectBase64 asks of every run (three regex tests and a match array per run cost more than
 * the rest of the detector: most runs are identifiers and paths).
 */
function base64RunTraits(raw: string, start: number, end: number): { lower: number; upper: number; digits: number; hex: number; separators: number } {
  let lower = 0;
  let upper = 0;
  let digits = 0;
  let hex = 0;
  let separators = 0;
  for (let k = start; k < end; k++) {
    const c = raw.charCodeAt(k);
    if (c >= 97 && c <= 122) {
      lower += 1;
      if (c <= 102) hex += 1;
    } else if (c >= 65 && c <= 90) {
      upper += 1;
      if (c <= 70) hex += 1;
    } else if (c >= 48 && c <= 57) {
      digits += 1;
      hex += 1;
    } else if (c !== 0x3d) separators += 1;
  }
  return { lower, upper, digits, hex, separators };
}

/**
 * Base64 candidates (16+ chars) are decoded; readable text and anything the
 * rules flag after decoding is reported (payloads can be far shorter than
 * the seed's 80-char threshold). Long blobs that do not decode to text are
 * OBF_BASE64_LONG unless they are a data: URI whose bytes match its type.
 */
export function detectBase64(input: DetectorInput, emit: (hit: RawHit) => void): void {
  const { raw, base64Runs } = input;
  let decoded = 0;
  const cursor = { k: 0 };
  const next = (from: number): [number, number] | undefined => (base64Runs ? nextListedRun(raw, base64Runs, cursor) : nextBase64Run(raw, from));
  for (let run = next(0); run; run = next(run[1])) {
    const start = run[0];
    const end = run[1];
    const { lower, upper, digits, hex, separators } = base64RunTraits(raw, start, end);
    const length = end - start;
    if (lower === 0 || upper === 0) {
      // Single-case runs (base32, upper-cased base64 alphabets) cannot be decoded reliably but hide as much:
      // long ones with digits are OBF_BASE64_LONG. Hex digests up to SHA-512 (128) are checksums, not payloads.
      if (length >= 80 && digits > 0 && lower + upper > 0 && !(hex === length && length <= 128) && separators === 0) {
        if (decoded++ > MAX_DECODE_CANDIDATES) break;
        emit({ ruleId: 'OBF_BASE64_LONG', start, end, message: `Long single-case encoded run (${length} chars)` });
      }
      continue;
    }
    if (separators / length > 0.15) continue; // paths, slugs, kebab-case
    if (decoded++ > MAX_DECODE_CANDIDATES) break;
    const plain = decodesToBinary(raw, start, end) ? undefined : decodeBase64(raw.slice(start, end));
    const printable = plain !== undefined && plain.length >= 8 && isMostlyPrintable(plain);
    if (printable) {
      const inner = input.depth < 2 ? input.rescan(plain) : [];
      if (inner.length > 0) {
        const ids = [...new Set(inner.map((h) => h.ruleId))].join(', ');
        emit({ ruleId: 'OBF_BASE64_PAYLOAD', start, end, view: 'decoded-base64', message: `base64 decodes to text that triggers ${ids}: ${preview(plain)}` });
        continue;
      }
      if (looksLikeReadableText(plain)) {
        emit({ ruleId: 'OBF_BASE64_PAYLOAD', start, end, severity: 'WARN', view: 'decoded-base64', message: `base64 hides readable text: ${preview(plain)}` });
        continue;
      }
    }
    if (length < 80 || digits === 0) continue;
    const text = raw.slice(start, end);
    const dataUri = /data:([\w.+-]{1,60}\/[\w.+-]{1,60});base64,$/i.exec(raw.slice(Math.max(0, start - 80), start));
    if (dataUri) {
      const mime = dataUri[1]!.toLowerCase();
      const magic = DATA_URI_MAGIC[mime];
      const bytes = Buffer.from(text.replace(/=+$/, ''), 'base64');
      if (magic?.(bytes) || mime === 'image/svg+xml' || mime.startsWith('font/')) continue;
      if (magic) {
        emit({ ruleId: 'OBF_BASE64_LONG', start, end, message: `data: URI claims ${mime} but its bytes are not ${mime}` });
        continue;
      }
    }
    emit({ ruleId: 'OBF_BASE64_LONG', start, end, message: printable ? `Long base64 string (${text.length} chars) decoding to ${preview(plain!)}` : `Long base64 string (${text.length} chars) of binary data` });
  }
}

/** A run of 8+ hex or percent escapes; every match starts with `\\` or `%`. */
const HEX_RUN = /(?:\\x[0-9a-f]{2}){8,}|(?:\\u00[0-9a-f]{2}){8,}|(?:%[0-9a-f]{2}){8,}/iy;

/**
 * The matches of HEX_RUN as a global exec loop over `raw` finds them (leftmost first, resuming
 * after each): the sticky regex is tried only where a match can start, at the `\\` and `%`
 * characters, which indexOf finds far faster than the regex engine scanning every position.
 */
function* hexRuns(raw: string): Generator<RegExpExecArray> {
  let backslash = raw.indexOf('\\');
  let percent = raw.indexOf('%');
  let from = 0;
  while (backslash >= 0 || percent >= 0) {
    if (backslash >= 0 && backslash < from) backslash = raw.indexOf('\\', from);
    if (percent >= 0 && percent < from) percent = raw.indexOf('%', from);
    const at = backslash < 0 ? percent : percent < 0 ? backslash : Math.min(backslash, percent);
    if (at < 0) return;
    HEX_RUN.lastIndex = at;
    const m = HEX_RUN.exec(raw);
    from = m ? at + m[0].length : at + 1;
    if (m) yield m;
  }
}

/** Hex and percent escapes (OBF_HEX_LONG matches) are decoded and rescanned. */
export function detectHexPayload(input: DetectorInput, emit: (hit: RawHit) => void): void {
  if (input.depth >= 2) return;
  for (const m of hexRuns(input.raw)) {
    const codes = m[0].match(/[0-9a-f]{2}(?=\\|%|$)/gi) ?? [];
    const plain = Buffer.from(codes.map((h) => parseInt(h, 16))).toString('utf8');
    if (!isMostlyPrintable(plain)) continue;
    const inner = input.rescan(plain);
    if (inner.length > 0 || looksLikeReadableText(plain)) {
      const ids = [...new Set(inner.map((h) => h.ruleId))].join(', ');
      emit({
        ruleId: 'OBF_BASE64_PAYLOAD',
        start: m.index,
        end: m.index + m[0].length,
        severity: inner.length > 0 ? 'CRITICAL' : 'WARN',
        view: 'decoded-hex',
        message: inner.length > 0 ? `hex escapes decode to text that triggers ${ids}: ${preview(plain)}` : `hex escapes hide readable text: ${preview(plain)}`,
      });
    }
  }
}

const DANGEROUS_NAME = /\b(?:exec|eval|system|popen|spawn|subprocess|__import__|import|getattr|compile|curl|wget|bash|sh|powershell|child_process|require)\b/;

/** Lists of character codes next to chr()/fromCharCode/bytes() are decoded. */
export function detectCharCodes(input: DetectorInput, emit: (hit: RawHit) => void): void {
  const { raw } = input;
  const list = /\b\d{2,3}(?:[ \t]{0,3},[ \t]{0,3}\d{2,3}){3,}\b/g;
  let count = 0;
  for (let m = list.exec(raw); m; m = list.exec(raw)) {
    const around = raw.slice(Math.max(0, m.index - 150), Math.min(raw.length, m.index + m[0].length + 60));
    if (!/\bchr\s{0,2}\(|fromCharCode|\bbytes\s{0,2}\(|\bbytearray\s{0,2}\(|\bString\.fromCodePoint/.test(around)) continue;
    const codes = m[0].split(',').map((s) => Number(s.trim()));
    if (codes.some((c) => c < 32 || c > 126)) continue;
    const plain = String.fromCharCode(...codes);
    if (!/[A-Za-z]{3,}/.test(plain)) continue;
    if (count++ > 200) break;
    const inner = input.depth < 2 ? input.rescan(plain) : [];
    const dangerous = DANGEROUS_NAME.test(plain) || inner.length > 0;
    emit({
      ruleId: 'OBF_CHARCODE',
      start: m.index,
      end: m.index + m[0].length,
      severity: dangerous ? 'CRITICAL' : 'WARN',
      view: 'decoded-charcodes',
      message: `character codes spell ${preview(plain)}${dangerous ? ' (a code-execution or network name)' : ''}`,
    });
  }
}

const WORD_CHAR = /[\p{L}\p{M}\p{N}_]/u;
/** Per UTF-16 code unit (a surrogate half is none): 0 not asked yet, 1 not a word character, 2 one. */
let wordUnits: Uint8Array | undefined;

/**
 * Whether one code unit, as a one-character string, matches /[\p{L}\p{M}\p{N}_]/u: answered once per
 * distinct unit (the homoglyph detector asks it of every non-ASCII neighbour, ~10,000 times over the
 * corpus, and a string and a regex test per call cost ten times a look-up).
 */
function isWordUnit(c: number): boolean {
  wordUnits ??= new Uint8Array(0x10000);
  let answer = wordUnits[c]!;
  if (answer === 0) {
    answer = WORD_CHAR.test(String.fromCharCode(c)) ? 2 : 1;
    wordUnits[c] = answer;
  }
  return answer === 2;
}

/** Latin words containing Cyrillic/Greek/Armenian look-alike letters. */
export function detectHomoglyphs(input: DetectorInput, emit: (hit: RawHit) => void): void {
  const { raw, nonAscii } = input;
  if (nonAscii.count === 0) return;
  // Only words with a non-ASCII letter can mix scripts: jump from one to the next.
  // ASCII (most neighbours) by its code: a one-character string and a regex test each cost more than the rest.
  const wordChar = (k: number): boolean => {
    const c = raw.charCodeAt(k);
    return c < 0x80 ? isAsciiAlphanumeric(c) || c === 0x5f : isWordUnit(c);
  };
  let count = 0;
  for (let at = nextNonAscii(nonAscii, 0); at < raw.length;) {
    let start = at;
    let end = at;
    while (start > 0 && at - start < 64 && wordChar(start - 1)) start -= 1;
    while (end < raw.length && end - at < 64 && wordChar(end)) end += 1;
    at = nextNonAscii(nonAscii, Math.max(end, at + 1));
    if (end - start < 2) continue;
    const m = { index: start, 0: raw.slice(start, end) };
    const text = m[0];
    if (/^[\x00-\x7f]*$/.test(text) || !/[A-Za-z]/.test(text)) continue;
    const swaps: string[] = [];
    let skeleton = '';
    let foreignLetters = 0;
    for (const ch of text) {
      const cp = ch.codePointAt(0)!;
      if (cp < 0x80) {
        skeleton += ch.toLowerCase();
        continue;
      }
      const latin = confusableSkeleton(ch.toLowerCase().codePointAt(0)!);
      if (latin) {
        swaps.push(`${ch} ${codePointLabel(cp)}`);
        skeleton += latin;
      } else if (isLetter(cp)) foreignLetters += 1;
      else skeleton += ch;
    }
    if (swaps.length === 0 || foreignLetters > 0) continue;
    if (count++ >= 50) break;
    emit({ ruleId: 'OBF_HOMOGLYPH', start: m.index, end: m.index + text.length, view: 'normalized', message: `"${text}" reads as "${skeleton}" but contains ${swaps.join(', ')}` });
  }
}

const COMMAND_LINE = /(?:^|\n)[ \t]{0,8}(?:\$[ \t]{1,4})?(?:curl|wget|bash|sh|zsh|python[23]?|node|npm|npx|pip[23]?|git|rm|chmod|sudo|nc|ssh|scp|eval|exec|powershell|iex)\b[ \t]{1,8}\S/i;
const AGENT_DIRECTIVE =
  /(?<![-\w])(?:ignore|disregard)(?![-\w])|\b(?:do\s{1,4}not|don't|never)\s{1,4}(?:mention|tell|show|reveal|render|display|surface|announce|disclose)\b|\bbefore\s{1,4}(?:you|answering|responding|replying|writing|running|executing|summari[sz]ing|doing)\b|\b(?:you|the\s{1,4}(?:agent|assistant|model|ai))\s{1,4}(?:must|should|will|shall)\b|\b(?:run|execute)\s{0,4}:|\bsystem\s{1,4}note\b/i;
const CONCEALMENT = /\b(?:do\s{1,4}not|don't|never)\s{1,4}(?:mention|tell|reveal|surface|announce|disclose)\b|\bdo\s{1,4}not\s{1,4}render\b|\bhidden\s{1,4}from\b|\bsilently\b/i;

/** HTML comments (outside code) that carry instructions, commands or links; unterminated comments. */
export function detectHtmlComments(input: DetectorInput, emit: (hit: RawHit) => void): void {
  const regions = input.regions;
  if (!regions) return;
  let emitted = 0;
  for (const comment of regions.comments) {
    if (!comment.terminated) {
      emit({
        ruleId: 'HIDE_UNTERMINATED_COMMENT',
        start: comment.start,
        end: comment.start + 4,
        message: `unterminated <!-- hides the remaining ${input.raw.length - comment.start - 4} characters from rendered views`,
      });
    }
    const inner = input.raw.slice(comment.start + 4, comment.terminated ? comment.end - 3 : comment.end);
    const flagged = input.earlier.filter((f) => f.start >= comment.start && f.start < comment.end && f.ruleId !== 'HIDE_HTML_COMMENT');
    const reasons: string[] = [];
    if (flagged.length > 0) reasons.push(`findings inside: ${[...new Set(flagged.map((f) => f.ruleId))].join(', ')}`);
    if (CONCEALMENT.test(inner)) reasons.push('asks to keep something from the user');
    if (/https?:\/\/|\b[\w.+-]{1,64}@[\w-]{1,63}\.[a-z]{2,12}\b/i.test(inner)) reasons.push('a link or address');
    if (COMMAND_LINE.test(inner)) reasons.push('a shell command');
    if (AGENT_DIRECTIVE.test(inner)) reasons.push('directives to the agent');
    if (reasons.length === 0) continue;
    if (emitted++ >= 50) break;
    const critical = flagged.length > 0 || reasons.includes('asks to keep something from the user');
    emit({
      ruleId: 'HIDE_HTML_COMMENT',
      start: comment.start,
      end: comment.end,
      severity: critical ? 'CRITICAL' : 'WARN',
      message: `HTML comment (invisible when rendered) contains ${reasons.join('; ')}: ${preview(inner.trim())}`,
    });
  }
}

function isRtlLetter(cp: number): boolean {
  return (cp >= 0x0590 && cp <= 0x08ff) || (cp >= 0xfb1d && cp <= 0xfdff) || (cp >= 0xfe70 && cp <= 0xfefc);
}

/**
 * Tag characters, bidi controls and invisible characters. Emoji ZWJ
 * sequences, U+FE0F after emoji or keycap bases, and flag tag sequences
 * (🏴 + tag letters + cancel tag) are legitimate and skipped.
 */
export function detectInvisibles(input: DetectorInput, emit: (hit: RawHit) => void): void {
  const { raw, nonAscii } = input;
  if (nonAscii.count === 0) return;
  const counts = { tag: 0, bidi: 0, invisible: 0 };
  let i = 0;
  let prevVisible = -1; // code point of the last visible character
  while (i < raw.length) {
    if (raw.charCodeAt(i) < 0xa0) {
      // Skip to the next character at or above U+00A0 (everything below is visible and plain).
      let j = nextNonAscii(nonAscii, i);
      while (j < raw.length && raw.charCodeAt(j) < 0xa0) j = nextNonAscii(nonAscii, j + 1);
      prevVisible = raw.charCodeAt(j - 1);
      i = j;
      continue;
    }
    const cp = raw.codePointAt(i)!;
    const width = cp > 0xffff ? 2 : 1;
    if (isTagCharacter(cp)) {
      let j = i;
      let decoded = '';
      while (j < raw.length) {
        const t = raw.codePointAt(j)!;
        if (!isTagCharacter(t)) break;
        if (t >= 0xe0020 && t <= 0xe007e) decoded += String.fromCharCode(t - 0xe0000);
        j += 2;
      }
      const isFlag = prevVisible === 0x1f3f4 && /^[a-z0-9]{2,7}$/.test(decoded) && raw.codePointAt(j - 2) === 0xe007f;
      if (!isFlag && counts.tag++ < 50) {
        emit({ ruleId: 'HIDE_TAG_CHARS', start: i, end: j, view: 'decoded-tags', message: `${(j - i) / 2} invisible tag characters encode: ${preview(decoded)}` });
      }
      i = j;
      continue;
    }
    if (isBidiControl(cp)) {
      let j = i;
      const labels: string[] = [];
      let override = false;
      while (j < raw.length && isBidiControl(raw.charCodeAt(j))) {
        override ||= isBidiOverride(raw.charCodeAt(j));
        labels.push(codePointLabel(raw.charCodeAt(j)));
        j += 1;
      }
      const next = raw.codePointAt(j) ?? 0;
      const rtlContext = isRtlLetter(prevVisible) || isRtlLetter(next);
      if ((override || !rtlContext) && counts.bidi++ < 50) {
        emit({ ruleId: 'HIDE_BIDI', start: i, end: j, severity: override ? 'CRITICAL' : 'WARN', message: `bidirectional control ${labels.join('')} changes the displayed order of the text around it` });
      }
      i = j;
      continue;
    }
    if (isInvisible(cp)) {
      let j = i;
      const labels: string[] = [];
      while (j < raw.length) {
        const t = raw.codePointAt(j)!;
        if (!isInvisible(t) || isTagCharacter(t) || isBidiControl(t)) break;
        labels.push(codePointLabel(t));
        j += t > 0xffff ? 2 : 1;
      }
      const next = raw.codePointAt(j) ?? 0;
      const run = labels.length;
      const legit =
        (i === 0 && cp === 0xfeff && run === 1) ||
        (cp === 0x200d && run === 1 && (isEmoji(prevVisible) || prevVisible === 0xfe0f) && isEmoji(next)) ||
        ((cp === 0xfe0f || cp === 0xfe0e) && run <= 2 && (isEmoji(prevVisible) || prevVisible > 0x2000 || /[0-9#*]/.test(String.fromCodePoint(Math.max(prevVisible, 0))))) ||
        (cp >= 0xe0100 && cp <= 0xe01ef && run === 1 && prevVisible >= 0x2e80) ||
        (run <= 2 && !isAsciiAlphanumeric(prevVisible) && !isAsciiAlphanumeric(next) && cp !== 0x2800);
      if (!legit && counts.invisible++ < 50) {
        const inWord = isAsciiAlphanumeric(prevVisible) && isAsciiAlphanumeric(next);
        emit({
          ruleId: 'HIDE_INVISIBLE',
          start: i,
          end: j,
          message: `${run} invisible character${run === 1 ? '' : 's'} ${labels.slice(0, 8).join('')}${run > 8 ? '…' : ''} ${inWord ? 'inside an ASCII word' : 'next to ASCII text'}`,
        });
      }
      i = j;
      continue;
    }
    prevVisible = cp;
    i += width;
  }
}

const BLANK_LINES_THRESHOLD = 40;
const SPACE_RUN_THRESHOLD = 200;

/** Long runs of blank lines or spaces; CRITICAL when text follows them. */
export function detectPadding(input: DetectorInput, emit: (hit: RawHit) => void): void {
  const { raw } = input;
  let emitted = 0;
  const report = (start: number, end: number, what: string): void => {
    if (emitted++ >= 10) return;
    const after = /\S/.test(raw.slice(end, Math.min(raw.length, end + 100_000)));
    emit({
      ruleId: 'HIDE_PADDING',
      start,
      end,
      severity: after ? 'CRITICAL' : 'WARN',
      message: `${what}${after ? ' with more content below it' : ''}`,
    });
  };
  // Two functions, one loop each: V8 compiles a hot loop on its own (on-stack replacement), and the
  // code after it in the same function then had no type feedback and deoptimized, about once a scan.
  blankLineRuns(raw, report);
  spaceRuns(raw, report);
}

/** Runs of BLANK_LINES_THRESHOLD or more blank lines, to `report`. */
function blankLineRuns(raw: string, report: (start: number, end: number, what: string) => void): void {
  // Manual loops rather than regexes: a regex over lines of spaces backtracks. A run of blank lines
  // is line feeds with only padding and carriage returns between them: BLANK_LINES_THRESHOLD lines
  // are at least that many such characters in a row. Those stretches are found Boyer-Moore style
  // (a window read from its last character back; past the first other character, the next window),
  // so most of the text is not read, and only they are split into lines.
  const window = BLANK_LINES_THRESHOLD;
  for (let last = window - 1; last < raw.length;) {
    let q = last;
    while (q > last - window && isBlankLineCode(raw.charCodeAt(q))) q -= 1;
    if (q > last - window) {
      last = q + window;
      continue;
    }
    let a = last - window + 1;
    while (a > 0 && isBlankLineCode(raw.charCodeAt(a - 1))) a -= 1;
    let b = last + 1;
    while (b < raw.length && isBlankLineCode(raw.charCodeAt(b))) b += 1;
    // Its blank lines: from its first line start (raw[a - 1] is no line feed) to its last line feed.
    const first = a === 0 ? 0 : raw.indexOf('\n', a) + 1;
    let lines = 0;
    let lastFeed = -1;
    if (first > 0 || a === 0) {
      for (let k = first; k < b; k++) {
        if (raw.charCodeAt(k) !== 0x0a) continue;
        lines += 1;
        lastFeed = k;
      }
    }
    if (lines >= BLANK_LINES_THRESHOLD) report(first, lastFeed + 1, `${lines} consecutive blank lines`);
    last = b + window;
  }
}

/** Runs of SPACE_RUN_THRESHOLD or more padding spaces (not a table cell's, not CJK typesetting), to `report`. */
function spaceRuns(raw: string, report: (start: number, end: number, what: string) => void): void {
  // Every run of SPACE_RUN_THRESHOLD or more spaces covers one of the probes (every
  // SPACE_RUN_THRESHOLD-th character): only probes that land on a space are widened to their run.
  for (let probe = SPACE_RUN_THRESHOLD - 1; probe < raw.length; probe += SPACE_RUN_THRESHOLD) {
    if (!isPaddingSpace(raw.charCodeAt(probe))) continue;
    let start = probe;
    while (start > 0 && isPaddingSpace(raw.charCodeAt(start - 1))) start -= 1;
    let k = probe + 1;
    while (k < raw.length && isPaddingSpace(raw.charCodeAt(k))) k += 1;
    const spaces = k - start;
    if (spaces >= SPACE_RUN_THRESHOLD && !isTableCellPadding(raw, start, k) && !isCjkSpacing(raw, start, k)) report(start, k, `${spaces} consecutive spaces`);
    // The next probe after this run (a run is widened once).
    while (probe + SPACE_RUN_THRESHOLD < k) probe += SPACE_RUN_THRESHOLD;
  }
}

/** Alignment padding of a Markdown table cell: the line is a table row and the run ends at a `|`. */
function isTableCellPadding(raw: string, start: number, end: number): boolean {
  if (raw[end] !== '|') return false;
  let lineStart = start;
  while (lineStart > 0 && start - lineStart < 4000 && raw.charCodeAt(lineStart - 1) !== 10) lineStart -= 1;
  return /^[ \t]{0,3}\|/.test(raw.slice(lineStart, lineStart + 8));
}

function isCjk(c: number): boolean {
  return (c >= 0x3040 && c <= 0x30ff) || (c >= 0x3400 && c <= 0x9fff) || (c >= 0xac00 && c <= 0xd7af) || (c >= 0xff00 && c <= 0xffef) || (c >= 0x3000 && c <= 0x303f);
}

/** Ideographic spaces (U+3000) laid out between CJK text: typesetting, not a push below the fold. */
function isCjkSpacing(raw: string, start: number, end: number): boolean {
  for (let k = start; k < end; k++) if (raw.charCodeAt(k) !== 0x3000) return false;
  return isCjk(raw.charCodeAt(start - 1)) || isCjk(raw.charCodeAt(end));
}

/** The characters of a blank line and its line feed (what a run of blank lines is made of). */
function isBlankLineCode(c: number): boolean {
  return c === 0x0a || c === 0x0d || isPaddingSpace(c);
}

function isPaddingSpace(c: number): boolean {
  return c === 0x20 || c === 0x09 || c === 0xa0 || c === 0x3000;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** A download to a file; sticky, tried where {@link downloads} finds a command name. */
const DOWNLOAD = /\b(?:curl|wget|iwr|invoke-webrequest)\b[^\n]{0,300}?\s(?:-o|-O|--output(?:-document)?|-OutFile)(?:=|[ \t]{1,4})["']?([^\s"';&|)]{1,200})/iy;
/** A DOWNLOAD match starts at most this far before the `-o` or `-O` it holds (the longest name, 300, `\s`, the first `-` of `--output`). */
const DOWNLOAD_REACH = 17 + 300 + 1 + 1;

/**
 * The matches of DOWNLOAD as a global exec loop over `raw` finds them. Every match holds `-o` or `-O`
 * (its output flags, case-insensitive) at most DOWNLOAD_REACH after its start: case-sensitive `indexOf`
 * finds those far faster than the case-insensitive regex tries every offset of the text, and the
 * command names are looked for only in the DOWNLOAD_REACH before each, every offset once, in order.
 */
function* downloads(raw: string): Generator<RegExpExecArray> {
  const command = /curl|wget|iwr|invoke-webrequest/gi;
  let from = 0; // where the exec loop would resume
  let tried = 0; // offsets before this were tried
  // The `-o` and `-O` in order, from one search for `-` (two searches, one per flag, each stopped at every `-`).
  for (let flag = raw.indexOf('-'); flag >= 0; flag = raw.indexOf('-', flag + 1)) {
    const next = raw.charCodeAt(flag + 1);
    if (next !== 0x6f && next !== 0x4f) continue;
    const start = Math.max(from, tried, flag - DOWNLOAD_REACH);
    tried = Math.max(tried, flag);
    if (start >= flag) continue;
    // The slice bounds the name search: on the whole text it would run on past `flag`.
    const window = raw.slice(start, flag);
    for (let c = command.exec(window); c; c = command.exec(window)) {
      DOWNLOAD.lastIndex = start + c.index;
      const m = DOWNLOAD.exec(raw);
      if (!m) {
        command.lastIndex = c.index + 1;
        continue;
      }
      from = m.index + m[0].length;
      tried = Math.max(tried, from);
      yield m;
      // Past the window's end, exec finds nothing (and rewinds for the next window).
      command.lastIndex = from - start;
    }
  }
}

/** A file saved by curl/wget and then run (sh, bash, source, chmod +x, ./file, python). */
export function detectDownloadExec(input: DetectorInput, emit: (hit: RawHit) => void): void {
  const { raw } = input;
  let count = 0;
  for (const m of downloads(raw)) {
    let target = m[1]!;
    if (target === '-' || target.startsWith('-')) continue;
    if (/^https?:\/\//i.test(target))
      target =
        target
          .replace(/[?#].*$/, '')
          .split('/')
          .pop() ?? '';
    if (target.length < 2 || target === '/dev/null') continue;
    if (count++ >= 100) break;
    const after = raw.slice(m.index + m[0].length, m.index + m[0].length + 1500);
    const name = target.replace(/^\.\//, '');
    // Every way of running the file names it, so the text after must contain the name: an ASCII name
    // matches only ASCII letters of either case under /i, hence the lower-cased texts. Checked before
    // compiling a regex for this name, which costs more than the rest of the detector.
    if (ASCII_ONLY.test(name) && !after.toLowerCase().includes(name.toLowerCase())) continue;
    const exec = runsOf(escapeRegExp(name));
    if (exec.test(after)) {
      emit({ ruleId: 'EXEC_DOWNLOAD_EXEC', start: m.index, end: m.index + m[0].length, message: `downloads to ${escapeForDisplay(target)} and then runs it` });
    }
  }
}

const ASCII_ONLY = /^[\x00-\x7f]*$/;
/** The "runs it" regexes of the download targets seen, by escaped name (a script downloads the same file name again and again). */
const RUNS_OF = new Map<string, RegExp>();

/** Running `base` (the escaped file name) as a script, a sourced file or an executable. Not global: `test` keeps no state. */
function runsOf(base: string): RegExp {
  let exec = RUNS_OF.get(base);
  if (exec) return exec;
  exec = new RegExp(
    String.raw`(?:^|[\s;&|(])(?:(?:ba|z|da)?sh|source|python[23]?|node|perl|ruby|exec|chmod\s{1,4}(?:\+|u\+|a\+|7)\w{0,3})\s{1,4}["']?(?:\.\/)?${base}(?![\w.-])|(?:^|[;&|(\n])[ \t]{0,8}\.[ \t]{1,4}["']?(?:\.\/)?${base}(?![\w.-])|(?:&&|;|\n)\s{0,8}["']?(?:\.\/)?${base}["']?(?=\s|$|;|&)`,
    'i',
  );
  if (RUNS_OF.size >= 256) RUNS_OF.clear();
  RUNS_OF.set(base, exec);
  return exec;
}
