/**
 * The outward channels against real parts: a real file (0600, fsync'd JSONL,
 * deduped on redelivery), and real HTTP servers on 127.0.0.1 speaking the
 * webhook contract (HMAC over timestamp+body, Idempotency-Key, retries on 5xx
 * and timeouts only), the Telegram Bot API and the Slack Web API.
 */
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { registerSecret, redactSecrets } from '../../src/lib/redact/output-guard.js';
import { deliver, DeliveryError, resolveChannel, type ChannelTarget, type Delivery } from '../../src/lib/tools/message/channel.js';
import { startFakeSlack, startFakeTelegram, startWebhookReceiver } from '../helpers/message-fakes.js';
import { tempDir } from '../helpers/temp.js';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

const msg = (over: Partial<Delivery> = {}): Delivery => ({ action: 'send', operationId: 'op-1', agentId: 'default', runId: 'r-1', channelId: 'chat123', createdAt: 1_700_000_000_000, text: 'Report total: 42', ...over });
const fast = { backoffMs: () => 10 };

describe('file channel', () => {
  it('zero-config: $COMIS_HOME/outbox/<agent>.jsonl, 0600 in a 0700 directory, one JSON line per message; a redelivery of the same key appends nothing', async () => {
    const home = tempDir();
    const target = resolveChannel('file', undefined, home, 'default')!;
    expect(target.path).toBe(join(home, 'outbox', 'default.jsonl'));
    expect(await deliver(target, msg())).toEqual({ messageId: 'op-1' });
    await deliver(target, msg({ operationId: 'op-2', text: 'line\nbreak {"operationId":"op-3",' }));
    expect(statSync(target.path!).mode & 0o777).toBe(0o600);
    expect(statSync(join(home, 'outbox')).mode & 0o777).toBe(0o700);
    // Redelivery (a sweep after a crash during delivery): found in the file, not appended again.
    await deliver(target, msg({ operationId: 'op-2' }), { redelivery: true });
    // A text that quotes another key does not fool the dedupe.
    await deliver(target, msg({ operationId: 'op-3' }), { redelivery: true });
    const lines = readFileSync(target.path!, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => l.operationId)).toEqual(['op-1', 'op-2', 'op-3']);
    expect(lines[0]).toEqual({ operationId: 'op-1', at: '2023-11-14T22:13:20.000Z', agentId: 'default', runId: 'r-1', action: 'send', channelId: 'chat123', text: 'Report total: 42' });
    // Control: without the redelivery flag the same key is appended (the outbox decides when to look).
    await deliver(target, msg({ operationId: 'op-1' }));
    expect(readFileSync(target.path!, 'utf8').trim().split('\n')).toHaveLength(4);
  });

  it('a line torn by a crash is closed before the next one, so every later line parses', async () => {
    const home = tempDir();
    const path = join(home, 'out.jsonl');
    writeFileSync(path, '{"operationId":"torn","te', { mode: 0o600 });
    const target = resolveChannel('mine', { mine: { type: 'file', path } }, home, 'a')!;
    await deliver(target, msg());
    const lines = readFileSync(path, 'utf8').split('\n');
    expect(JSON.parse(lines[1]!).operationId).toBe('op-1');
  });
});

describe('webhook channel', () => {
  it('POSTs the documented body with Idempotency-Key and an HMAC-SHA256 signature over timestamp.body; the answer message_id is the id', async () => {
    const recv = await startWebhookReceiver({ secret: 'whsec-test-0123456789' });
    closers.push(recv.close);
    process.env.MSG_TEST_WH_SECRET = 'whsec-test-0123456789';
    const target = resolveChannel('hook', { hook: { type: 'webhook', url: recv.url, secretEnv: 'MSG_TEST_WH_SECRET', timeoutMs: 2000, maxAttempts: 3 } }, tempDir(), 'a')!;
    expect(await deliver(target, msg())).toEqual({ messageId: 'wh-1' });
    expect(recv.requests).toHaveLength(1);
    expect(recv.requests[0]).toMatchObject({ key: 'op-1', signatureOk: true });
    expect(recv.requests[0]!.body).toEqual({ operationId: 'op-1', agentId: 'default', runId: 'r-1', action: 'send', channelId: 'chat123', createdAt: 1_700_000_000_000, text: 'Report total: 42' });
    // Control: a receiver with another secret sees a bad signature (and refuses: a 4xx is final, not retried).
    const other = await startWebhookReceiver({ secret: 'another-secret-123' });
    closers.push(other.close);
    const bad = { ...target, url: other.url };
    await expect(deliver(bad, msg(), fast)).rejects.toMatchObject({ code: 'channel_refused' });
    expect(other.requests).toHaveLength(1);
    expect(other.requests[0]!.signatureOk).toBe(false);
  });

  it('retries a 5xx and a timeout with the same key, never a 4xx; gives up after maxAttempts', async () => {
    const flaky = await startWebhookReceiver({ failRate: 1 });
    closers.push(flaky.close);
    const t = (url: string, over: Partial<ChannelTarget> = {}): ChannelTarget => ({ name: 'hook', type: 'webhook', url, timeoutMs: 300, maxAttempts: 3, ...over });
    await expect(deliver(t(flaky.url), msg(), fast)).rejects.toThrow(/3 attempts failed, the last with HTTP 500/);
    expect(flaky.requests.map((r) => r.key)).toEqual(['op-1', 'op-1', 'op-1']);
    const hanging = await startWebhookReceiver({ hangRate: 1 });
    closers.push(hanging.close);
    await expect(deliver(t(hanging.url, { maxAttempts: 2 }), msg(), fast)).rejects.toThrow(/no answer within 300 ms/);
    expect(hanging.requests).toHaveLength(2);
    const refusing = await startWebhookReceiver({ status: 422 });
    closers.push(refusing.close);
    await expect(deliver(t(refusing.url), msg(), fast)).rejects.toThrow(/answered HTTP 422/);
    expect(refusing.requests).toHaveLength(1);
  });
});

