/**
 * `web_fetch({url, maxChars?})` (orch:web), daemon-side: the jail has no
 * network; this runs in the comis process through the guarded undici agent
 * (src/lib/web), so every connection, redirects included, goes to an address
 * the SSRF guard checked at connect time.
 *
 * Returns the page as untrusted data: `{url, finalUrl, status, contentType,
 * title, kind, content, truncated, untrusted: true}` inline up to the
 * ResultRef threshold; over it a ResultRef whose kind comes from the
 * Content-Type and whose handle carries the same fields (but `content`).
 *
 * undici, linkedom and Readability load on the first call only.
 */
import type { Agent } from 'undici';

import { CapCallError } from '../capsocket/protocol.js';
import type { WebFetchConfig } from '../config/web-schema.js';
import { clampRequestChars, resolveSourceProfile } from '../policy/source-profiles.js';
import { materialize, type ResultRefHandle } from '../resultref/materialize.js';
import type { Dialer, Resolver } from '../web/guarded-agent.js';
import { WEB_FETCH_TIMEOUT_BOUNDS } from '../config/web-limits.js';
import type { ToolContext } from './context.js';

const runAgents = new WeakMap<AbortSignal, Agent>();

export interface WebFetchArgs {
  url: string;
  maxChars?: number | undefined;
}

/**
 * What tests inject: a stub resolver and a recording dialler. Production
 * passes nothing (system resolver, undici's connector).
 */
export interface WebFetchDeps {
  resolve?: Resolver;
  dial?: Dialer;
  /** TESTS ONLY: the address check off, to prove a refusal test's connector would have been dialled. */
  unsafeSkipAddressCheck?: boolean;
}

/** The effective limits of an agent's web.fetch config (profile ceilings and timeout clamp applied). */
export function effectiveFetchLimits(config: WebFetchConfig): { timeoutMs: number; maxResponseBytes: number; maxChars: number } {
  const profile = resolveSourceProfile('web_fetch', { maxResponseBytes: config.maxResponseBytes, maxChars: config.maxChars });
  const timeoutMs = Math.min(WEB_FETCH_TIMEOUT_BOUNDS.max, Math.max(WEB_FETCH_TIMEOUT_BOUNDS.min, config.timeoutMs));
  return { timeoutMs, maxResponseBytes: profile.maxResponseBytes, maxChars: profile.maxChars };
}

export async function webFetchTool(ctx: ToolContext, config: WebFetchConfig, args: WebFetchArgs, deps: WebFetchDeps = {}): Promise<unknown> {
  const [undici, { createGuardedAgent }, { guardedGet }, { bodyKindOf, extractBody }, { parsePrivateAllowRule }] = await Promise.all([
    import('undici'),
    import('../web/guarded-agent.js'),
    import('../web/fetch.js'),
    import('../web/extract.js'),
    import('../net/ssrf.js'),
  ]);
  const limits = effectiveFetchLimits(config);
  const maxChars = clampRequestChars({ ...resolveSourceProfile('web_fetch'), maxChars: limits.maxChars }, args.maxChars);
  const make = (): Agent => createGuardedAgent({ allowPrivate: config.allowPrivate.map(parsePrivateAllowRule), resolve: deps.resolve, dial: deps.dial, unsafeSkipAddressCheck: deps.unsafeSkipAddressCheck }, undici);
  // One agent per run (its keep-alive connections go only to addresses it checked), closed when the run ends.
  const runEnded = ctx.runEnded;
  let agent: Agent;
  if (runEnded && !runEnded.aborted) {
    agent = runAgents.get(runEnded) ?? make();
    if (!runAgents.has(runEnded)) {
      runAgents.set(runEnded, agent);
      runEnded.addEventListener('abort', () => void agent.destroy().catch(() => undefined), { once: true });
    }
  } else agent = make();
  try {
    const page = await guardedGet(agent, undici, args.url, config, { followRedirects: config.followRedirects, timeoutMs: limits.timeoutMs, maxResponseBytes: limits.maxResponseBytes }, ctx.runEnded);
    const kind = bodyKindOf(page.contentType, page.body);
    if (!kind) throw new CapCallError('unsupported_content_type', `web_fetch: ${page.contentType.split(';', 1)[0] || 'this content'} is not text or data; web_fetch returns HTML, JSON, JSONL, CSV and text`);
    const out = await extractBody(page.body, kind, page.contentType, page.finalUrl, maxChars, page.truncated);
    const meta = { url: page.url, finalUrl: page.finalUrl, status: page.status, contentType: page.contentType, title: out.title };
    const truncated = page.truncated || out.cut;
    const payload = out.bytes ?? Buffer.from(out.text, 'utf8');
    if (ctx.results && payload.length > ctx.results.thresholdBytes) {
      const handle: ResultRefHandle = materialize(
        ctx.results,
        `web.${out.kind}`,
        (write) => {
          // A JSON document goes to disk indented, one member per line, so `.read(0, 40)` is a
          // 40-line slice of it rather than the whole document on its one line.
          const bytes = out.kind === 'json' ? Buffer.from(`${JSON.stringify(out.content, null, 2)}\n`, 'utf8') : payload;
          for (let off = 0; off < bytes.length; off += 1 << 20) write(bytes.subarray(off, off + (1 << 20)));
        },
        out.kind,
      );
      return Object.assign(handle, meta, { truncated, untrusted: true });
    }
    return { ...meta, kind: out.kind, content: out.content, truncated, untrusted: true };
  } finally {
    if (!runEnded || !runAgents.has(runEnded)) void agent.close().catch(() => undefined);
  }
}
