/**
 * The `webhook` channel: an HTTP POST of one JSON object per message.
 *
 * Body (stable across redeliveries of the same operation):
 *   {"operationId","agentId","runId","action","channelId","createdAt", "text"?, "messageId"?, "emoji"?}
 * Headers: `Content-Type: application/json`, `Idempotency-Key: <operationId>`,
 * `X-Comis-Timestamp: <unix seconds of this attempt>` and, with `secretEnv`,
 * `X-Comis-Signature: sha256=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>`.
 * A 2xx answer is a delivery; its JSON `message_id` or `id`, when present,
 * is the message id. The receiver dedupes on Idempotency-Key: with the
 * outbox's at-least-once redelivery that is exactly-once in effect.
 */
import { createHmac } from 'node:crypto';

import type { ChannelTarget, DeliverOptions, Delivery } from './channel.js';
import { DeliveryError, secretFromEnv } from './channel.js';
import { postWithRetries } from './http.js';

export function webhookBody(delivery: Delivery): string {
  const body: Record<string, unknown> = {
    operationId: delivery.operationId,
    agentId: delivery.agentId,
    runId: delivery.runId,
    action: delivery.action,
    channelId: delivery.channelId,
    createdAt: delivery.createdAt,
  };
  if (delivery.text !== undefined) body.text = delivery.text;
  if (delivery.messageId !== undefined) body.messageId = delivery.messageId;
  if (delivery.emoji !== undefined) body.emoji = delivery.emoji;
  return JSON.stringify(body);
}

/** The signature header value for a body sent at `timestamp` (unix seconds). */
export function signWebhook(secret: string, timestamp: string, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

export async function deliverToWebhook(target: ChannelTarget, delivery: Delivery, options: DeliverOptions): Promise<{ messageId: string }> {
  const secret = target.secretEnv ? secretFromEnv(target.secretEnv, `webhook channel "${target.name}"`) : undefined;
  const body = webhookBody(delivery);
  const headers = (): Record<string, string> => {
    const timestamp = String(Math.floor(Date.now() / 1000));
    const h: Record<string, string> = { 'content-type': 'application/json', 'idempotency-key': delivery.operationId, 'x-comis-timestamp': timestamp, 'user-agent': 'comis-outbox' };
    if (secret !== undefined) h['x-comis-signature'] = signWebhook(secret, timestamp, body);
    return h;
  };
  const answer = await postWithRetries(target, `webhook channel "${target.name}"`, target.url!, body, headers, options);
  if (answer.status < 200 || answer.status >= 300) throw new DeliveryError('channel_refused', `webhook channel "${target.name}": the receiver answered HTTP ${answer.status}`);
  const json = answer.json as { message_id?: unknown; id?: unknown } | undefined;
  const id = json && typeof json === 'object' ? (json.message_id ?? json.id) : undefined;
  return { messageId: typeof id === 'string' || typeof id === 'number' ? String(id).slice(0, 256) : delivery.operationId };
}
