/**
 * JSON and JSONL bodies without parsing them: the slow path of extract.ts
 * parses every document (every row of a JSONL body), sanitizes each string
 * and serializes it again, ~25 ms a megabyte here, where reading the body
 * took ~1 ms. For the common body that is clean ASCII (clean-scan.ts: no
 * byte the sanitizer would touch, never the word "untrusted") and that
 * JSON.parse → JSON.stringify would give back byte for byte, one scan of the
 * bytes proves it and the payload is written from the body itself: a JSONL
 * body is its own payload, a JSON document is re-indented as
 * `JSON.stringify(value, null, 2)` lays it out.
 *
 * The scan accepts only what round-trips exactly and sends everything else
 * down the slow path (the caller's `undefined`):
 * - strings with the escapes JSON.stringify writes back as they are (`\"`,
 *   `\\`, `\n`, `\r`, `\t`); `\u`, `\/`, `\b`, `\f` are not taken (a `\u`
 *   may decode to a character the sanitizer strips, `\b`/`\f` are stripped);
 *   no raw control byte (JSON.parse refuses one);
 * - numbers that print as they are written (`1`, `-2.5`; not `1.0`, `1e2`,
 *   `-0` or 17 digits: String(Number(s)) must be s);
 * - object keys that keep their place (no key of digits only, which V8
 *   orders first), no duplicate (JSON.parse keeps the last at the first
 *   one's place), no `__proto__` (sanitizeUntrustedValue drops it);
 * - at most {@link MAX_DEPTH} containers deep (sanitizeUntrustedValue turns
 *   what is deeper than 256 into null);
 * - JSONL: every line one value. Compact lines (no whitespace outside
 *   strings), none empty, are the payload as they are; lines with whitespace
 *   (`{"a": 1}`, CRLF ends, blank lines, which the slow path drops) have
 *   their compact form written out.
 * test/web/json-fast-path.test.ts holds both to the slow path over random
 * documents and the tricky ones (escaped invisible and tag characters,
 * BOM, invalid UTF-8, CRLF, rows that are not JSON, a cut mid-character).
 */
import { cleanLines } from './clean-scan.js';

/** Containers nested deeper than this go down the slow path (its depth bound is 256). */
const MAX_DEPTH = 200;
/** Keys of one object compared one by one up to this many; past it they go into a set. */
const LINEAR_KEYS = 16;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const LF = 0x0a;

/** Bytes JSON allows between tokens. */
function isSpace(c: number): boolean {
  return c === 0x20 || c === LF || c === 0x0d || c === 0x09;
}

/** The escapes JSON.stringify writes back unchanged (a `"`, `\`, LF, CR or TAB in the value). */
function keptEscape(c: number): boolean {
  return c === QUOTE || c === BACKSLASH || c === 0x6e || c === 0x72 || c === 0x74;
}

/** Thrown by {@link Out} past its cap: the caller takes the slow path. */
const OVER_CAP = Symbol('over cap');

/**
 * Where the pretty form goes: grown by doubling, never more than the document needs plus its
 * indentation, and never past `cap` when one is given: indentation grows with the depth (a 2 MB
 * page nested 200 deep is ~400 MB indented), so a remote page must not choose how much we allocate.
 */
