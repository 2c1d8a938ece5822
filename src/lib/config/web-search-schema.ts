/**
 * `agents.<id>.web.search.*`: the search provider behind `comis_tools.web_search`.
 *
 * Semantics: the provider endpoint is operator-trusted config (it is not
 * subject to the SSRF guard that web_fetch applies to script-chosen URLs);
 * what it answers is still untrusted data. An API key is never written in
 * config: `apiKeyEnv` names the environment variable of the comis process
 * that holds it, and its value is registered with the output guard when the
 * agent is resolved, so no log, error or report carries it.
 */
import { z } from 'zod';

export const SEARCH_PROVIDERS = ['searxng', 'brave', 'tavily'] as const;
export type SearchProviderName = (typeof SEARCH_PROVIDERS)[number];

/** The public endpoints of the hosted providers (SearXNG is self-hosted: it has none). */
export const SEARCH_PROVIDER_BASE_URLS: Readonly<Record<Exclude<SearchProviderName, 'searxng'>, string>> = {
  brave: 'https://api.search.brave.com',
  tavily: 'https://api.tavily.com',
};

/** Most results one call may ask for: Brave and Tavily both cap a page at 20. */
export const SEARCH_MAX_COUNT = 20;

export const webSearchSchema = z
  .strictObject({
    provider: z.enum(SEARCH_PROVIDERS).describe('The search provider: searxng (self-hosted JSON API, needs baseUrl), brave (Brave Search API) or tavily (Tavily API); brave and tavily need apiKeyEnv.'),
    baseUrl: z
      .url({ protocol: /^https?$/, normalize: true })
      .optional()
      .describe('Provider endpoint (http or https). Required for searxng (e.g. http://127.0.0.1:8888); brave and tavily default to their public APIs.'),
    apiKeyEnv: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'an environment variable name (letters, digits, "_")')
      .optional()
      .describe('The NAME of the environment variable holding the API key (brave, tavily). The key itself never goes in config and is never printed.'),
    timeoutMs: z.number().int().min(1000).max(60_000).default(15_000).describe('Total time one search request may take, in ms (connect, headers and body).'),
    defaultCount: z.number().int().min(1).max(SEARCH_MAX_COUNT).default(5).describe('Results returned when the script passes no count.'),
    maxCount: z.number().int().min(1).max(SEARCH_MAX_COUNT).default(10).describe(`Most results a script may ask for (a larger count is clamped to it; at most ${SEARCH_MAX_COUNT}).`),
  })
  .superRefine((v, ctx) => {
    if (v.provider === 'searxng' && v.baseUrl === undefined) ctx.addIssue({ code: 'custom', path: ['baseUrl'], message: 'required for provider searxng: the URL of your SearXNG instance' });
    if (v.provider !== 'searxng' && v.apiKeyEnv === undefined) ctx.addIssue({ code: 'custom', path: ['apiKeyEnv'], message: `required for provider ${v.provider}: the name of the environment variable holding its API key` });
    if (v.provider === 'searxng' && v.apiKeyEnv !== undefined) ctx.addIssue({ code: 'custom', path: ['apiKeyEnv'], message: 'provider searxng takes no API key; remove apiKeyEnv' });
    if (v.defaultCount > v.maxCount) ctx.addIssue({ code: 'custom', path: ['defaultCount'], message: 'must not exceed maxCount' });
  })
  .describe('The web_search provider of this agent. Absent: web_search is a tool error naming this key.');
