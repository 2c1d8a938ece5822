/**
 * From a fetched body to what the script gets: readable text for HTML (with
 * everything a reader cannot see stripped BEFORE extraction), the data
 * itself for JSON, JSONL, CSV and plain text. Every string passes the
 * untrusted-content sanitizer; text is framed in the envelope
 * (untrusted/envelope.ts), data keeps its shape so `.jq`/`.sql` read it.
 *
 * linkedom and @mozilla/readability load on the first HTML page only.
 */
import { isUtf8 } from 'node:buffer';

import { sanitizeUntrustedText, sanitizeUntrustedValue, wrapUntrusted } from '../untrusted/envelope.js';
import type { ResultKind } from '../resultref/materialize.js';
import type { DomDocument, DomElement, DomNode } from './dom.js';
import { cleanLines } from './clean-scan.js';
import { stripHidden } from './hidden.js';
import { indentJsonFast, jsonlRowsFast } from './json-fast.js';

export type BodyKind = 'html' | 'json' | 'jsonl' | 'csv' | 'text';

/** The body kind from the Content-Type; undefined for what web_fetch does not return (images, binaries). */
export function bodyKindOf(contentType: string, head: Buffer): BodyKind | undefined {
  const mime = contentType.split(';', 1)[0]!.trim().toLowerCase();
  if (mime === 'text/html' || mime === 'application/xhtml+xml') return 'html';
  if (mime === 'application/x-ndjson' || mime === 'application/jsonl' || mime === 'application/x-jsonlines' || mime === 'application/jsonlines' || mime === 'application/ndjson') return 'jsonl';
  if (mime === 'application/json' || mime.endsWith('+json')) return 'json';
  if (mime === 'text/csv') return 'csv';
  if (mime.startsWith('text/') || mime === 'application/xml' || mime.endsWith('+xml') || mime === 'application/javascript') return 'text';
  if (mime === '') {
    // No type at all: sniff only for markup; anything else is text if it decodes, refused if binary.
    const start = head.subarray(0, 512).toString('utf8').trimStart().toLowerCase();
    if (start.startsWith('<!doctype html') || start.startsWith('<html')) return 'html';
    return head.subarray(0, 1024).includes(0) ? undefined : 'text';
  }
  return undefined;
}

function charsetOf(contentType: string): string {
  for (const part of contentType.split(';').slice(1)) {
    const [k, v] = part.split('=', 2);
    if (k?.trim().toLowerCase() === 'charset' && v) return v.trim().replace(/^"|"$/g, '');
  }
  return 'utf-8';
}

/** The UTF-8 byte order mark TextDecoder drops from the start of a body. */
const UTF8_BOM = 0xfeff;

/**
 * The body as text, as `new TextDecoder(charset).decode(body)` gives it. For
 * UTF-8 (nearly every page) through Buffer's decoder, several times faster on
 * a megabyte: the same WHATWG replacement of invalid sequences (U+FFFD per
 * maximal subpart; test/web/decode-text.test.ts holds the two equal over
 * random and adversarial bytes), and the leading BOM dropped as TextDecoder does.
 */
function decoderOf(contentType: string): InstanceType<typeof TextDecoder> {
  try {
    return new TextDecoder(charsetOf(contentType));
  } catch {
    return new TextDecoder('utf-8');
  }
}

/** Whether decodeText reads this content type as UTF-8 (its charset, or an unknown label's fallback). */
export function decodesAsUtf8(contentType: string): boolean {
  return decoderOf(contentType).encoding === 'utf-8';
}

export function decodeText(body: Buffer, contentType: string): string {
  const decoder = decoderOf(contentType);
  if (decoder.encoding !== 'utf-8') return decoder.decode(body);
  const text = body.toString('utf8');
  return text.charCodeAt(0) === UTF8_BOM ? text.slice(1) : text;
}

/**
 * The UTF-8 bytes of `text` taken from `body` itself when `text` is exactly
 * the decoded body (valid UTF-8, no BOM, nothing sanitized away), else
 * undefined (the caller encodes): a megabyte is not encoded back into the
 * bytes it came from.
 */