class Out {
  buf: Buffer;
  n = 0;
  /** LFs written. */
  lines = 0;
  constructor(
    size: number,
    private readonly cap = Number.POSITIVE_INFINITY,
  ) {
    this.buf = Buffer.allocUnsafe(size);
  }
  room(k: number): void {
    if (this.n + k <= this.buf.length) return;
    if (this.n + k > this.cap) throw OVER_CAP;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.n + k));
    this.buf.copy(next, 0, 0, this.n);
    this.buf = next;
  }
  /** A newline and two spaces per level, as JSON.stringify(v, null, 2) indents. */
  newline(depth: number): void {
    this.room(1 + 2 * depth);
    const b = this.buf;
    let n = this.n;
    b[n++] = LF;
    this.lines++;
    for (let k = 2 * depth; k > 0; k--) b[n++] = 0x20;
    this.n = n;
  }
  byte(c: number): void {
    this.room(1);
    this.buf[this.n++] = c;
  }
  span(src: Buffer, from: number, to: number): void {
    this.room(to - from);
    const b = this.buf;
    let n = this.n;
    // A long span is one memcpy; a short one is cheaper copied here than through a native call.
    if (to - from > 32) n += src.copy(b, n, from, to);
    else for (let i = from; i < to; i++) b[n++] = src[i]!;
    this.n = n;
  }
}

/** Keys seen in one object: their hashes (a collision counts as a duplicate: the slow path decides). */
class KeySet {
  private readonly list: number[] = [];
  private n = 0;
  private set: Set<number> | undefined;
  clear(): void {
    // A count, not `length = 0` (a runtime call per object).
    this.n = 0;
    this.set = undefined;
  }
  /** False when `h` was there already. */
  add(h: number): boolean {
    if (this.set) {
      if (this.set.has(h)) return false;
      this.set.add(h);
      return true;
    }
    const list = this.list;
    const n = this.n;
    for (let k = 0; k < n; k++) if (list[k] === h) return false;
    if (n === LINEAR_KEYS) {
      this.set = new Set(list);
      this.set.add(h);
      return true;
    }
    list[n] = h;
    this.n = n + 1;
    return true;
  }
}

// Parser states: what the next token may be.
const VALUE = 0;
const ARRAY_FIRST = 1; // a value or ]
const KEY = 2;
const OBJECT_FIRST = 3; // a key or }
const AFTER = 4; // , or the container's close (or the end, at depth 0)

const PROTO = Buffer.from('__proto__', 'latin1');
/** What each open level is (1: object, 2: array) and the keys of each open object: shared, a scan runs start to end without yielding. */
const OPEN = new Uint8Array(MAX_DEPTH);
const KEYS: KeySet[] = [];

/**
 * One scan of `b[start, end)`: the byte length of the document's compact
 * form (JSON.stringify of the parsed value) when the bytes are one value
 * that round-trips exactly (see the module comment), else -1. `compact`:
 * whitespace outside strings is refused (JSONL rows). `out`: the value is
 * written there as JSON.stringify(value, null, 2) lays it out. `rows`:
 * compact values, one a line (each ended by one LF, the last one's
 * optional), in the same scan (not a call per row).
 */
