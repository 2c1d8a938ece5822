/**
 * The one HTTP exchange of a search, bounded: a total deadline (connect,
 * headers and body), the run's end, and the `web_search` source profile's
 * byte limit on the body, which is streamed and cut there (the socket is
 * destroyed; a body is never read whole first and measured after). No
 * redirect is followed: a provider that redirects is a setup problem, and
 * following it would carry the API key header to wherever it points.
 *
 * undici is imported on the first search only: no other command, and no run
 * that does not search, loads it.
 */
import { CapCallError } from '../../capsocket/protocol.js';
import { redactSecrets } from '../../redact/output-guard.js';
import type { SearchRequest } from './provider.js';

export interface BoundedFetchOptions {
  timeoutMs: number;
  maxBytes: number;
  /** Aborted when the run ends. */
  signal?: AbortSignal | undefined;
  /** The provider's name, for messages. */
  provider: string;
  statusHint?: ((status: number) => string | undefined) | undefined;
}

/** Aborts when either the deadline passes or `outer` aborts; `done()` releases the timer. */
function deadline(timeoutMs: number, outer: AbortSignal | undefined): { signal: AbortSignal; done: () => void; timedOut: () => boolean } {
  const controller = new AbortController();
  let fired = false;
  const timer = setTimeout(() => {
    fired = true;
    controller.abort();
  }, timeoutMs);
  const onOuter = (): void => controller.abort();
  if (outer?.aborted) controller.abort();
  else outer?.addEventListener('abort', onOuter, { once: true });
  return {
    signal: controller.signal,
    done: () => {
      clearTimeout(timer);
      outer?.removeEventListener('abort', onOuter);
    },
    timedOut: () => fired,
  };
}

/**
 * Sends the request and returns the parsed JSON body. Every failure is a
 * CapCallError that names the provider and what went wrong, never the key,
 * the request headers or the response body.
 */
export async function fetchBoundedJson(req: SearchRequest, options: BoundedFetchOptions): Promise<unknown> {
  const { request } = await import('undici');
  const guard = deadline(options.timeoutMs, options.signal);
  const where = `${options.provider} at ${req.url.origin}`;
  try {
    let res: Awaited<ReturnType<typeof request>>;
    try {
      res = await request(req.url, {
        method: req.method,
        headers: { ...req.headers, ...req.secretHeaders },
        body: req.body,
        signal: guard.signal,
        headersTimeout: options.timeoutMs,
        bodyTimeout: options.timeoutMs,
      });
    } catch (err) {
      throw failure(err, where, guard.timedOut(), options);
    }
    if (res.statusCode < 200 || res.statusCode > 299) {
      discard(res.body);
      const hint = options.statusHint?.(res.statusCode);
      throw new CapCallError('search_failed', `web_search: ${where} answered HTTP ${res.statusCode}${hint ? ` (${hint})` : ''}`);
    }
    const encoding = String(res.headers['content-encoding'] ?? 'identity').toLowerCase();
    if (encoding !== 'identity' && encoding !== '') {
      discard(res.body);
      throw new CapCallError('search_failed', `web_search: ${where} answered with content-encoding ${encoding.slice(0, 40)}, which comis did not ask for`);
    }
    const chunks: Buffer[] = [];
    let bytes = 0;
    try {
      for await (const chunk of res.body as AsyncIterable<Buffer>) {
        bytes += chunk.length;
        if (bytes > options.maxBytes) {
          discard(res.body);
          throw new CapCallError('response_too_large', `web_search: ${where} answered more than ${options.maxBytes} bytes (the web_search source profile's maxResponseBytes); ask for fewer results`);
        }
        chunks.push(chunk);
      }
    } catch (err) {
      if (err instanceof CapCallError) throw err;
      throw failure(err, where, guard.timedOut(), options);
    }
    try {
      return JSON.parse(Buffer.concat(chunks, bytes).toString('utf8')) as unknown;
    } catch {
      throw new CapCallError('search_failed', `web_search: ${where} answered a body that is not JSON`);
    }
  } finally {
    guard.done();
  }
}

/**
 * Hangs up on a body comis will not read. undici's body emits an abort error when
 * destroyed: without a listener that error would be unhandled and end the comis process.
 */
function discard(body: NodeJS.ReadableStream & { destroy: () => void }): void {
  body.on('error', () => undefined);
  body.destroy();
}

function failure(err: unknown, where: string, timedOut: boolean, options: BoundedFetchOptions): CapCallError {
  if (timedOut) return new CapCallError('search_timeout', `web_search: ${where} did not answer within ${options.timeoutMs} ms (web.search.timeoutMs)`);
  if (options.signal?.aborted) return new CapCallError('aborted', 'web_search: the run ended');
  // A connection error's code (ECONNREFUSED, ENOTFOUND…) says enough; its message might quote more.
  const code = (err as { code?: unknown }).code;
  const label = typeof code === 'string' && /^[A-Z0-9_]{2,40}$/.test(code) ? code : 'connection failed';
  return new CapCallError('search_failed', redactSecrets(`web_search: cannot reach ${where} (${label})`));
}
