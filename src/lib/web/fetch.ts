/**
 * One guarded GET, redirects included. Every hop goes through the whole
 * guard again: URL parse (scheme http/https only), the operator's host
 * policy, and the connect-time address check of the guarded agent. At most
 * {@link MAX_REDIRECTS} hops are followed; `followRedirects: false` refuses
 * every 3xx like the upstream ("Redirects are blocked for security.").
 *
 * The body is streamed, decoded (gzip, deflate, brotli) and cut at
 * `maxResponseBytes` of DECODED data, so a compression bomb costs at most the
 * limit; each decoded chunk goes to the caller's sink as it arrives (web_fetch
 * writes a data body into its ResultRef while the rest is still on the wire).
 * One total deadline covers every hop and the whole body, so a slow-drip
 * server cannot hold a call past it.
 */
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { finished, type Readable, type Transform } from 'node:stream';

import type { Agent } from 'undici';

import { CapCallError } from '../capsocket/protocol.js';
import { GuardRefusal } from './guarded-agent.js';
import { hostMatches, parseTarget, type ParsedTarget } from '../net/ssrf.js';

export const MAX_REDIRECTS = 5;

const ignore = (): void => undefined;

export interface HostPolicy {
  /** Non-empty: only these hosts (exact or `*.suffix`). */
  allowHosts: readonly string[];
  /** Never these hosts; wins over allowHosts. */
  denyHosts: readonly string[];
}

export interface FetchLimits {
  followRedirects: boolean;
  timeoutMs: number;
  maxResponseBytes: number;
}

export interface FetchedBody {
  url: string;
  finalUrl: string;
  status: number;
  contentType: string;
  /** Decoded body bytes handed to the sink (at most maxResponseBytes). */
  bytes: number;
  /** True when the body was cut at maxResponseBytes. */
  truncated: boolean;
}

/**
 * Called once the final (non-redirect) response's headers are in, with its
 * Content-Type: returns where each decoded chunk goes, or throws (a tool
 * error) to refuse the body before it is read. The chunk function may throw
 * too: the body is then dropped and the error is the call's.
 */
export type BodySink = (contentType: string) => (chunk: Buffer) => void;

/** A refusal by the operator's host policy: the tool reports it, and dispatch audits it as a deny. */
export class HostDeniedError extends CapCallError {
  readonly auditReason = 'host_denied' as const;
  constructor(message: string) {
    super('host_denied', message);
  }
}

/** Why a host is refused by allowHosts/denyHosts, or undefined when it passes. */
export function hostPolicyRefusal(policy: HostPolicy, hostname: string): string | undefined {
  const deny = policy.denyHosts.find((p) => hostMatches(p, hostname));
  if (deny) return `${hostname} is denied by web.fetch.denyHosts ("${deny}")`;
  if (policy.allowHosts.length > 0 && !policy.allowHosts.some((p) => hostMatches(p, hostname))) {
    return `${hostname} is not in web.fetch.allowHosts`;
  }
  return undefined;
}

function checkTarget(raw: string, policy: HostPolicy, base?: URL): ParsedTarget {
  const target = parseTarget(raw, base);
  if ('refused' in target) throw new CapCallError(target.code, `web_fetch: ${target.message}${base ? ' (redirect target)' : ''}`);
  const why = hostPolicyRefusal(policy, target.hostname);
  if (why) throw new HostDeniedError(`web_fetch: ${why}${base ? ' (redirect target)' : ''}`);
  return target;
}

/** Maps what undici and the guard throw to the script-facing error. */
function toToolError(err: unknown, timedOut: boolean, limits: FetchLimits): Error {
  if (err instanceof CapCallError) return err;
  const e = err as { code?: string; name?: string; message?: string; cause?: unknown };
  if (err instanceof GuardRefusal) return new CapCallError(err.code, `web_fetch: ${err.message}`);
  if (e.cause instanceof GuardRefusal) return new CapCallError(e.cause.code, `web_fetch: ${e.cause.message}`);
  if (timedOut) return new CapCallError('timeout', `web_fetch: no complete response within ${limits.timeoutMs} ms (web.fetch.timeoutMs)`);
  if (e.code === 'UND_ERR_HEADERS_OVERFLOW') return new CapCallError('headers_too_large', 'web_fetch: the response headers are too large; refused');
  if (e.code === 'Z_DATA_ERROR' || e.code === 'Z_BUF_ERROR' || e.code === 'ERR_BROTLI_DECOMPRESSION_FAILED' || e.code === 'ERR__ERROR_FORMAT_PADDING_1') {
    return new CapCallError('bad_encoding', 'web_fetch: the response body does not decode with its Content-Encoding');
  }
  return new CapCallError('fetch_failed', `web_fetch: the request failed (${e.code ?? e.name ?? 'error'})`);
}

function decoderFor(encoding: string): Transform[] | undefined {
  const steps: Transform[] = [];
  // Content-Encoding lists codings in the order applied: undo them in reverse.
  const codings = encoding
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter((s) => s !== '' && s !== 'identity');
  if (codings.length > 2) return undefined;
  for (const c of codings.reverse()) {
    if (c === 'gzip' || c === 'x-gzip') steps.push(createGunzip());
    else if (c === 'deflate') steps.push(createInflate());
    else if (c === 'br') steps.push(createBrotliDecompress());
    else return undefined;
  }
  return steps;
}