function bodyBytesOf(text: string, raw: string, body: Buffer, utf8: boolean): Buffer | undefined {
  // The body's bytes are the text's UTF-8 only when they were decoded as UTF-8 (not, say, as windows-1252).
  if (!utf8 || text !== raw || body.length < 3 || (body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf) || !isUtf8(body)) return undefined;
  return body;
}

/**
 * `wrapped` (an envelope around exactly `raw`) as bytes: the envelope's head
 * and tail encoded, the body's own bytes between them; undefined when
 * `wrapped` is not `head + raw + tail` or the body's bytes are not `raw`'s.
 */
function envelopeBytesOf(wrapped: string, text: string, raw: string, body: Buffer, utf8: boolean): Buffer | undefined {
  const inner = bodyBytesOf(text, raw, body, utf8);
  if (!inner) return undefined;
  const start = wrapped.indexOf('\n') + 1;
  if (start === 0 || !wrapped.startsWith(raw, start)) return undefined;
  return Buffer.concat([Buffer.from(wrapped.slice(0, start), 'utf8'), inner, Buffer.from(wrapped.slice(start + raw.length), 'utf8')]);
}

export interface Extracted {
  /** The ResultRef kind of the payload. */
  kind: ResultKind;
  title: string;
  /** The payload: enveloped text (html, text), the sanitized value (json), or sanitized data text (jsonl, csv). */
  content: unknown;
  /** The payload as it is written to a ResultRef. */
  text: string;
  /** `text`'s UTF-8 bytes when they could be taken from the body without re-encoding it (else encode `text`). */
  bytes?: Buffer;
  /**
   * The ResultRef file's bytes, when the extractor knows the payload goes to one
   * (over the caller's `refAbove`) and the file is not `bytes` (a JSON document
   * is written indented): set only by the JSON fast path.
   */
  file?: Buffer;
  /** LFs in `file`, or else in `bytes`, when the extractor counted them (the ResultRef need not). */
  lines?: number;
  /** True when maxChars cut the text. */
  cut: boolean;
}

function cutChars(text: string, maxChars: number): { text: string; cut: boolean } {
  if (text.length <= maxChars) return { text, cut: false };
  let end = maxChars;
  // Never split a surrogate pair.
  const c = text.charCodeAt(end - 1);
  if (c >= 0xd800 && c <= 0xdbff) end--;
  return { text: text.slice(0, end), cut: true };
}

function cleanTitle(title: string): string {
  const t = sanitizeUntrustedText(title).replace(/\s+/g, ' ').trim();
  return t.length > 300 ? `${t.slice(0, 300)}…` : t;
}

/** Readable text of an HTML page: hidden content stripped, then Readability, then block-aware text. */
export async function extractHtml(html: string, url: string): Promise<{ title: string; text: string }> {
  const { parseHTML } = await import('linkedom');
  const { Readability } = await import('@mozilla/readability');
  const document = parseHTML(html).document as unknown as DomDocument;
  stripHidden(document);
  const docTitle = document.title ?? '';
  let title = docTitle;
  let root: DomElement | null = null;
  try {
    const article = new Readability(document as never, { keepClasses: false }).parse();
    if (article?.content) {
      const parsed = parseHTML(`<!doctype html><html><body>${article.content}</body></html>`).document as unknown as DomDocument;
      root = parsed.body;
      title = article.title || docTitle;
    }
  } catch {
    /* Readability gave up: the stripped body's text is the fallback */
  }
  root ??= document.body ?? document.documentElement;
  void url;
  return { title, text: blockText(root) };
}

const BLOCK = new Set([
  'ADDRESS',
  'ARTICLE',
  'ASIDE',
  'BLOCKQUOTE',
  'BR',
  'DD',
  'DIV',
  'DL',
  'DT',
  'FIGCAPTION',
  'FIGURE',
  'FOOTER',
  'FORM',
  'H1',
  'H2',
  'H3',
  'H4',
  'H5',
  'H6',
  'HEADER',
  'HR',
  'LI',
  'MAIN',
  'NAV',
  'OL',
  'P',
  'PRE',
  'SECTION',
  'TABLE',
  'TR',
  'UL',
]);

