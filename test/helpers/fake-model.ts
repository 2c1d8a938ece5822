/**
 * A fake of a paid model API, on 127.0.0.1, speaking the real OpenAI
 * chat-completions wire protocol over a real socket (node `http`):
 * `POST /v1/chat/completions` with JSON `{model, messages, ...}` and
 * `Authorization: Bearer <key>` → `{id, object: "chat.completion", created,
 * model, choices: [{index, message: {role, content}, finish_reason}], usage}`;
 * its error shapes `{error: {message, type, param, code}}` for 401, 404, 429
 * (with Retry-After) and 5xx. A wrong key answers 401 quoting part of the
 * key, as the real API does (so a client that echoes an error body leaks).
 *
 * It records every request (method, path, headers, raw body). Each request
 * is answered by the next queued step, else by the default `answer`.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

import { afterEach } from 'vitest';

export interface ChatRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
  /** The parsed body, when it was JSON. */
  json?: { model?: string; messages?: { role: string; content: string }[]; [k: string]: unknown };
}

export type Step =
  | { kind: 'answer'; content: string | null }
  | { kind: 'error'; status: number; retryAfter?: string; message?: string }
  | { kind: 'slow'; afterMs: number; content: string }
  | { kind: 'huge'; bytes: number }
  | { kind: 'raw'; status: number; headers?: Record<string, string>; body: string };

export interface FakeModel {
  /** The API root to put in model.baseUrl (ends in /v1). */
  baseUrl: string;
  requests: ChatRequest[];
  /** Queue steps for the next requests, in order. */
  queue: (...steps: Step[]) => void;
  /** Bytes the `huge` steps managed to write before the client hung up. */
  hugeBytesWritten: () => number;
  close: () => Promise<void>;
}

const servers: Server[] = [];
afterEach(async () => {
  while (servers.length > 0) {
    const s = servers.pop()!;
    s.closeAllConnections();
    await new Promise<void>((r) => s.close(() => r()));
  }
});

/** The body of a real chat completion. */
export function completion(model: string, content: string | null): unknown {
  return {
    id: `chatcmpl-${Math.random().toString(36).slice(2, 12)}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    system_fingerprint: 'fp_fake',
    choices: [{ index: 0, message: { role: 'assistant', content, refusal: null }, logprobs: null, finish_reason: 'stop' }],
    usage: { prompt_tokens: 321, completion_tokens: 54, total_tokens: 375 },
  };
}

function errorBody(status: number, message?: string): unknown {
  const type = status === 429 ? 'requests' : status >= 500 ? 'server_error' : 'invalid_request_error';
  const code = status === 429 ? 'rate_limit_exceeded' : status === 401 ? 'invalid_api_key' : status === 404 ? 'model_not_found' : null;
  return { error: { message: message ?? `fake error ${status}`, type, param: null, code } };
}

/**
 * Starts the fake. `answer` gives the content of a default answer (from the
 * request); `key`, when set, is checked like the real API does.
 */
export async function startFakeModel(options: { answer?: (req: ChatRequest) => string | null; key?: string } = {}): Promise<FakeModel> {
  const requests: ChatRequest[] = [];
  const steps: Step[] = [];
  let hugeWritten = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const rec: ChatRequest = { method: req.method ?? '', path: new URL(req.url ?? '/', 'http://127.0.0.1').pathname, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      try {
        rec.json = JSON.parse(rec.body) as ChatRequest['json'];
      } catch {
        /* recorded as is */
      }
      requests.push(rec);
      const json = (status: number, body: unknown, headers: Record<string, string> = {}): void => {
        res.writeHead(status, { 'content-type': 'application/json', ...headers });
        res.end(JSON.stringify(body));
      };
      if (rec.method !== 'POST' || rec.path !== '/v1/chat/completions') return json(404, errorBody(404, `Invalid URL (${rec.method} ${rec.path})`));
      if (options.key !== undefined && req.headers.authorization !== `Bearer ${options.key}`) {
        const given = String(req.headers.authorization ?? '').replace(/^Bearer /, '');
        return json(401, errorBody(401, `Incorrect API key provided: ${given.slice(0, 6)}****${given.slice(-4)}. You can find your API key at https://platform.openai.com/account/api-keys.`));
      }
      const model = rec.json?.model ?? 'unknown';
      const step = steps.shift();
      if (!step) return json(200, completion(model, options.answer ? options.answer(rec) : ''));
      switch (step.kind) {
        case 'answer':
          return json(200, completion(model, step.content));
        case 'error':
          return json(step.status, errorBody(step.status, step.message), step.retryAfter === undefined ? {} : { 'retry-after': step.retryAfter });
        case 'slow': {
          const timer = setTimeout(() => json(200, completion(model, step.content)), step.afterMs);
          res.on('close', () => clearTimeout(timer));
          return;
        }
        case 'huge': {
          // A 10 MB answer, written as fast as the client reads it: the client must cut it.
          res.writeHead(200, { 'content-type': 'application/json' });
          const head = Buffer.from(`{"id":"chatcmpl-huge","object":"chat.completion","created":1,"model":"${model}","choices":[{"index":0,"message":{"role":"assistant","content":"`);
          res.write(head);
          hugeWritten += head.length;
          const block = Buffer.alloc(64 * 1024, 'a');
          let left = step.bytes;
          const pump = (): void => {
            while (left > 0 && !res.destroyed) {
              left -= block.length;
              hugeWritten += block.length;
              if (!res.write(block)) return void res.once('drain', pump);
            }
            if (!res.destroyed) res.end('"},"finish_reason":"stop"}]}');
          };
          res.on('error', () => undefined);
          pump();
          return;
        }
        case 'raw':
          res.writeHead(step.status, step.headers ?? {});
          return void res.end(step.body);
      }
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    queue: (...more) => void steps.push(...more),
    hugeBytesWritten: () => hugeWritten,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
