/**
 * The chat-completions client against a fake on 127.0.0.1 that speaks the
 * real OpenAI wire shape: request shape, retries on 429 (Retry-After) and
 * 5xx within the budget, the per-attempt deadline, the answer's byte bound,
 * answers that are not chat completions, and errors that never carry the key.
 */
import { describe, expect, it } from 'vitest';

import { chatComplete, chatCompletionsUrl, ModelError, retryAfterMs } from '../../src/lib/model/client.js';
import { registerSecret, unregisterSecret } from '../../src/lib/redact/output-guard.js';
import { startFakeModel } from '../helpers/fake-model.js';

const msgs = [{ role: 'user' as const, content: 'fix it' }];

async function failureOf(p: Promise<unknown>): Promise<ModelError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(ModelError);
    return err as ModelError;
  }
  throw new Error('expected a ModelError');
}

describe('chatComplete', () => {
  it('POSTs <baseUrl>/chat/completions with model, messages and the bearer key, and returns the first choice', async () => {
    const fake = await startFakeModel({ key: 'sk-test-key-123456', answer: () => 'print(1)' });
    const answer = await chatComplete({ baseUrl: fake.baseUrl, name: 'qwen2.5-coder:7b', apiKey: 'sk-test-key-123456', timeoutMs: 5000 }, msgs);
    expect(answer).toEqual({ content: 'print(1)', attempts: 1, usage: { promptTokens: 321, completionTokens: 54 } });
    expect(fake.requests).toHaveLength(1);
    const [req] = fake.requests;
    expect(req).toMatchObject({ method: 'POST', path: '/v1/chat/completions' });
    expect(req!.headers.authorization).toBe('Bearer sk-test-key-123456');
    expect(req!.headers['content-type']).toBe('application/json');
    expect(req!.json).toEqual({ model: 'qwen2.5-coder:7b', messages: msgs, temperature: 0, stream: false });
  });

  it('without a key sends no Authorization header', async () => {
    const fake = await startFakeModel({ answer: () => 'x' });
    await chatComplete({ baseUrl: fake.baseUrl, name: 'm', timeoutMs: 5000 }, msgs);
    expect(fake.requests[0]!.headers.authorization).toBeUndefined();
  });

  it('keeps a path prefix of baseUrl', () => {
    expect(chatCompletionsUrl('http://h:1/openai/v1').href).toBe('http://h:1/openai/v1/chat/completions');
    expect(chatCompletionsUrl('http://h:1/v1/').href).toBe('http://h:1/v1/chat/completions');
  });

  it('a 429 is retried after its Retry-After (not the backoff), then answers', async () => {
    const fake = await startFakeModel({ answer: () => 'ok' });
    fake.queue({ kind: 'error', status: 429, retryAfter: '0' });
    // The backoff alone would wait 60 s, past the 5 s budget: only Retry-After makes the retry possible.
    const answer = await chatComplete({ baseUrl: fake.baseUrl, name: 'm', timeoutMs: 5000 }, msgs, { budgetMs: 5000, backoffMs: 60_000 });
    expect(answer).toMatchObject({ content: 'ok', attempts: 2 });
    expect(fake.requests).toHaveLength(2);
  });

  it('a Retry-After past the budget fails at once, naming the status, without waiting', async () => {
    const fake = await startFakeModel({ answer: () => 'ok' });
    fake.queue({ kind: 'error', status: 429, retryAfter: '3600' });
    const err = await failureOf(chatComplete({ baseUrl: fake.baseUrl, name: 'm', timeoutMs: 5000 }, msgs, { budgetMs: 10_000 }));
    expect(err).toMatchObject({ code: 'model_http', status: 429 });
    expect(fake.requests).toHaveLength(1);
  });

  it('5xx is retried with backoff, at most maxAttempts in all', async () => {
    const fake = await startFakeModel({ answer: () => 'ok' });
    fake.queue({ kind: 'error', status: 503 }, { kind: 'error', status: 500 });
    expect(await chatComplete({ baseUrl: fake.baseUrl, name: 'm', timeoutMs: 5000 }, msgs, { backoffMs: 10 })).toMatchObject({ content: 'ok', attempts: 3 });
    fake.queue({ kind: 'error', status: 502 }, { kind: 'error', status: 502 }, { kind: 'error', status: 502 }, { kind: 'answer', content: 'never' });
    const err = await failureOf(chatComplete({ baseUrl: fake.baseUrl, name: 'm', timeoutMs: 5000 }, msgs, { backoffMs: 10 }));
    expect(err).toMatchObject({ code: 'model_http', status: 502 });
    expect(err.message).toContain('after 3 attempts');
    expect(fake.requests).toHaveLength(6);
  });

  it('a 4xx other than 429 is not retried', async () => {
    const fake = await startFakeModel({ answer: () => 'ok' });
    fake.queue({ kind: 'error', status: 400 });
    expect(await failureOf(chatComplete({ baseUrl: fake.baseUrl, name: 'm', timeoutMs: 5000 }, msgs, { backoffMs: 10 }))).toMatchObject({ code: 'model_http', status: 400 });
    expect(fake.requests).toHaveLength(1);
  });

  it('timeoutMs bounds a slow answer (model_timeout)', async () => {
    const fake = await startFakeModel();
    fake.queue({ kind: 'slow', afterMs: 30_000, content: 'late' });
    const err = await failureOf(chatComplete({ baseUrl: fake.baseUrl, name: 'm', timeoutMs: 1000 }, msgs));
    expect(err.code).toBe('model_timeout');
    expect(err.message).toContain('model.timeoutMs');
  });

  it('the budget bounds all attempts together', async () => {
    const fake = await startFakeModel();
    fake.queue({ kind: 'slow', afterMs: 30_000, content: 'late' });
    expect((await failureOf(chatComplete({ baseUrl: fake.baseUrl, name: 'm', timeoutMs: 60_000 }, msgs, { budgetMs: 800 }))).code).toBe('model_timeout');
  });

  it('a 10 MB answer is cut at maxResponseBytes (the client hangs up; it never reads it whole)', async () => {
    const fake = await startFakeModel();
    fake.queue({ kind: 'huge', bytes: 10 * 1024 * 1024 });
    const err = await failureOf(chatComplete({ baseUrl: fake.baseUrl, name: 'm', timeoutMs: 10_000 }, msgs, { maxResponseBytes: 1024 * 1024 }));
    expect(err.code).toBe('model_too_large');
    // The server could not write all of it: the client closed the socket.
    await new Promise((r) => setTimeout(r, 200));
    expect(fake.hugeBytesWritten()).toBeLessThan(10 * 1024 * 1024);
  });

  it('an answer that is not a chat completion, or not JSON, is model_bad_answer; content parts are joined; null content is empty', async () => {
    const fake = await startFakeModel();
    fake.queue(
      { kind: 'raw', status: 200, headers: { 'content-type': 'application/json' }, body: '{"data": []}' },
      { kind: 'raw', status: 200, headers: { 'content-type': 'text/html' }, body: '<html>gateway</html>' },
      {
        kind: 'raw',
        status: 200,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          choices: [
            {
              message: {
                content: [
                  { type: 'text', text: 'a' },
                  { type: 'text', text: 'b' },
                ],
              },
            },
          ],
        }),
      },
      { kind: 'answer', content: null },
    );
    const ep = { baseUrl: fake.baseUrl, name: 'm', timeoutMs: 5000 };
    expect((await failureOf(chatComplete(ep, msgs))).code).toBe('model_bad_answer');
    expect((await failureOf(chatComplete(ep, msgs))).code).toBe('model_bad_answer');
    expect((await chatComplete(ep, msgs)).content).toBe('ab');
    expect((await chatComplete(ep, msgs)).content).toBe('');
  });

  it('a refused key: the error names the status and the config key, never the key or the error body', async () => {
    const key = 'sk-wrong-key-CANARY-0451';
    registerSecret(key);
    try {
      const fake = await startFakeModel({ key: 'sk-right-key-000000' });
      const err = await failureOf(chatComplete({ baseUrl: fake.baseUrl, name: 'm', apiKey: key, timeoutMs: 5000 }, msgs));
      expect(err).toMatchObject({ code: 'model_http', status: 401 });
      expect(err.message).toContain('model.apiKeyEnv');
      expect(err.message).not.toContain(key);
      expect(err.message).not.toContain('0451');
      expect(err.message).not.toContain('Incorrect API key');
    } finally {
      unregisterSecret(key);
    }
  });

  it('nothing listening: model_unreachable with the code only', async () => {
    const fake = await startFakeModel();
    await fake.close();
    expect(await failureOf(chatComplete({ baseUrl: fake.baseUrl, name: 'm', timeoutMs: 2000 }, msgs))).toMatchObject({ code: 'model_unreachable', message: expect.stringContaining('ECONNREFUSED') });
  });

  it('an outer abort stops the request', async () => {
    const fake = await startFakeModel();
    fake.queue({ kind: 'slow', afterMs: 30_000, content: 'late' });
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 100);
    expect((await failureOf(chatComplete({ baseUrl: fake.baseUrl, name: 'm', timeoutMs: 60_000 }, msgs, { signal: ac.signal }))).code).toBe('model_aborted');
  });
});

describe('retryAfterMs', () => {
  it('reads delta-seconds and HTTP dates', () => {
    expect(retryAfterMs('2')).toBe(2000);
    expect(retryAfterMs('0.5')).toBe(500);
    expect(retryAfterMs(new Date(10_000).toUTCString(), 4000)).toBe(6000);
    expect(retryAfterMs('soon')).toBeUndefined();
    expect(retryAfterMs(undefined)).toBeUndefined();
  });
});