describe('telegram channel', () => {
  const token = '123456:TEST-telegram-token-abcdef';
  it('sendMessage, a reply with reply_parameters and setMessageReaction, on the Bot API wire', async () => {
    const tg = await startFakeTelegram(token);
    closers.push(tg.close);
    process.env.MSG_TEST_TG = token;
    const target = resolveChannel('telegram', { telegram: { type: 'telegram', tokenEnv: 'MSG_TEST_TG', baseUrl: tg.baseUrl, timeoutMs: 2000, maxAttempts: 2 } }, tempDir(), 'a')!;
    expect(await deliver(target, msg())).toEqual({ messageId: '100' });
    expect(await deliver(target, msg({ action: 'reply', messageId: '100', text: 'and more' }))).toEqual({ messageId: '101' });
    expect(await deliver(target, msg({ action: 'react', messageId: '100', emoji: '👍', text: undefined }))).toEqual({ messageId: '100' });
    expect(tg.calls).toEqual([
      { method: 'sendMessage', body: { chat_id: 'chat123', text: 'Report total: 42' } },
      { method: 'sendMessage', body: { chat_id: 'chat123', text: 'and more', reply_parameters: { message_id: 100 } } },
      { method: 'setMessageReaction', body: { chat_id: 'chat123', message_id: 100, reaction: [{ type: 'emoji', emoji: '👍' }] } },
    ]);
    await expect(deliver(target, msg({ action: 'reply', messageId: 'abc' }))).rejects.toMatchObject({ code: 'invalid_message_id' });
  });

  it('a refusal names the method and the reason, never the token (which is in the URL path)', async () => {
    const tg = await startFakeTelegram('999:the-real-token-which-differs');
    closers.push(tg.close);
    process.env.MSG_TEST_TG2 = token;
    registerSecret(token);
    const target = resolveChannel('tg', { tg: { type: 'telegram', tokenEnv: 'MSG_TEST_TG2', baseUrl: tg.baseUrl, timeoutMs: 2000, maxAttempts: 1 } }, tempDir(), 'a')!;
    const err = (await deliver(target, msg()).catch((e: unknown) => e)) as DeliveryError;
    expect(err.message).toBe('telegram channel "tg": sendMessage refused: Unauthorized');
    expect(err.message).not.toContain(token);
    // The guard knows the token: anything that formats it is redacted.
    expect(redactSecrets(`x ${token} y`)).toBe('x [REDACTED] y');
    delete process.env.MSG_TEST_TG3;
    const missing = resolveChannel('tg', { tg: { type: 'telegram', tokenEnv: 'MSG_TEST_TG3', baseUrl: tg.baseUrl, timeoutMs: 2000, maxAttempts: 1 } }, tempDir(), 'a')!;
    await expect(deliver(missing, msg())).rejects.toThrow('telegram channel "tg": the environment variable MSG_TEST_TG3 is not set');
  });
});

describe('slack channel', () => {
  const token = 'xoxb-test-slack-token-0000';
  it('chat.postMessage (ts is the id), a threaded reply, reactions.add; an incoming webhook sends only', async () => {
    const slack = await startFakeSlack(token);
    closers.push(slack.close);
    process.env.MSG_TEST_SLACK = token;
    process.env.MSG_TEST_SLACK_HOOK = slack.webhookUrl;
    const target = resolveChannel('slack', { slack: { type: 'slack', tokenEnv: 'MSG_TEST_SLACK', baseUrl: slack.baseUrl, timeoutMs: 2000, maxAttempts: 2 } }, tempDir(), 'a')!;
    const sent = await deliver(target, msg({ channelId: 'C0123' }));
    expect(sent.messageId).toBe('1712345678.000100');
    await deliver(target, msg({ action: 'reply', channelId: 'C0123', messageId: sent.messageId, text: 'thread' }));
    await deliver(target, msg({ action: 'react', channelId: 'C0123', messageId: sent.messageId, emoji: ':thumbsup:', text: undefined }));
    expect(slack.calls).toEqual([
      { path: '/api/chat.postMessage', auth: `Bearer ${token}`, body: { channel: 'C0123', text: 'Report total: 42' } },
      { path: '/api/chat.postMessage', auth: `Bearer ${token}`, body: { channel: 'C0123', text: 'thread', thread_ts: '1712345678.000100' } },
      { path: '/api/reactions.add', auth: `Bearer ${token}`, body: { channel: 'C0123', timestamp: '1712345678.000100', name: 'thumbsup' } },
    ]);
    const hook = resolveChannel('hook', { hook: { type: 'slack', webhookUrlEnv: 'MSG_TEST_SLACK_HOOK', timeoutMs: 2000, maxAttempts: 1 } }, tempDir(), 'a')!;
    expect(await deliver(hook, msg())).toEqual({ messageId: 'op-1' });
    expect(slack.calls[3]).toEqual({ path: '/services/T000/B000/XXXX', auth: undefined, body: { text: 'Report total: 42' } });
    await expect(deliver(hook, msg({ action: 'react', messageId: '1', emoji: 'x' }))).rejects.toMatchObject({ code: 'channel_unsupported' });
    // Slack's HTTP-200 refusal is a failure.
    process.env.MSG_TEST_SLACK_BAD = 'xoxb-wrong-token-000000';
    const wrong = { ...target, tokenEnv: 'MSG_TEST_SLACK_BAD' };
    await expect(deliver(wrong, msg())).rejects.toThrow('slack channel "slack": chat.postMessage refused: invalid_auth');
  });
});