/** Text with line breaks where blocks end, whitespace collapsed inside lines. */
function blockText(root: DomElement): string {
  const out: string[] = [];
  const walk = (node: DomNode): void => {
    if (node.nodeType === 3) {
      out.push(node.nodeValue ?? '');
      return;
    }
    if (node.nodeType !== 1) return;
    const tag = (node as DomElement).tagName.toUpperCase();
    if (tag === 'LI') out.push('\n- ');
    else if (BLOCK.has(tag)) out.push('\n');
    if (tag === 'TD' || tag === 'TH') out.push(' ');
    for (let c = node.firstChild; c; c = c.nextSibling) walk(c);
    if (BLOCK.has(tag)) out.push('\n');
  };
  walk(root);
  return out
    .join('')
    .split('\n')
    .map((l) => l.replace(/[ \t\f\v\u00a0]+/g, ' ').trim())
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/** Letters and signs a marker can be spelt with before its word "untrusted" (see MARKER in the envelope module). */
const MARKER_RUN = new Uint8Array(128);
for (const c of '<_-. \t\n\rendxtralusENDXTRALUS') MARKER_RUN[c.charCodeAt(0)] = 1;
/** Bytes decoded past maxChars in the text fast path: where a marker that starts before the cut would have to end. */
const FAST_TEXT_MARGIN = 1024;

/**
 * CSV and text bodies that are clean ASCII (printable, tab, LF, CR; never the
 * word "untrusted": isCleanAscii, checked by clean-scan.ts's kernel): the
 * sanitizer would return their text unchanged, so the body is neither decoded
 * whole nor scanned by the sanitizer's regexes. A CSV
 * payload is the body's own bytes (its text decoded only if asked for); a text
 * body over maxChars is checked only up to the cut plus a margin that shows no
 * envelope marker can start before the cut, and its payload is the envelope
 * around the body's own bytes up to the cut. Exactly the slow path's result
 * (test/web/extract-fast-path.test.ts compares them over random and adversarial
 * bodies); undefined sends the body down the slow path.
 */
function cleanAsciiFastPath(body: Buffer, kind: 'csv' | 'text', maxChars: number, bytesCut: boolean, envelope: (text: string) => string): Extracted | undefined {
  if (kind === 'csv') {
    const lines = cleanLines(body);
    if (lines < 0) return undefined;
    let end = body.length;
    if (bytesCut) {
      const nl = body.lastIndexOf(0x0a);
      if (nl !== -1) end = nl + 1;
    }
    const bytes = body.subarray(0, end);
    // A cut falls after the last LF: every LF is kept.
    return fromBytes('csv', bytes, () => bytes.toString('latin1'), false, lines);
  }
  return textFastPath(body, body.length, maxChars, envelope);
}

/**
 * The text half of the fast path over the head of a body of `total` bytes:
 * `head` holds at least its first maxChars + FAST_TEXT_MARGIN bytes (or all of
 * it), so a megabyte page cut at maxChars is never joined whole. Undefined
 * sends the body down the slow path.
 */
function textFastPath(head: Buffer, total: number, maxChars: number, envelope: (text: string) => string): Extracted | undefined {
  // Text under the cut: the slow path reuses the body's bytes already; only the cut is worth a fast path.
  if (total <= maxChars) return undefined;
  const prefix = head.subarray(0, Math.min(total, maxChars + FAST_TEXT_MARGIN));
  if (cleanLines(prefix) < 0) return undefined;
  // A marker starting before the cut and naming "untrusted" past the prefix would run through
  // every byte between: one byte it cannot contain, past the cut, rules that out.
  let stop = false;
  for (let i = maxChars; i < prefix.length && !stop; i++) stop = MARKER_RUN[prefix[i]!] === 0;
  if (!stop) return undefined;
  // The sanitizer returns the kept text unchanged, so it is not wrapped (and scanned again, ~50 µs
  // per 50,000 chars): the envelope of a one-space stand-in gives the head and tail (one id), the
  // payload is the body's own bytes between them, and its text is decoded only if asked for.
  const shell = envelope(' ');
  const open = shell.indexOf('\n') + 1;
  const kept = prefix.subarray(0, maxChars);
  const opening = shell.slice(0, open);
  const closing = `${kept[kept.length - 1] === 0x0a ? '' : '\n'}${shell.slice(open + 2)}`;
  const bytes = Buffer.concat([Buffer.from(opening, 'utf8'), kept, Buffer.from(closing, 'utf8')]);
  return fromBytes('text', bytes, () => `${opening}${kept.toString('latin1')}${closing}`, true);
}

/** A fast path's payload: its bytes as they are written, its text (`decode`) made once and only if asked for. */
function fromBytes(kind: ResultKind, bytes: Buffer, decode: () => string, cut: boolean, lines?: number): Extracted {
  let text: string | undefined;
  const out: Extracted = {
    kind,
    title: '',
    get content() {
      return (text ??= decode());
    },
    get text() {
      return (text ??= decode());
    },
    cut,
    bytes,
  };
  if (lines !== undefined) out.lines = lines;
  return out;
}

/**
 * JSON and JSONL bodies that are clean ASCII and round-trip exactly
 * (json-fast.ts): the payload from the body's bytes, without parsing,
 * sanitizing and serializing every value. A JSON document takes it only when
 * it goes to a ResultRef (compact form over `refAbove`): its file is the body
 * re-indented; an inline one needs the parsed value anyway. `content` and
 * `text` are the slow path's own, made only if asked for. Undefined sends the
 * body down the slow path.
 */
function jsonFastPath(body: Buffer, kind: 'json' | 'jsonl', bytesCut: boolean, refAbove: number | undefined): Extracted | undefined {
  if (kind === 'jsonl') {
    // A body cut mid-row loses its partial last row (when it has another), as the slow path's split does.
    const nl = bytesCut ? body.lastIndexOf(0x0a) : -1;
    const rows = jsonlRowsFast(body, nl === -1 ? body.length : nl + 1);
    if (!rows) return undefined;
    return fromBytes('jsonl', rows.bytes, () => rows.bytes.toString('latin1'), false, rows.lines);
  }
  if (bytesCut || refAbove === undefined) return undefined;
  const doc = indentJsonFast(body);
  if (!doc || doc.compactBytes <= refAbove) return undefined;
  let value: { content: unknown } | undefined;
  const parsed = (): unknown => (value ??= { content: sanitizeUntrustedValue(JSON.parse(body.toString('latin1'))) }).content;
  return {
    kind: 'json',
    title: '',
    get content() {
      return parsed();
    },
    get text() {
      return JSON.stringify(parsed());
    },
    cut: false,
    file: doc.indented,
    lines: doc.lines,
  };
}

/** The first `n` bytes of a body held as chunks (all of it when shorter), joined. */
export function headOf(chunks: readonly Buffer[], n: number): Buffer {
  if (chunks.length > 0 && chunks[0]!.length >= n) return chunks[0]!.subarray(0, n);
  const take: Buffer[] = [];
  let size = 0;
  for (const c of chunks) {
    if (size >= n) break;
    take.push(c.length > n - size ? c.subarray(0, n - size) : c);
    size += Math.min(c.length, n - size);
  }
  return Buffer.concat(take, size);
}

/**
 * {@link extractBody} over a body held as the chunks it arrived in: a text
 * body over maxChars that takes the fast path joins only its head; every
 * other body is joined once and extracted as before.
 */
export async function extractChunks(chunks: readonly Buffer[], size: number, kind: BodyKind, contentType: string, finalUrl: string, maxChars: number, bytesCut: boolean, refAbove?: number, html?: HtmlExtractor): Promise<Extracted> {
  if (kind === 'text' && size > maxChars && decodesAsUtf8(contentType)) {
    const fast = textFastPath(headOf(chunks, maxChars + FAST_TEXT_MARGIN), size, maxChars, (text) => wrapUntrusted(text, { source: 'web_fetch', origin: finalUrl }));
    if (fast) return fast;
  }
  return extractBody(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size), kind, contentType, finalUrl, maxChars, bytesCut, { refAbove, html });
}