/** Hands at most `limit` decoded bytes of `raw` to `onChunk`, then stops reading and destroys the streams. */
async function readBounded(raw: Readable, encoding: string, limit: number, onChunk: (chunk: Buffer) => void): Promise<{ bytes: number; truncated: boolean }> {
  // Streams destroyed after we stop reading still emit their abort: that is expected, not an error.
  raw.on('error', ignore);
  const steps = decoderFor(encoding);
  if (!steps) {
    raw.destroy();
    throw new CapCallError('bad_encoding', `web_fetch: unsupported Content-Encoding "${encoding.slice(0, 60)}"`);
  }
  let stream: Readable = raw;
  for (const s of steps) {
    s.on('error', ignore);
    stream.on('error', (err) => s.destroy(err));
    stream = stream.pipe(s);
  }
  let size = 0;
  let truncated = false;
  try {
    // 'data' events rather than an async iterator: each chunk reaches the sink as the parser pushes
    // it, without the iterator's read(), promise and microtask per chunk (~0.1 ms per MB here).
    await new Promise<void>((resolve, reject) => {
      const settle = (err?: Error | null): void => {
        stopWatching();
        stream.removeListener('data', onData);
        if (err) reject(err);
        else resolve();
      };
      // Ends as the iterator did: at 'end', or with the stream's error, or a premature close.
      const stopWatching = finished(stream, settle);
      const onData = (chunk: Buffer): void => {
        try {
          if (size + chunk.length > limit) {
            // Over the limit: keep what fits and stop reading (a bomb is never decoded further).
            if (limit > size) onChunk(chunk.subarray(0, limit - size));
            size = limit;
            truncated = true;
            settle();
            return;
          }
          onChunk(chunk);
          size += chunk.length;
        } catch (err) {
          settle(err as Error);
        }
      };
      stream.on('data', onData);
    });
  } finally {
    raw.destroy();
    for (const s of steps) s.destroy();
  }
  return { bytes: size, truncated };
}

/**
 * GET `rawUrl` through `agent` (a guarded agent), the body into `sink`.
 * Throws CapCallError with a stable code for every refusal; never reports a
 * partial body as whole.
 */
export async function guardedGet(agent: Agent, undici: typeof import('undici'), rawUrl: string, policy: HostPolicy, limits: FetchLimits, sink: BodySink, runEnded?: AbortSignal): Promise<FetchedBody> {
  // One controller for the deadline and the run's end (AbortSignal.timeout and .any cost a
  // timer wrapper and a dependent-signal set per call).
  const abort = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    abort.abort(new DOMException('web_fetch deadline', 'TimeoutError'));
  }, limits.timeoutMs);
  timer.unref();
  const onRunEnded = (): void => abort.abort(runEnded?.reason);
  if (runEnded?.aborted) onRunEnded();
  else runEnded?.addEventListener('abort', onRunEnded, { once: true });
  const signal = abort.signal;
  let target = checkTarget(rawUrl, policy);
  const first = target.url.href;
  try {
    for (let hop = 0; ; hop++) {
      const res = await undici.request(target.url, {
        dispatcher: agent,
        method: 'GET',
        signal,
        headers: { accept: 'text/html,application/xhtml+xml,application/json,text/csv,text/plain;q=0.9,*/*;q=0.5', 'accept-encoding': 'gzip, deflate, br', 'user-agent': 'comis-web-fetch/1' },
        headersTimeout: limits.timeoutMs,
        bodyTimeout: limits.timeoutMs,
      });
      if (res.statusCode >= 300 && res.statusCode < 400 && res.statusCode !== 304) {
        res.body.on('error', ignore);
        res.body.destroy();
        const location = res.headers.location;
        if (!limits.followRedirects) throw new CapCallError('redirect_refused', `web_fetch: the server answered ${res.statusCode}; redirects are blocked for security (web.fetch.followRedirects: false)`);
        if (typeof location !== 'string' || location === '') throw new CapCallError('fetch_failed', `web_fetch: a ${res.statusCode} without a Location header`);
        if (hop >= MAX_REDIRECTS) throw new CapCallError('too_many_redirects', `web_fetch: more than ${MAX_REDIRECTS} redirects; refused`);
        // The whole guard again: scheme, host policy here, the address check when the agent dials.
        target = checkTarget(location, policy, target.url);
        continue;
      }
      const ct = res.headers['content-type'];
      const contentType = (Array.isArray(ct) ? ct[0] : ct) ?? '';
      const ce = res.headers['content-encoding'];
      const encoding = (Array.isArray(ce) ? ce.join(',') : ce) ?? '';
      let onChunk: (chunk: Buffer) => void;
      try {
        onChunk = sink(contentType);
      } catch (err) {
        // Refused on its headers: the body is never read.
        res.body.on('error', ignore);
        res.body.destroy();
        throw err;
      }
      const { bytes, truncated } = await readBounded(res.body, encoding, limits.maxResponseBytes, onChunk);
      return { url: first, finalUrl: target.url.href, status: res.statusCode, contentType, bytes, truncated };
    }
  } catch (err) {
    throw toToolError(err, timedOut, limits);
  } finally {
    clearTimeout(timer);
    runEnded?.removeEventListener('abort', onRunEnded);
  }
}
