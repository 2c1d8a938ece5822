/**
 * The one HTTP POST of the HTTP channels (webhook, slack, telegram), with
 * undici. The endpoint is operator-trusted config (the script chooses no URL,
 * only the ids and text in the body), so it may be a private address; no
 * redirect is followed, the answer is bounded, and a 5xx answer, a timeout or
 * a transport failure (no answer at all) is retried with exponential backoff
 * and jitter up to maxAttempts; any other answer is final.
 *
 * Errors name the channel and the operation, never the URL (a Telegram URL
 * holds the bot token) and never the message text.
 */
import type { Agent } from 'undici';

import type { ChannelTarget, DeliverOptions } from './channel.js';
import { DeliveryError } from './channel.js';

/** Most bytes of an answer read (the status and a small JSON are all a channel needs). */
const MAX_ANSWER_BYTES = 64 * 1024;

let agent: Agent | undefined;
async function sharedAgent(): Promise<{ undici: typeof import('undici'); agent: Agent }> {
  const undici = await import('undici');
  agent ??= new undici.Agent({ pipelining: 1, allowH2: false, maxHeaderSize: 32 * 1024, connect: { timeout: 10_000 } });
  return { undici, agent };
}

export interface PostAnswer {
  status: number;
  body: string;
  json: unknown;
}

export function defaultBackoffMs(attempt: number): number {
  return Math.min(5_000, 250 * 2 ** (attempt - 1)) + Math.floor(Math.random() * 100);
}

/**
 * POSTs `body` to `url`; `headers(attempt)` is asked per attempt (a signature
 * carries its own timestamp). Resolves with the final answer of a non-5xx
 * status; throws DeliveryError when the attempts ran out.
 */
export async function postWithRetries(target: ChannelTarget, what: string, url: string, body: string, headers: () => Record<string, string>, options: DeliverOptions): Promise<PostAnswer> {
  const { undici, agent: dispatcher } = await sharedAgent();
  let last = '';
  for (let attempt = 1; attempt <= target.maxAttempts; attempt++) {
    if (attempt > 1) await new Promise((r) => setTimeout(r, (options.backoffMs ?? defaultBackoffMs)(attempt - 1)));
    options.onAttempt?.();
    const signal = AbortSignal.timeout(target.timeoutMs);
    try {
      const res = await undici.request(url, { method: 'POST', body, headers: headers(), dispatcher, signal, headersTimeout: target.timeoutMs, bodyTimeout: target.timeoutMs });
      const text = await readBounded(res.body);
      if (res.statusCode >= 500) {
        last = `HTTP ${res.statusCode}`;
        continue;
      }
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        json = undefined;
      }
      return { status: res.statusCode, body: text, json };
    } catch (err) {
      if (err instanceof DeliveryError) throw err;
      last =
        signal.aborted || (err as { name?: string }).name === 'TimeoutError' || /timeout/i.test((err as { code?: string }).code ?? '')
          ? `no answer within ${target.timeoutMs} ms`
          : `transport error (${(err as { code?: string }).code ?? 'connection failed'})`;
    }
  }
  throw new DeliveryError('channel_unavailable', `${what}: ${target.maxAttempts} attempt${target.maxAttempts === 1 ? '' : 's'} failed, the last with ${last}`);
}

async function readBounded(body: AsyncIterable<Buffer> & { destroy?: () => void }): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > MAX_ANSWER_BYTES) {
      body.destroy?.();
      break;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
