/**
 * From what a provider answered to what a script gets: `[{title, url, snippet}]`,
 * the same shape whatever the provider. The answer is untrusted data, so:
 * only hits whose url is an http(s) URL are kept (once each); markup a
 * provider puts in titles and snippets (Brave's `<strong>`) is removed and
 * its entities decoded; every string goes through the untrusted-content
 * sanitizer (invisible and tag characters out, envelope markers defused)
 * and through the output guard (a provider that echoes the API key back
 * cannot carry it into the jail); and the whole is bounded by the
 * `web_search` source profile's maxChars, cutting the last snippet to fit.
 */
import { redactSecrets } from '../../redact/output-guard.js';
import { sanitizeUntrustedText } from '../../untrusted/envelope.js';
import type { RawHit } from './provider.js';

export interface SearchHit {
  title: string;
  url: string;
  snippet: string;
}

/** Per-field bounds, well under the profile's total: one hit cannot take the whole budget. */
export const HIT_BOUNDS = { title: 300, url: 2048, snippet: 1000 };

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' };

/** Markup out, the common entities decoded. Linear: one pass of a simple pattern each. */
export function plainText(value: string): string {
  return value
    .replace(/<[^<>]{0,200}>/g, '')
    .replace(/&(#x[0-9a-f]{1,6}|#[0-9]{1,7}|[a-z]{2,6});/gi, (whole, name: string) => {
      if (name[0] === '#') {
        const cp = name[1] === 'x' || name[1] === 'X' ? Number.parseInt(name.slice(2), 16) : Number.parseInt(name.slice(1), 10);
        return cp > 0 && cp <= 0x10ffff ? String.fromCodePoint(cp) : whole;
      }
      return ENTITIES[name.toLowerCase()] ?? whole;
    })
    .replace(/\s+/g, ' ')
    .trim();
}

function clean(value: unknown, max: number): string {
  if (typeof value !== 'string') return '';
  // Sanitized before (a marker must not lose its brackets to the tag stripper and survive as
  // text) and after decoding (an entity must not smuggle in what the sanitizer removes).
  const text = redactSecrets(sanitizeUntrustedText(plainText(sanitizeUntrustedText(value.slice(0, max * 4)))));
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

function httpUrl(value: unknown): string | undefined {
  if (typeof value !== 'string' || value.length > HIT_BOUNDS.url) return undefined;
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  const text = redactSecrets(sanitizeUntrustedText(url.href));
  return text === url.href ? text : undefined;
}

/** The normalised, sanitized, bounded hits: at most `count`, at most `maxChars` characters in all. */
export function normalizeHits(raw: readonly RawHit[], count: number, maxChars: number): SearchHit[] {
  const out: SearchHit[] = [];
  const seen = new Set<string>();
  let chars = 0;
  for (const hit of raw) {
    if (out.length >= count) break;
    const url = httpUrl(hit.url);
    if (!url || seen.has(url)) continue;
    seen.add(url);
    const title = clean(hit.title, HIT_BOUNDS.title);
    let snippet = clean(hit.snippet, HIT_BOUNDS.snippet);
    const fixed = title.length + url.length;
    if (chars + fixed > maxChars) break;
    if (chars + fixed + snippet.length > maxChars) snippet = snippet.slice(0, Math.max(0, maxChars - chars - fixed - 1)) + '…';
    chars += fixed + snippet.length;
    out.push({ title, url, snippet });
  }
  return out;
}
