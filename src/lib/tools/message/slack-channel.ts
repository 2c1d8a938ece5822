/**
 * The `slack` channel, on Slack's real wire:
 * - with `tokenEnv` (a bot token): `POST <baseUrl>/api/chat.postMessage`
 *   `{channel, text}` (a reply adds `thread_ts`), answered
 *   `{"ok":true,"channel":"C…","ts":"1712345678.000100"}`: the ts is the
 *   message id; a reaction is `POST /api/reactions.add`
 *   `{channel, timestamp, name}`. `Authorization: Bearer <token>`.
 *   Slack answers HTTP 200 with `{"ok":false,"error":"…"}` for refusals.
 * - with only `webhookUrlEnv` (an incoming webhook, bound to one channel):
 *   `POST <webhook URL>` `{text}`, answered `ok`; replies and reactions
 *   need the token.
 */
import type { ChannelTarget, DeliverOptions, Delivery } from './channel.js';
import { DeliveryError, secretFromEnv } from './channel.js';
import { postWithRetries } from './http.js';

export async function deliverToSlack(target: ChannelTarget, delivery: Delivery, options: DeliverOptions): Promise<{ messageId: string }> {
  const what = `slack channel "${target.name}"`;
  if (!target.tokenEnv) {
    if (delivery.action !== 'send') throw new DeliveryError('channel_unsupported', `${what}: replies and reactions need a bot token (channels.${target.name}.tokenEnv); an incoming webhook only sends`);
    const url = secretFromEnv(target.webhookUrlEnv!, what);
    const answer = await postWithRetries(target, what, url, JSON.stringify({ text: delivery.text }), () => ({ 'content-type': 'application/json' }), options);
    if (answer.status !== 200) throw new DeliveryError('channel_refused', `${what}: the incoming webhook answered HTTP ${answer.status} (${answer.body.slice(0, 80)})`);
    return { messageId: delivery.operationId };
  }
  const token = secretFromEnv(target.tokenEnv, what);
  const base = target.baseUrl!.replace(/\/+$/, '');
  const headers = (): Record<string, string> => ({ 'content-type': 'application/json; charset=utf-8', authorization: `Bearer ${token}` });
  if (delivery.action === 'react') {
    const name = delivery.emoji!.replace(/^:|:$/g, '');
    const answer = await postWithRetries(target, what, `${base}/api/reactions.add`, JSON.stringify({ channel: delivery.channelId, timestamp: delivery.messageId, name }), headers, options);
    okOrThrow(what, 'reactions.add', answer);
    return { messageId: delivery.messageId! };
  }
  const body: Record<string, unknown> = { channel: delivery.channelId, text: delivery.text };
  if (delivery.action === 'reply') body.thread_ts = delivery.messageId;
  const answer = await postWithRetries(target, what, `${base}/api/chat.postMessage`, JSON.stringify(body), headers, options);
  const json = okOrThrow(what, 'chat.postMessage', answer);
  return { messageId: typeof json.ts === 'string' ? json.ts : delivery.operationId };
}

function okOrThrow(what: string, method: string, answer: { status: number; json: unknown }): { ts?: unknown } {
  const json = answer.json as { ok?: unknown; error?: unknown; ts?: unknown } | undefined;
  if (answer.status === 200 && json && json.ok === true) return json;
  const why = json && typeof json.error === 'string' ? json.error.slice(0, 80) : `HTTP ${answer.status}`;
  throw new DeliveryError('channel_refused', `${what}: ${method} refused: ${why}`);
}