/** What turns a decoded HTML page into its title and readable text: web_fetch's is the worker pool (html-pool.ts). */
export type HtmlExtractor = (html: string, url: string) => Promise<{ title: string; text: string }>;

/**
 * The script-facing payload of a body. `maxChars` bounds extracted text
 * (html, text); data kinds are bounded by maxResponseBytes upstream and go
 * to a ResultRef when big, so a dataset is never cut mid-row by a char count.
 * `refAbove`: the ResultRef threshold of the caller's store (a payload over
 * it is written to a file), when it has one.
 */
export async function extractBody(
  body: Buffer,
  kind: BodyKind,
  contentType: string,
  finalUrl: string,
  maxChars: number,
  bytesCut: boolean,
  options: { noFastPath?: boolean; refAbove?: number | undefined; html?: HtmlExtractor | undefined } = {},
): Promise<Extracted> {
  const envelope = (text: string): string => wrapUntrusted(text, { source: 'web_fetch', origin: finalUrl });
  if (!options.noFastPath && kind !== 'html' && decodesAsUtf8(contentType)) {
    const fast = kind === 'json' || kind === 'jsonl' ? jsonFastPath(body, kind, bytesCut, options.refAbove) : cleanAsciiFastPath(body, kind, maxChars, bytesCut, envelope);
    if (fast) return fast;
  }
  const raw = decodeText(body, contentType);
  if (kind === 'html') {
    // In this thread only where the caller gives no extractor (tests, benches); web_fetch's runs in a worker.
    const page = await (options.html ?? extractHtml)(raw, finalUrl);
    const { text, cut } = cutChars(sanitizeUntrustedText(page.text), maxChars);
    const wrapped = envelope(text);
    return { kind: 'text', title: cleanTitle(page.title), content: wrapped, text: wrapped, cut };
  }
  if (kind === 'json' && !bytesCut) {
    try {
      const value = sanitizeUntrustedValue(JSON.parse(raw));
      return { kind: 'json', title: '', content: value, text: JSON.stringify(value), cut: false };
    } catch {
      /* not JSON after all: it is returned as text */
    }
  }
  if (kind === 'jsonl') {
    const lines = raw.split('\n');
    // A body cut mid-line loses its partial last row, never returns it as a whole one.
    if (bytesCut && lines.length > 1) lines.pop();
    const rows = lines
      .map((l) => l.trim())
      .filter((l) => l !== '')
      .map((l) => {
        try {
          return JSON.stringify(sanitizeUntrustedValue(JSON.parse(l)));
        } catch {
          return JSON.stringify(sanitizeUntrustedText(l));
        }
      });
    const text = rows.length > 0 ? `${rows.join('\n')}\n` : '';
    return { kind: 'jsonl', title: '', content: text, text, cut: false };
  }
  if (kind === 'csv') {
    let text = sanitizeUntrustedText(raw);
    if (bytesCut && text.includes('\n')) text = text.slice(0, text.lastIndexOf('\n') + 1);
    const bytes = bodyBytesOf(text, raw, body, decodesAsUtf8(contentType));
    return { kind: 'csv', title: '', content: text, text, cut: false, ...(bytes ? { bytes } : {}) };
  }
  const { text, cut } = cutChars(sanitizeUntrustedText(raw), maxChars);
  const wrapped = envelope(text);
  const bytes = envelopeBytesOf(wrapped, text, raw, body, decodesAsUtf8(contentType));
  return { kind: 'text', title: '', content: wrapped, text: wrapped, cut, ...(bytes ? { bytes } : {}) };
}
