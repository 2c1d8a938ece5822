/**
 * An OpenAI-compatible chat-completions client (Ollama, llama.cpp server,
 * vLLM, LM Studio, hosted APIs): `POST <baseUrl>/chat/completions` with
 * `{model, messages, temperature, stream: false}`, answered
 * `{choices: [{message: {content}}]}`.
 *
 * Bounds, every one of them held whatever the server does:
 * - each attempt has its own deadline (connect, headers and body), and all
 *   attempts together a budget (`budgetMs`) and an outer abort signal;
 * - the answer is streamed and cut at `maxResponseBytes` (the socket is
 *   destroyed; a body is never read whole first and measured after);
 * - 429 and 5xx are retried (at most `maxAttempts` in all) after the
 *   server's Retry-After (seconds or an HTTP date) or an exponential
 *   backoff, never past the budget; no redirect is followed (it would carry
 *   the key elsewhere); a compressed body is refused (we ask for identity).
 *
 * Security property: the key goes only into the Authorization header of a
 * request to `baseUrl`; every error names the endpoint's origin and an HTTP
 * status or error code, never the key, a header, the request or the body.
 *
 * undici is imported on the first request: nothing else loads it.
 */
import { redactSecrets } from '../redact/output-guard.js';

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface ChatEndpoint {
  baseUrl: string;
  /** The model id sent as "model". */
  name: string;
  /** Sent as `Authorization: Bearer <apiKey>` when set. */
  apiKey?: string | undefined;
  /** One attempt's deadline. */
  timeoutMs: number;
}

export interface ChatOptions {
  /** All attempts and waits together (default {@link DEFAULT_BUDGET_MS}). */
  budgetMs?: number;
  /** Largest answer body read (default {@link DEFAULT_MAX_RESPONSE_BYTES}). */
  maxResponseBytes?: number;
  /** Attempts in all, the first included (default 3). */
  maxAttempts?: number;
  signal?: AbortSignal | undefined;
  /** Tests only: the first backoff step (default 500 ms), doubled each retry. */
  backoffMs?: number;
}

export interface ChatAnswer {
  content: string;
  attempts: number;
  /** As the server reported it, when it did. */
  usage?: { promptTokens: number; completionTokens: number };
}

export const DEFAULT_BUDGET_MS = 120_000;
export const DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024;
/** The longest single wait between attempts, whatever Retry-After asks. */
const MAX_BACKOFF_MS = 30_000;

export type ModelErrorCode = 'model_timeout' | 'model_http' | 'model_too_large' | 'model_bad_answer' | 'model_unreachable' | 'model_aborted';

/** A failed model request: a closed code and a message naming the endpoint, never the key or the body. */
export class ModelError extends Error {
  readonly code: ModelErrorCode;
  readonly status: number | undefined;
  constructor(code: ModelErrorCode, message: string, status?: number) {
    super(redactSecrets(message));
    this.name = 'ModelError';
    this.code = code;
    this.status = status;
  }
}

/** `<base>/chat/completions`, keeping a path prefix of base (`/v1`, a proxy's `/openai/v1`). */
export function chatCompletionsUrl(baseUrl: string): URL {
  const url = new URL(baseUrl);
  if (!url.pathname.endsWith('/')) url.pathname += '/';
  return new URL('chat/completions', url);
}

/** Milliseconds a Retry-After header asks for (delta-seconds or an HTTP date), or undefined. */
export function retryAfterMs(header: string | string[] | undefined, now = Date.now()): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined || value.trim() === '') return undefined;
  if (/^\s*\d+(\.\d+)?\s*$/.test(value)) return Math.round(Number(value) * 1000);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** Sends the conversation and returns the first choice's text. */
