/**
 * Outward sends (issue 16): the top-level `channels.<name>` adapters and the
 * per-agent `autonomy.message` (origin channel, send limits) and
 * `autonomy.durability.enabled` (the outbox: exactly once across crashes).
 *
 * Secrets are never values here: a token, a signing secret or a Slack
 * webhook URL is named by the environment variable that holds it (`*Env`),
 * read when a message is delivered and registered with the output guard.
 */
import { z } from 'zod';

/** Channel names: what scripts pass as `channel_type`. */
export const CHANNEL_NAME_PATTERN = /^[a-z][a-z0-9_-]{0,31}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

const envName = (what: string) => z.string().regex(ENV_NAME, 'an environment variable name (letters, digits, "_")').describe(what);
const httpUrl = (what: string) =>
  z
    .string()
    .min(1)
    .max(2048)
    .refine((u) => {
      try {
        const p = new URL(u).protocol;
        return p === 'http:' || p === 'https:';
      } catch {
        return false;
      }
    }, 'an http(s) URL')
    .describe(what);

const timeoutMs = z.number().int().min(100).max(120_000).default(10_000).describe('Timeout of one HTTP attempt, in ms.');
const maxAttempts = z.number().int().min(1).max(10).default(4).describe('Attempts per delivery: a 5xx answer or a timeout is retried with exponential backoff; any other answer is final.');

export const fileChannelSchema = z
  .strictObject({
    type: z.literal('file'),
    path: z.string().min(1).max(4096).optional().describe("The JSONL file (absolute, or relative to $COMIS_HOME); default $COMIS_HOME/outbox/<agent>.jsonl. Created 0600; every line is fsync'd."),
  })
  .describe('Appends one JSON object per message to a local JSONL file (tail -f it).');

export const webhookChannelSchema = z
  .strictObject({
    type: z.literal('webhook'),
    url: httpUrl('Where to POST each message (operator-trusted: private addresses allowed; redirects are not followed).'),
    secretEnv: envName('The environment variable holding the HMAC-SHA256 signing secret (X-Comis-Signature over "<timestamp>.<body>"). Without it, requests are unsigned.').optional(),
    timeoutMs,
    maxAttempts,
  })
  .describe('HTTP POST of a JSON body with an Idempotency-Key header, signed with HMAC-SHA256.');

export const slackChannelSchema = z
  .strictObject({
    type: z.literal('slack'),
    tokenEnv: envName('The environment variable holding a bot token (xoxb-…) for chat.postMessage and reactions.add.').optional(),
    webhookUrlEnv: envName('The environment variable holding an incoming-webhook URL (send only; replies and reactions need tokenEnv).').optional(),
    baseUrl: httpUrl('The Slack Web API base URL (default https://slack.com); for tests or a proxy.').optional(),
    timeoutMs,
    maxAttempts,
  })
  .refine((c) => c.tokenEnv !== undefined || c.webhookUrlEnv !== undefined, 'a slack channel needs tokenEnv or webhookUrlEnv')
  .describe('Slack: chat.postMessage (with tokenEnv) or an incoming webhook (webhookUrlEnv).');

export const telegramChannelSchema = z
  .strictObject({
    type: z.literal('telegram'),
    tokenEnv: envName('The environment variable holding the bot token (never printed).'),
    baseUrl: httpUrl('The Bot API base URL (default https://api.telegram.org); for tests or a local Bot API server.').optional(),
    timeoutMs,
    maxAttempts,
  })
  .describe('Telegram Bot API: sendMessage, replies (reply_parameters) and setMessageReaction.');

export const channelSchema = z.discriminatedUnion('type', [fileChannelSchema, webhookChannelSchema, slackChannelSchema, telegramChannelSchema]).describe('One outward channel, by type: file, webhook, slack or telegram.');

export const channelsSchema = z
  .record(z.string().regex(CHANNEL_NAME_PATTERN, 'channel names are a lowercase letter, then lowercase letters, digits, "-" or "_" (at most 32)'), channelSchema)
  .describe('Outward channels for message_send/reply/react, by name (the name is what scripts pass as channel_type). A channel named "file" of type file exists without configuration.');

export const autonomyMessageSchema = z
  .strictObject({
    origin: z
      .string()
      .regex(/^[a-z][a-z0-9_-]{0,31}\/[A-Za-z0-9@#._:+-]{1,256}$/, '"<channel name>/<id>", e.g. "telegram/chat123"')
      .optional()
      .describe('The agent\'s own origin channel, "<channel name>/<id>" (default "file/<agent id>"). message_* go there by default; a send anywhere else asks for approval.'),
    maxPerRun: z.number().int().min(1).max(10_000).default(10).describe('Most messages one run may send (message_send, reply and react together).'),
    maxPerHour: z.number().int().min(1).max(100_000).default(20).describe('Most messages the agent may send in any rolling hour, across runs.'),
  })
  .describe('Outward sends of the agent (message_send/reply/react).');

export type ChannelConfig = z.infer<typeof channelSchema>;
export type ChannelsConfig = z.infer<typeof channelsSchema>;
