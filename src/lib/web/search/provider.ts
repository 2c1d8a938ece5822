/**
 * The search-provider interface: each adapter turns a query into the ONE HTTP
 * request its real API expects, and picks the hits out of the JSON it
 * answers. Adapters do no I/O themselves (./http.ts does, with bounds), so
 * the wire of each provider is plain data a test can read.
 *
 * Wire protocols (as the providers document them):
 * - SearXNG: `GET <baseUrl>/search?q=…&format=json` → `{results: [{title, url, content}]}`
 *   (the instance must list `json` in `search.formats` of its settings.yml).
 * - Brave Search API: `GET <baseUrl>/res/v1/web/search?q=…&count=N`, header
 *   `X-Subscription-Token: <key>` → `{web: {results: [{title, url, description}]}}`.
 * - Tavily: `POST <baseUrl>/search`, header `Authorization: Bearer <key>`, JSON
 *   `{query, max_results}` → `{results: [{title, url, content}]}`.
 */
import { SEARCH_PROVIDER_BASE_URLS, type SearchProviderName } from '../../config/web-search-schema.js';

/** One request, fully described. `secretHeaders` carry the key: they are never logged or echoed. */
export interface SearchRequest {
  method: 'GET' | 'POST';
  url: URL;
  headers: Record<string, string>;
  secretHeaders: Record<string, string>;
  body?: string;
}

/** A hit as the provider gave it: untrusted, any field may be missing or of any type. */
export interface RawHit {
  title: unknown;
  url: unknown;
  snippet: unknown;
}

export interface SearchProvider {
  name: SearchProviderName;
  /** Whether the provider needs an API key (apiKeyEnv). */
  needsKey: boolean;
  request(baseUrl: string, query: string, count: number, key: string | undefined): SearchRequest;
  /** The hits of a parsed body; undefined when the body does not have the provider's shape. */
  hits(body: unknown): RawHit[] | undefined;
  /** A hint for an HTTP status this provider is known to answer for a setup problem. */
  statusHint?(status: number): string | undefined;
}

/** `base` + `path`, keeping any path prefix of base (a SearXNG under /searx/, a proxy). */
function endpoint(base: string, path: string): URL {
  const url = new URL(base);
  if (!url.pathname.endsWith('/')) url.pathname += '/';
  return new URL(path, url);
}

function field(value: unknown, key: string): unknown {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>)[key] : undefined;
}

function listAt(body: unknown, ...path: string[]): unknown[] | undefined {
  let at = body;
  for (const key of path) at = field(at, key);
  return Array.isArray(at) ? at : undefined;
}

const JSON_ACCEPT = { accept: 'application/json', 'accept-encoding': 'identity', 'user-agent': 'comis-web-search' };

export const searxng: SearchProvider = {
  name: 'searxng',
  needsKey: false,
  request(baseUrl, query) {
    const url = endpoint(baseUrl, 'search');
    url.searchParams.set('q', query);
    url.searchParams.set('format', 'json');
    return { method: 'GET', url, headers: { ...JSON_ACCEPT }, secretHeaders: {} };
  },
  hits(body) {
    return listAt(body, 'results')?.map((r) => ({ title: field(r, 'title'), url: field(r, 'url'), snippet: field(r, 'content') }));
  },
  statusHint(status) {
    return status === 403 ? 'SearXNG refuses format=json unless its settings.yml lists json under search.formats' : undefined;
  },
};

export const brave: SearchProvider = {
  name: 'brave',
  needsKey: true,
  request(baseUrl, query, count, key) {
    const url = endpoint(baseUrl, 'res/v1/web/search');
    url.searchParams.set('q', query);
    url.searchParams.set('count', String(count));
    return { method: 'GET', url, headers: { ...JSON_ACCEPT }, secretHeaders: { 'x-subscription-token': key ?? '' } };
  },
  hits(body) {
    // A query with no web results answers without `web` at all: that is zero hits, not a bad shape.
    if (body !== null && typeof body === 'object' && !Array.isArray(body) && field(body, 'web') === undefined) return [];
    return listAt(body, 'web', 'results')?.map((r) => ({ title: field(r, 'title'), url: field(r, 'url'), snippet: field(r, 'description') }));
  },
  statusHint(status) {
    return status === 401 || status === 403 ? 'the Brave Search API refused the key named by apiKeyEnv' : status === 429 ? 'the Brave Search API rate limit was hit' : undefined;
  },
};

export const tavily: SearchProvider = {
  name: 'tavily',
  needsKey: true,
  request(baseUrl, query, count, key) {
    const url = endpoint(baseUrl, 'search');
    return {
      method: 'POST',
      url,
      headers: { ...JSON_ACCEPT, 'content-type': 'application/json' },
      secretHeaders: { authorization: `Bearer ${key ?? ''}` },
      body: JSON.stringify({ query, max_results: count, search_depth: 'basic' }),
    };
  },
  hits(body) {
    return listAt(body, 'results')?.map((r) => ({ title: field(r, 'title'), url: field(r, 'url'), snippet: field(r, 'content') }));
  },
  statusHint(status) {
    return status === 401 || status === 403 ? 'the Tavily API refused the key named by apiKeyEnv' : status === 429 || status === 432 ? 'the Tavily API rate limit or plan limit was hit' : undefined;
  },
};

export const SEARCH_PROVIDER_ADAPTERS: Readonly<Record<SearchProviderName, SearchProvider>> = { searxng, brave, tavily };

/** The endpoint a provider is reached at: the configured baseUrl, else the provider's public API. */
export function providerBaseUrl(name: SearchProviderName, configured: string | undefined): string | undefined {
  return configured ?? (name === 'searxng' ? undefined : SEARCH_PROVIDER_BASE_URLS[name]);
}
