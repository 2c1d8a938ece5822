/**
 * `agents.<id>.web.fetch`: the operator's policy for web_fetch. The address
 * guard itself is not configurable (loopback, private, link-local… are always
 * refused); `allowPrivate` is the one documented escape hatch, by IP, CIDR or
 * IP:port, never by name (DNS decides where a name points).
 */
import { z } from 'zod';

import { WEB_FETCH_TIMEOUT_BOUNDS } from './web-limits.js';
import { parsePrivateAllowRule } from '../net/ssrf.js';
import { webSearchSchema } from './web-search-schema.js';

const hostPattern = z
  .string()
  .min(1)
  .max(253)
  .refine((p) => {
    const name = p.startsWith('*.') ? p.slice(2) : p;
    return name !== '' && !/[\s/:@*?#[\]\\]/.test(name);
  }, 'a host name ("docs.example.org") or a suffix pattern ("*.example.org"); no scheme, port or path');

const privateEntry = z
  .string()
  .min(1)
  .max(64)
  .superRefine((text, ctx) => {
    try {
      parsePrivateAllowRule(text);
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: (err as Error).message });
    }
  });

export const webFetchSchema = z
  .strictObject({
    allowHosts: z.array(hostPattern).max(1000).default([]).describe('When non-empty, web_fetch reaches only these hosts: exact names or "*.suffix" patterns (every redirect hop is checked too).'),
    denyHosts: z.array(hostPattern).max(1000).default([]).describe('Hosts web_fetch never reaches (exact or "*.suffix"); wins over allowHosts. A denied host is a tool error and an audited deny.'),
    allowPrivate: z
      .array(privateEntry)
      .max(256)
      .default([])
      .describe('The escape hatch of the SSRF guard: private, loopback or other refused addresses web_fetch may reach anyway, as IP ("10.1.2.3"), CIDR ("10.1.2.0/24") or IP:port ("127.0.0.1:8080"). Host names are not accepted.'),
    followRedirects: z.boolean().default(true).describe('Follow up to 5 redirects, re-checking every hop (default). false refuses every 3xx answer.'),
    timeoutMs: z.number().int().positive().default(WEB_FETCH_TIMEOUT_BOUNDS.default).describe('Total time of one web_fetch call, all hops and the whole body, in ms (default 30000; clamped to 1000-120000).'),
    maxResponseBytes: z.number().int().positive().optional().describe('Most decoded body bytes read per call (default 2000000; clamped to 32000-5000000, the source-profile floor and ceiling).'),
    maxChars: z.number().int().positive().optional().describe('Most characters of extracted text returned per call (default 50000; clamped to 100-500000). A script may ask for fewer.'),
  })
  .describe('Policy of web_fetch for this agent.');

export const webSchema = z
  .strictObject({
    fetch: webFetchSchema.default(webFetchSchema.parse({})),
    search: webSearchSchema.optional(),
  })
  .describe('Daemon-side web tools (web_fetch, web_search).');

export type WebFetchConfig = z.infer<typeof webFetchSchema>;
