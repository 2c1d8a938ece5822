/**
 * An MCP tool result, turned into DATA for the jailed script (seed 000:
 * "wrapped, never control"):
 *
 *  - text content (and the text of embedded resources) is sanitized and
 *    wrapped in the untrusted-content envelope, source `mcp:<server>.<tool>`,
 *    its characters bounded by the `mcp_default` source profile (`maxChars`);
 *  - structured content stays JSON, every string (keys too) through
 *    `sanitizeUntrustedValue`;
 *  - images, audio and blob resources are never inlined: their bytes are
 *    written as a file in the run's results area and the script gets
 *    metadata (`{type, mimeType, bytes, file}`);
 *  - resource links are metadata (uri, name, mimeType, description), sanitized;
 *  - the whole value over the ResultRef threshold (15,000 bytes) becomes a
 *    ResultRef the script slices in the jail.
 */
import { closeSync, writeSync } from 'node:fs';

import { CapCallError } from '../capsocket/protocol.js';
import { createFile, ENTRY_COST_BYTES, openRoot } from '../confine/index.js';
import type { SourceProfile } from '../policy/source-profiles.js';
import { maybeMaterializeValue, type ResultStore } from '../resultref/materialize.js';
import { sanitizeUntrustedText, sanitizeUntrustedValue, wrapUntrusted } from '../untrusted/envelope.js';

export interface McpResultData {
  type: 'McpResult';
  source: string;
  isError: boolean;
  /** All text parts, in order, joined with "\n", in one envelope (absent when the result has no text part). */
  text?: string;
  /** The other parts as metadata: images/audio/blobs as files, resources, resource links. */
  content: Record<string, unknown>[];
  structuredContent?: unknown;
  /** True when text was cut at the profile's maxChars. */
  truncated?: boolean;
  untrusted: true;
}

const EXT: Readonly<Record<string, string>> = {
  'image/png': 'png',
  'image/jpeg': 'jpg',
  'image/gif': 'gif',
  'image/webp': 'webp',
  'image/svg+xml': 'svg',
  'audio/wav': 'wav',
  'audio/x-wav': 'wav',
  'audio/mpeg': 'mp3',
  'audio/ogg': 'ogg',
  'application/pdf': 'pdf',
  'application/json': 'json',
  'application/gzip': 'gz',
  'text/plain': 'txt',
};

/** A short, safe MIME type (or application/octet-stream). */
function safeMime(m: unknown): string {
  return typeof m === 'string' && /^[A-Za-z0-9.+-]{1,64}\/[A-Za-z0-9.+-]{1,64}$/.test(m) ? m.toLowerCase() : 'application/octet-stream';
}

function cut(s: unknown, max: number): string | undefined {
  if (typeof s !== 'string') return undefined;
  const clean = sanitizeUntrustedText(s);
  return clean.length > max ? `${clean.slice(0, max)}…` : clean;
}

/**
 * Writes bytes as `results/mcp-<n>.<ext>`, through the confinement module
 * (relative to a handle on the results directory, exclusive create), charged
 * to the run's results budget and the per-file cap.
 */
export function materializeBytes(store: ResultStore, data: Buffer, mime: string): string {
  if (data.length > store.maxFileBytes || data.length + ENTRY_COST_BYTES > store.budget.remainingBytes) {
    throw new CapCallError('result_too_large', `an MCP binary result of ${data.length} bytes exceeds the per-file cap or this run's remaining results budget`);
  }
  const name = `mcp-${store.nextId++}.${EXT[mime] ?? 'bin'}`;
  const root = openRoot(store.dir);
  try {
    const fd = createFile(root, name, 0o644);
    try {
      for (let off = 0; off < data.length;) off += writeSync(fd, data, off, data.length - off);
    } finally {
      closeSync(fd);
    }
  } finally {
    closeSync(root.fd);
  }
  store.budget.remainingBytes -= data.length + ENTRY_COST_BYTES;
  store.materialized.count++;
  store.materialized.bytes += data.length;
  return `results/${name}`;
}

function decodeBase64(data: unknown): Buffer | undefined {
  if (typeof data !== 'string' || !/^[A-Za-z0-9+/=\s_-]*$/.test(data)) return undefined;
  return Buffer.from(data, 'base64');
}

