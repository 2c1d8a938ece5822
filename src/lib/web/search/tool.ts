/**
 * `web_search` (orch:web): the agent's configured provider, asked daemon-side
 * (the jail has no network), answered as `[{title, url, snippet}]`. Over the
 * ResultRef threshold (15,000 bytes of JSON) the hits come back as a JSON
 * ResultRef, so `results.jq("[.[].url][0:3]")` works either way.
 *
 * The API key is read from the environment variable `web.search.apiKeyEnv`
 * names, at call time, and registered with the output guard before it is
 * used; it travels only in the request header of the provider's own
 * endpoint (no redirect is followed) and never appears in a result or an
 * error.
 */
import { CapCallError } from '../../capsocket/protocol.js';
import type { ResolvedAgent } from '../../config/load.js';
import { registerSecret } from '../../redact/output-guard.js';
import { resolveSourceProfile } from '../../policy/source-profiles.js';
import { maybeMaterializeValue } from '../../resultref/materialize.js';
import type { ToolContext } from '../../tools/context.js';
import { fetchBoundedJson } from './http.js';
import { normalizeHits, type SearchHit } from './normalize.js';
import { providerBaseUrl, SEARCH_PROVIDER_ADAPTERS } from './provider.js';

export interface WebSearchArgs {
  query: string;
  count?: number | undefined;
}

export async function webSearchTool(ctx: ToolContext, agent: Pick<ResolvedAgent, 'id' | 'config'>, args: WebSearchArgs): Promise<unknown> {
  const config = agent.config.web?.search;
  const key = `agents.${agent.id}.web.search`;
  if (!config) {
    throw new CapCallError('not_configured', `web_search has no provider: set ${key}.provider (searxng, brave or tavily) in config.yaml (docs/config.md, "web.search")`);
  }
  const provider = SEARCH_PROVIDER_ADAPTERS[config.provider];
  const baseUrl = providerBaseUrl(config.provider, config.baseUrl);
  if (!baseUrl) throw new CapCallError('not_configured', `web_search: ${key}.baseUrl is required for provider ${config.provider}`);
  let apiKey: string | undefined;
  if (provider.needsKey) {
    const envName = config.apiKeyEnv ?? '';
    apiKey = process.env[envName];
    if (!apiKey) throw new CapCallError('not_configured', `web_search: ${key}.apiKeyEnv names ${envName}, which is not set (or empty) in comis's environment`);
    registerSecret(apiKey);
  }
  const query = args.query.trim();
  if (query === '') throw new CapCallError('invalid_params', 'web_search: query is empty');
  const count = Math.min(config.maxCount, Math.max(1, args.count ?? config.defaultCount));
  const profile = resolveSourceProfile('web_search');
  const body = await fetchBoundedJson(provider.request(baseUrl, query, count, apiKey), {
    timeoutMs: config.timeoutMs,
    maxBytes: profile.maxResponseBytes,
    signal: ctx.runEnded,
    provider: config.provider,
    statusHint: provider.statusHint?.bind(provider),
  });
  const raw = provider.hits(body);
  if (!raw) throw new CapCallError('search_failed', `web_search: ${config.provider} answered JSON without its results list`);
  const hits: SearchHit[] = normalizeHits(raw, count, profile.maxChars);
  if (!ctx.results) return hits;
  return maybeMaterializeValue(ctx.results, hits, () => ({ text: JSON.stringify(hits), nameHint: 'web_search.json' }));
}
