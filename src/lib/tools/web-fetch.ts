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

import type { WebFetchConfig } from '../config/web-schema.js';
import { clampRequestChars, resolveSourceProfile } from '../policy/source-profiles.js';
import { materializeAsync, type ResultKind, type ResultRefHandle, type ResultStore } from '../resultref/materialize.js';
import type { extractChunks, HtmlExtractor } from '../web/extract.js';
import type { FetchedBody } from '../web/fetch.js';
import type { PageSink } from '../web/page-sink.js';
import { indentedJsonLength } from '../web/json-indent.js';
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
  /** TESTS ONLY: no CSV streamed into its ResultRef (the body is joined and extracted at the end), to compare the two. */
  noStreaming?: boolean;
}

/** The effective limits of an agent's web.fetch config (profile ceilings and timeout clamp applied). */
export function effectiveFetchLimits(config: WebFetchConfig): { timeoutMs: number; maxResponseBytes: number; maxChars: number } {
  const profile = resolveSourceProfile('web_fetch', { maxResponseBytes: config.maxResponseBytes, maxChars: config.maxChars });
  const timeoutMs = Math.min(WEB_FETCH_TIMEOUT_BOUNDS.max, Math.max(WEB_FETCH_TIMEOUT_BOUNDS.min, config.timeoutMs));
  return { timeoutMs, maxResponseBytes: profile.maxResponseBytes, maxChars: profile.maxChars };
}

/**
 * The call's result from a body that has arrived in `sink`: a streamed CSV's
 * ResultRef (or its inline bytes), or the extracted payload, inline up to the
 * ResultRef threshold and a ResultRef (written without blocking the loop)
 * over it. On a throw the caller aborts the sink (no partial file is left).
 */
export async function finishPage(results: ResultStore | undefined, sink: PageSink, page: FetchedBody, maxChars: number, extract: typeof extractChunks): Promise<unknown> {
  const kind = await sink.finalKind();
  const meta = { url: page.url, finalUrl: page.finalUrl, status: page.status, contentType: page.contentType };
  const streamed = await sink.finishCsv(page.truncated);
  if (streamed) {
    if ('handle' in streamed) return Object.assign(streamed.handle, meta, { title: '', truncated: page.truncated, untrusted: true });
    return inlinePage(page, '', 'csv', streamed.inline.toString('latin1'), page.truncated);
  }
  const out = await extract(sink.chunks, sink.size, kind, page.contentType, page.finalUrl, maxChars, page.truncated, results?.thresholdBytes);
  const truncated = page.truncated || out.cut;
  // The extractor's file: it found the payload over the threshold already (a JSON document indented from its bytes).
  let file = results ? out.file : undefined;
  if (!file) {
    const payload = out.bytes ?? Buffer.from(out.text, 'utf8');
    // A JSON document goes to disk indented, one member per line, so `.read(0, 40)` is a
    // 40-line slice of it rather than the whole document on its one line.
    // Not when the indented form would pass the per-file cap: indentation grows with the depth, and
    // a page must not make us build hundreds of MB to be refused; such a document keeps its one line.
    if (results && payload.length > results.thresholdBytes) file = out.kind === 'json' && indentedJsonLength(payload) < results.maxFileBytes ? Buffer.from(`${JSON.stringify(out.content, null, 2)}\n`, 'utf8') : payload;
  }
  if (results && file) {
    const handle: ResultRefHandle = await materializeAsync(results, file, out.kind, sink.emptyRef(), file === out.file || file === out.bytes ? out.lines : undefined);
    await sink.abort(); // any other ref file the sink still holds (none, normally) goes
    return Object.assign(handle, meta, { title: out.title, truncated, untrusted: true });
  }
  await sink.abort(); // a ref file opened while the body arrived is not needed after all
  return inlinePage(page, out.title, out.kind, out.content, truncated);
}

/**
 * An inline result, written out member by member: `{...meta, title, ...}` (a spread of a fresh
 * object followed by more members) takes ~7 µs on Node 20 against ~0.2 µs for the literal, and
 * every small page pays it.
 */
function inlinePage(page: FetchedBody, title: string, kind: ResultKind, content: unknown, truncated: boolean): Record<string, unknown> {
  return { url: page.url, finalUrl: page.finalUrl, status: page.status, contentType: page.contentType, title, kind, content, truncated, untrusted: true };
}

/** The modules a call needs, loaded on the first call and kept (an import() per call is a loader round trip). */
type Modules = [
  typeof import('undici'),
  typeof import('../web/guarded-agent.js'),
  typeof import('../web/fetch.js'),
  typeof import('../web/extract.js'),
  typeof import('../net/ssrf.js'),
  typeof import('../web/page-sink.js'),
  typeof import('../web/html-pool.js'),
];
let modules: Promise<Modules> | undefined;
function loadModules(): Promise<Modules> {
  return (modules ??= Promise.all([import('undici'), import('../web/guarded-agent.js'), import('../web/fetch.js'), import('../web/extract.js'), import('../net/ssrf.js'), import('../web/page-sink.js'), import('../web/html-pool.js')]).catch(
    (err: unknown) => {
      modules = undefined;
      throw err;
    },
  ));
}

export async function webFetchTool(ctx: ToolContext, config: WebFetchConfig, args: WebFetchArgs, deps: WebFetchDeps = {}): Promise<unknown> {
  const [undici, { createGuardedAgent }, { guardedGet }, { extractChunks }, { parsePrivateAllowRule }, { PageSink }, { extractHtmlInWorker, prewarmHtmlWorker }] = await loadModules();
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
  // The body streams into the sink as it arrives: a clean CSV straight into its ResultRef file.
  const sink = new PageSink(ctx.results, maxChars, !deps.noStreaming);
  const started = performance.now();
  // An HTML page is extracted in a worker thread, within what is left of the call's deadline (at least 1 s).
  const html: HtmlExtractor = (text, url) => extractHtmlInWorker(text, url, { timeoutMs: Math.max(1000, limits.timeoutMs - (performance.now() - started)), signal: ctx.runEnded });
  const open = (contentType: string): ((chunk: Buffer) => void) => {
    const onChunk = sink.open(contentType);
    // Its extractor loads while the body is on the wire.
    if (sink.declaredKind === 'html') prewarmHtmlWorker();
    return onChunk;
  };
  try {
    const page = await guardedGet(agent, undici, args.url, config, { followRedirects: config.followRedirects, timeoutMs: limits.timeoutMs, maxResponseBytes: limits.maxResponseBytes }, open, ctx.runEnded);
    return await finishPage(ctx.results, sink, page, maxChars, (chunks, size, kind, type, url, chars, cut, refAbove) => extractChunks(chunks, size, kind, type, url, chars, cut, refAbove, html));
  } catch (err) {
    await sink.abort();
    throw err;
  } finally {
    if (!runEnded || !runAgents.has(runEnded)) void agent.close().catch(() => undefined);
  }
}