/**
 * The most bytes JSON.stringify takes for a value with no content parts and
 * no structured content: its fixed keys (under 128 bytes), then 6 bytes per
 * UTF-16 unit of its strings (an escape such as `\u001f` is 6, a unit in
 * UTF-8 at most 3).
 */
export function textOnlyJsonBytesBound(value: McpResultData): number {
  return 128 + 6 * (value.source.length + (value.text?.length ?? 0));
}

/** Turns one CallToolResult into the value the script receives (maybe a ResultRef). */
export function toScriptResult(raw: unknown, from: { server: string; tool: string }, profile: SourceProfile, results: ResultStore | undefined): unknown {
  const source = `mcp:${from.server}.${from.tool}`;
  const r = (raw && typeof raw === 'object' ? raw : {}) as { content?: unknown; structuredContent?: unknown; isError?: unknown; toolResult?: unknown };
  const parts = Array.isArray(r.content) ? r.content.slice(0, 1000) : r.toolResult !== undefined ? [{ type: 'text', text: JSON.stringify(r.toolResult) }] : [];
  let budget = profile.maxChars;
  let truncated = false;
  const texts: string[] = [];
  const takeText = (t: string): string => {
    const clean = sanitizeUntrustedText(t);
    if (clean.length <= budget) {
      budget -= clean.length;
      return clean;
    }
    truncated = true;
    const kept = clean.slice(0, Math.max(0, budget));
    budget = 0;
    return kept;
  };
  const content: Record<string, unknown>[] = [];
  const file = (data: unknown, mime: string): Record<string, unknown> => {
    const bytes = decodeBase64(data);
    if (!bytes) return { bytes: 0, error: 'not base64' };
    if (!results) return { bytes: bytes.length, error: 'no results area in this context' };
    return { bytes: bytes.length, file: materializeBytes(results, bytes, mime) };
  };
  for (const p of parts) {
    const part = (p && typeof p === 'object' ? p : {}) as Record<string, unknown>;
    switch (part.type) {
      case 'text': {
        // Text parts are not repeated in `content`: all of them are in `text`, one envelope.
        texts.push(takeText(typeof part.text === 'string' ? part.text : ''));
        break;
      }
      case 'image':
      case 'audio': {
        const mimeType = safeMime(part.mimeType);
        content.push({ type: part.type, mimeType, ...file(part.data, mimeType) });
        break;
      }
      case 'resource': {
        const res = (part.resource && typeof part.resource === 'object' ? part.resource : {}) as Record<string, unknown>;
        const mimeType = safeMime(res.mimeType ?? 'text/plain');
        const meta: Record<string, unknown> = { type: 'resource', uri: cut(res.uri, 2048), mimeType };
        if (typeof res.text === 'string') {
          meta.text = wrapUntrusted(takeText(res.text), { source });
        } else Object.assign(meta, file(res.blob, mimeType));
        content.push(meta);
        break;
      }
      case 'resource_link':
        content.push({ type: 'resource_link', uri: cut(part.uri, 2048), name: cut(part.name, 256), mimeType: safeMime(part.mimeType), description: cut(part.description, 1024) });
        break;
      default:
        content.push({ type: 'unsupported', kind: cut(part.type, 64) ?? 'unknown' });
    }
  }
  const value: McpResultData = { type: 'McpResult', source, isError: r.isError === true, content, untrusted: true };
  if (texts.length > 0) value.text = wrapUntrusted(texts.join('\n'), { source });
  if (r.structuredContent !== undefined) value.structuredContent = sanitizeUntrustedValue(r.structuredContent);
  if (truncated) value.truncated = true;
  if (!results) return value;
  // Most results are a short text: under the threshold whatever its characters, no need to serialize it to know.
  if (value.content.length === 0 && value.structuredContent === undefined && textOnlyJsonBytesBound(value) <= results.thresholdBytes) return value;
  const handle = maybeMaterializeValue(results, value, () => ({ text: JSON.stringify(value), nameHint: 'mcp.json' }));
  return handle === value ? value : { ...handle, untrusted: true, source };
}