export async function chatComplete(endpoint: ChatEndpoint, messages: readonly ChatMessage[], options: ChatOptions = {}): Promise<ChatAnswer> {
  const { request } = await import('undici');
  const url = chatCompletionsUrl(endpoint.baseUrl);
  const where = `the model at ${url.origin}`;
  const budgetEnd = Date.now() + (options.budgetMs ?? DEFAULT_BUDGET_MS);
  const maxAttempts = Math.max(1, options.maxAttempts ?? 3);
  const maxBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  const body = JSON.stringify({ model: endpoint.name, messages, temperature: 0, stream: false });
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json', 'accept-encoding': 'identity', 'user-agent': 'comis-repair' };
  if (endpoint.apiKey) headers.authorization = `Bearer ${endpoint.apiKey}`;

  for (let attempt = 1; ; attempt++) {
    const remaining = budgetEnd - Date.now();
    if (remaining <= 0) throw new ModelError('model_timeout', `${where} did not answer within the ${options.budgetMs ?? DEFAULT_BUDGET_MS} ms repair budget`);
    const attemptMs = Math.min(endpoint.timeoutMs, remaining);
    const guard = deadline(attemptMs, options.signal);
    let retryWait: number | undefined;
    try {
      let res: Awaited<ReturnType<typeof request>>;
      try {
        // undici 7's request() follows no redirect (that takes the redirect interceptor): a 3xx is an answer like any other.
        res = await request(url, { method: 'POST', headers, body, signal: guard.signal, headersTimeout: attemptMs, bodyTimeout: attemptMs });
      } catch (err) {
        throw failure(err, where, guard, attemptMs, options.signal);
      }
      if (res.statusCode === 429 || (res.statusCode >= 500 && res.statusCode <= 599)) {
        discard(res.body);
        const asked = retryAfterMs(res.headers['retry-after']);
        const wait = Math.min(MAX_BACKOFF_MS, asked ?? (options.backoffMs ?? 500) * 2 ** (attempt - 1));
        if (attempt >= maxAttempts || Date.now() + wait >= budgetEnd) {
          throw new ModelError('model_http', `${where} answered HTTP ${res.statusCode} (after ${attempt} attempt${attempt === 1 ? '' : 's'})`, res.statusCode);
        }
        retryWait = wait;
      } else if (res.statusCode < 200 || res.statusCode > 299) {
        discard(res.body);
        const hint = res.statusCode === 401 || res.statusCode === 403 ? ': check the key named by model.apiKeyEnv' : res.statusCode === 404 ? ': check model.baseUrl (it usually ends in /v1) and model.name' : '';
        throw new ModelError('model_http', `${where} answered HTTP ${res.statusCode}${hint}`, res.statusCode);
      } else {
        const encoding = String(res.headers['content-encoding'] ?? 'identity').toLowerCase();
        if (encoding !== 'identity' && encoding !== '') {
          discard(res.body);
          throw new ModelError('model_bad_answer', `${where} answered with content-encoding ${encoding.slice(0, 40)}, which comis did not ask for`);
        }
        const text = await readBounded(res.body as AsyncIterable<Buffer> & NodeJS.ReadableStream & { destroy: () => void }, maxBytes, where, guard, attemptMs, options.signal);
        return { ...parseAnswer(text, where), attempts: attempt };
      }
    } finally {
      guard.done();
    }
    await sleep(retryWait, options.signal, where);
  }
}

async function readBounded(body: AsyncIterable<Buffer> & NodeJS.ReadableStream & { destroy: () => void }, maxBytes: number, where: string, guard: Deadline, attemptMs: number, outer: AbortSignal | undefined): Promise<string> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  try {
    for await (const chunk of body) {
      bytes += chunk.length;
      if (bytes > maxBytes) {
        discard(body);
        throw new ModelError('model_too_large', `${where} answered more than ${maxBytes} bytes; comis stopped reading`);
      }
      chunks.push(chunk);
    }
  } catch (err) {
    if (err instanceof ModelError) throw err;
    throw failure(err, where, guard, attemptMs, outer);
  }
  return Buffer.concat(chunks, bytes).toString('utf8');
}

/** The first choice's text: `message.content` as a string or as text parts (some servers answer parts). */
function parseAnswer(text: string, where: string): Omit<ChatAnswer, 'attempts'> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new ModelError('model_bad_answer', `${where} answered a body that is not JSON`);
  }
  const choice = (json as { choices?: unknown })?.choices;
  const first = Array.isArray(choice) ? (choice[0] as { message?: { content?: unknown } } | undefined) : undefined;
  const content = first?.message?.content;
  let out: string | undefined;
  if (typeof content === 'string') out = content;
  else if (Array.isArray(content)) out = content.map((p) => (p && typeof p === 'object' && typeof (p as { text?: unknown }).text === 'string' ? (p as { text: string }).text : '')).join('');
  else if (content === null) out = '';
  if (out === undefined) throw new ModelError('model_bad_answer', `${where} answered JSON without choices[0].message.content (not a chat completion)`);
  const usage = (json as { usage?: { prompt_tokens?: unknown; completion_tokens?: unknown } }).usage;
  const answer: Omit<ChatAnswer, 'attempts'> = { content: out };
  if (usage && typeof usage.prompt_tokens === 'number' && typeof usage.completion_tokens === 'number') answer.usage = { promptTokens: usage.prompt_tokens, completionTokens: usage.completion_tokens };
  return answer;
}

interface Deadline {
  signal: AbortSignal;
  done: () => void;
  timedOut: () => boolean;
}

/** Aborts when either the deadline passes or `outer` aborts; `done()` releases the timer. */
function deadline(timeoutMs: number, outer: AbortSignal | undefined): Deadline {
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

function sleep(ms: number | undefined, signal: AbortSignal | undefined, where: string): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new ModelError('model_aborted', `the request to ${where} was aborted`));
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(new ModelError('model_aborted', `the request to ${where} was aborted`));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms ?? 0);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/**
 * Hangs up on a body comis will not read. undici's body emits an abort error when
 * destroyed: without a listener that error would be unhandled and end the comis process.
 */
function discard(body: NodeJS.ReadableStream & { destroy: () => void }): void {
  body.on('error', () => undefined);
  body.destroy();
}

function failure(err: unknown, where: string, guard: Deadline, attemptMs: number, outer: AbortSignal | undefined): ModelError {
  const code = (err as { code?: unknown }).code;
  // undici's own header/body timers are set to the same deadline and may fire first.
  if (guard.timedOut() || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') return new ModelError('model_timeout', `${where} did not answer within ${attemptMs} ms (model.timeoutMs)`);
  if (outer?.aborted) return new ModelError('model_aborted', `the request to ${where} was aborted`);
  // A connection error's code (ECONNREFUSED, ENOTFOUND…) says enough; its message might quote more.
  const label = typeof code === 'string' && /^[A-Z0-9_]{2,40}$/.test(code) ? code : 'connection failed';
  return new ModelError('model_unreachable', `cannot reach ${where} (${label})`);
}