function scanDocument(b: Buffer, start: number, end: number, compact: boolean, out: Out | undefined, rows = false): number {
  const open = OPEN;
  const keys = KEYS;
  let depth = 0;
  let spaces = 0;
  let state = VALUE;
  let i = start;
  // Written out: a document indented, rows compact (a row's LF is not whitespace, it ends the row).
  const indent = out !== undefined && !rows;
  for (;;) {
    // Compact: no skipping, so whitespace stands where a token must and is refused there.
    if (!compact)
      while (i < end && isSpace(b[i]!) && !(rows && b[i] === LF)) {
        i++;
        spaces++;
      }
    if (state === AFTER) {
      if (depth === 0) {
        // Rows: one LF, then the next row, or the end (a last row without its LF gets one written).
        if (i < end && (!rows || b[i] !== LF)) return -1;
        if (rows && out) {
          out.byte(LF);
          out.lines++;
        }
        if (i === end || ++i === end) return end - start - spaces;
        state = VALUE;
        continue;
      }
      if (i >= end) return -1;
      const c = b[i]!;
      const inObject = open[depth - 1] === 1;
      if (c === 0x2c) {
        i++;
        out?.byte(0x2c);
        if (indent) out!.newline(depth);
        state = inObject ? KEY : VALUE;
      } else if (c === (inObject ? 0x7d : 0x5d)) {
        i++;
        depth--;
        if (indent) out!.newline(depth);
        out?.byte(c);
      } else return -1;
      continue;
    }
    if (rows && !compact && depth === 0) {
      // Written-out rows: an empty (or blank) row is dropped, as the slow path's filter drops it.
      if (i === end) return end - start - spaces;
      if (b[i] === LF) {
        i++;
        continue;
      }
    }
    if (i >= end) return -1;
    const c = b[i]!;
    if (state === ARRAY_FIRST || state === OBJECT_FIRST) {
      if (c === (state === OBJECT_FIRST ? 0x7d : 0x5d)) {
        // An empty container: `{}` / `[]` on the line of its key or parent.
        i++;
        depth--;
        out?.byte(c);
        state = AFTER;
        continue;
      }
      if (indent) out!.newline(depth);
      state = state === OBJECT_FIRST ? KEY : VALUE;
    }
    if (state === KEY) {
      if (c !== QUOTE) return -1;
      const j = stringEnd(b, i + 1, end);
      if (j < 0) return -1;
      // The key's bytes: hashed (FNV-1a) for the duplicate check, and looked at for digits only and __proto__.
      let h = 0x811c9dc5;
      let digits = true;
      for (let k = i + 1; k < j; k++) {
        const x = b[k]!;
        h = Math.imul(h ^ x, 0x01000193);
        if (x < 0x30 || x > 0x39) digits = false;
      }
      const len = j - i - 1;
      if ((digits && len > 0) || (len === 9 && PROTO.equals(b.subarray(i + 1, j)))) return -1;
      if (!keys[depth]!.add(h ^ len)) return -1;
      out?.span(b, i, j + 1);
      i = j + 1;
      if (!compact)
        while (i < end && isSpace(b[i]!) && !(rows && b[i] === LF)) {
          i++;
          spaces++;
        }
      if (i >= end || b[i] !== 0x3a) return -1;
      i++;
      if (out) {
        out.byte(0x3a);
        if (indent) out.byte(0x20);
      }
      state = VALUE;
      continue;
    }
    // A value.
    if (c === QUOTE) {
      const j = stringEnd(b, i + 1, end);
      if (j < 0) return -1;
      out?.span(b, i, j + 1);
      i = j + 1;
      state = AFTER;
    } else if (c === 0x7b || c === 0x5b) {
      if (depth >= MAX_DEPTH) return -1;
      open[depth] = c === 0x7b ? 1 : 2;
      depth++;
      if (c === 0x7b) (keys[depth] ??= new KeySet()).clear();
      out?.byte(c);
      i++;
      state = c === 0x7b ? OBJECT_FIRST : ARRAY_FIRST;
    } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      const j = numberEnd(b, i, end);
      if (j < 0) return -1;
      out?.span(b, i, j);
      i = j;
      state = AFTER;
    } else {
      const word = c === 0x74 ? 'true' : c === 0x66 ? 'false' : c === 0x6e ? 'null' : '';
      if (word === '' || end - i < word.length) return -1;
      for (let k = 1; k < word.length; k++) if (b[i + k] !== word.charCodeAt(k)) return -1;
      out?.span(b, i, i + word.length);
      i += word.length;
      state = AFTER;
    }
  }
}

/**
 * Where the string whose first byte after its quote is `j` ends (its closing
 * quote), or -1 when it holds a control byte or an escape not kept, or does
 * not end before `end`.
 */
function stringEnd(b: Buffer, j: number, end: number): number {
  for (;;) {
    if (j >= end) return -1;
    const k = b[j]!;
    // The body is clean ASCII (no byte over 0x7e): one compare passes most bytes.
    if (k <= QUOTE) {
      if (k === QUOTE) return j;
      if (k < 0x20) return -1;
    } else if (k === BACKSLASH) {
      if (j + 1 >= end || !keptEscape(b[j + 1]!)) return -1;
      j++;
    }
    j++;
  }
}

