/**
 * The `telegram` channel, on the Bot API's real wire
 * (`POST <baseUrl>/bot<token>/<method>`, JSON body):
 * - send: `sendMessage {chat_id, text}`, answered
 *   `{"ok":true,"result":{"message_id":42,"chat":{…},"date":…,"text":…}}`;
 * - reply: the same with `reply_parameters: {message_id}`;
 * - react: `setMessageReaction {chat_id, message_id, reaction:[{type:"emoji", emoji}]}`,
 *   answered `{"ok":true,"result":true}`.
 * Refusals are `{"ok":false,"error_code":400,"description":"…"}`. The token is
 * in the URL path, so no message here ever names the URL.
 */
import type { ChannelTarget, DeliverOptions, Delivery } from './channel.js';
import { DeliveryError, secretFromEnv } from './channel.js';
import { postWithRetries } from './http.js';

export async function deliverToTelegram(target: ChannelTarget, delivery: Delivery, options: DeliverOptions): Promise<{ messageId: string }> {
  const what = `telegram channel "${target.name}"`;
  const token = secretFromEnv(target.tokenEnv!, what);
  const base = target.baseUrl!.replace(/\/+$/, '');
  const numericId = (id: string | undefined): number => {
    if (id === undefined || !/^\d{1,15}$/.test(id)) throw new DeliveryError('invalid_message_id', `${what}: Telegram message ids are integers`);
    return Number(id);
  };
  let method: string;
  let body: Record<string, unknown>;
  if (delivery.action === 'react') {
    method = 'setMessageReaction';
    body = { chat_id: delivery.channelId, message_id: numericId(delivery.messageId), reaction: [{ type: 'emoji', emoji: delivery.emoji }] };
  } else {
    method = 'sendMessage';
    body = { chat_id: delivery.channelId, text: delivery.text };
    if (delivery.action === 'reply') body.reply_parameters = { message_id: numericId(delivery.messageId) };
  }
  const answer = await postWithRetries(target, `${what} ${method}`, `${base}/bot${token}/${method}`, JSON.stringify(body), () => ({ 'content-type': 'application/json' }), options);
  const json = answer.json as { ok?: unknown; result?: { message_id?: unknown } | boolean; description?: unknown } | undefined;
  if (answer.status !== 200 || !json || json.ok !== true) {
    const why = json && typeof json.description === 'string' ? json.description.slice(0, 120) : `HTTP ${answer.status}`;
    throw new DeliveryError('channel_refused', `${what}: ${method} refused: ${why}`);
  }
  if (delivery.action === 'react') return { messageId: delivery.messageId! };
  const id = typeof json.result === 'object' && json.result ? json.result.message_id : undefined;
  return { messageId: typeof id === 'number' || typeof id === 'string' ? String(id) : delivery.operationId };
}