/**
 * The end of the JSON number at `i`, or -1 when it is not one or does not
 * print back as written. A plain integer of up to 15 digits (not -0) always
 * does; anything else is checked with the number's own String().
 */
function numberEnd(b: Uint8Array, i: number, end: number): number {
  const start = i;
  if (b[i] === 0x2d) i++;
  const first = i;
  while (i < end && b[i]! >= 0x30 && b[i]! <= 0x39) i++;
  const digits = i - first;
  if (digits === 0 || (digits > 1 && b[first] === 0x30)) return -1;
  let plain = true;
  if (i < end && b[i] === 0x2e) {
    plain = false;
    const f = ++i;
    while (i < end && b[i]! >= 0x30 && b[i]! <= 0x39) i++;
    if (i === f) return -1;
  }
  if (i < end && (b[i] === 0x65 || b[i] === 0x45)) {
    plain = false;
    i++;
    if (i < end && (b[i] === 0x2b || b[i] === 0x2d)) i++;
    const e = i;
    while (i < end && b[i]! >= 0x30 && b[i]! <= 0x39) i++;
    if (i === e) return -1;
  }
  if (plain && digits <= 15 && !(digits === 1 && b[first] === 0x30 && first > start)) return i;
  const text = Buffer.from(b.buffer, b.byteOffset + start, i - start).toString('latin1');
  return String(Number(text)) === text ? i : -1;
}

/**
 * A JSON document's file as web_fetch writes it (`JSON.stringify(value,
 * null, 2)` and a newline) and the byte length of its compact form, straight
 * from the body's bytes; undefined when the body is not clean ASCII or does
 * not round-trip exactly (the slow path parses it).
 */
export function indentJsonFast(body: Buffer): { indented: Buffer; compactBytes: number; lines: number } | undefined {
  if (cleanLines(body) < 0) return undefined;
  // The indented form is the compact one plus its newlines and indentation: usually well under 2x.
  // The indented form is capped there too: a deeper document takes the slow path (see indentedJsonLength).
  const out = new Out(body.length * 2 + 64, body.length * 2 + 64);
  let compactBytes: number;
  try {
    compactBytes = scanDocument(body, 0, body.length, false, out);
    if (compactBytes < 0) return undefined;
    out.newline(0);
  } catch (err) {
    if (err === OVER_CAP) return undefined;
    throw err;
  }
  return { indented: out.buf.subarray(0, out.n), compactBytes, lines: out.lines };
}

/**
 * A JSONL body's payload straight from its bytes, with its LF count:
 * `body[0, end)` (and a final LF when it has none) when every line of it is
 * a compact value that round-trips exactly, else the compact form of its
 * non-blank lines when each is one value that does; undefined otherwise
 * (the slow path parses each row). `end` is where the kept rows end (a body
 * cut at maxResponseBytes loses its partial last row).
 */
export function jsonlRowsFast(body: Buffer, end: number): { bytes: Buffer; lines: number } | undefined {
  if (end === 0) return undefined;
  const lines = cleanLines(body.subarray(0, end));
  if (lines < 0) return undefined;
  // Compact rows, none empty: the body is its own payload.
  if (scanDocument(body, 0, end, true, undefined, true) >= 0) {
    if (body[end - 1] === LF) return { bytes: body.subarray(0, end), lines };
    return { bytes: Buffer.concat([body.subarray(0, end), Buffer.from([LF])]), lines: lines + 1 };
  }
  // Rows with whitespace (Python's `{"a": 1, "b": 2}`, CRLF ends, blank rows): their compact form
  // written out (never longer than the rows and a last LF). One that is not a value: the slow path.
  const out = new Out(end + 1);
  if (scanDocument(body, 0, end, false, out, true) < 0) return undefined;
  return { bytes: out.buf.subarray(0, out.n), lines: out.lines };
}
