/**
 * Outward channels of message_* (the `channels.<name>` config): resolving a
 * channel name to what a delivery needs, and delivering one message to it.
 *
 * A resolved channel ({@link ChannelTarget}) holds no secret: tokens, signing
 * secrets and webhook URLs are read from the environment variables it names
 * at delivery time and registered with the output guard then, so no error,
 * log line or store row carries them. It is what the outbox keeps for a
 * pending send, so the sweep can deliver it after a crash without the config.
 */
import { isAbsolute, join, resolve } from 'node:path';

import type { ChannelConfig, ChannelsConfig } from '../../config/message-schema.js';
import { redactSecrets, registerSecret } from '../../redact/output-guard.js';

export type ChannelType = ChannelConfig['type'];

export interface ChannelTarget {
  name: string;
  type: ChannelType;
  /** file: the JSONL file (absolute). */
  path?: string;
  /** webhook: where to POST. */
  url?: string;
  secretEnv?: string;
  tokenEnv?: string;
  webhookUrlEnv?: string;
  baseUrl?: string;
  timeoutMs: number;
  maxAttempts: number;
}

/** One message to deliver. `createdAt` is when the intent was written: stable across redeliveries. */
export interface Delivery {
  action: 'send' | 'reply' | 'react';
  operationId: string;
  agentId: string;
  runId: string;
  channelId: string;
  createdAt: number;
  text?: string | undefined;
  messageId?: string | undefined;
  emoji?: string | undefined;
}

export interface DeliverOptions {
  /** Called before each attempt leaves (the outbox counts it, so a crash during delivery shows). */
  onAttempt?: () => void;
  /** file: look for the operation id in the file before appending (a redelivery). */
  redelivery?: boolean;
  /** Tests: wait this long between attempts instead of the backoff. */
  backoffMs?: (attempt: number) => number;
}

/** A delivery that did not succeed. `retryable` failures were retried up to maxAttempts already. */
export class DeliveryError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(redactSecrets(message));
    this.name = 'DeliveryError';
    this.code = code;
  }
}

/** The channel every agent has without configuration: `file`, appending to $COMIS_HOME/outbox/<agent>.jsonl. */
export const BUILTIN_FILE_CHANNEL = 'file';

/**
 * Resolves a channel name against the config (`channels`), or the built-in
 * `file` channel. Returns undefined for a name that is not configured.
 */
export function resolveChannel(name: string, channels: ChannelsConfig | undefined, home: string, agentId: string): ChannelTarget | undefined {
  const config: ChannelConfig | undefined = channels?.[name] ?? (name === BUILTIN_FILE_CHANNEL ? { type: 'file' } : undefined);
  if (!config) return undefined;
  switch (config.type) {
    case 'file': {
      const path = config.path === undefined ? join(home, 'outbox', `${agentId}.jsonl`) : isAbsolute(config.path) ? config.path : resolve(home, config.path);
      return { name, type: 'file', path, timeoutMs: 0, maxAttempts: 1 };
    }
    case 'webhook':
      return { name, type: 'webhook', url: config.url, ...(config.secretEnv ? { secretEnv: config.secretEnv } : {}), timeoutMs: config.timeoutMs, maxAttempts: config.maxAttempts };
    case 'slack':
      return {
        name,
        type: 'slack',
        ...(config.tokenEnv ? { tokenEnv: config.tokenEnv } : {}),
        ...(config.webhookUrlEnv ? { webhookUrlEnv: config.webhookUrlEnv } : {}),
        baseUrl: config.baseUrl ?? 'https://slack.com',
        timeoutMs: config.timeoutMs,
        maxAttempts: config.maxAttempts,
      };
    case 'telegram':
      return { name, type: 'telegram', tokenEnv: config.tokenEnv, baseUrl: config.baseUrl ?? 'https://api.telegram.org', timeoutMs: config.timeoutMs, maxAttempts: config.maxAttempts };
  }
}

/** Reads a secret from the environment variable the config names, registering it with the output guard first. */
export function secretFromEnv(envName: string, what: string): string {
  const value = process.env[envName];
  if (value === undefined || value === '') throw new DeliveryError('channel_secret_missing', `${what}: the environment variable ${envName} is not set`);
  registerSecret(value);
  return value;
}

/** Delivers one message; resolves with the channel's message id (the operation id where the channel has none). */
export async function deliver(target: ChannelTarget, delivery: Delivery, options: DeliverOptions = {}): Promise<{ messageId: string }> {
  switch (target.type) {
    case 'file':
      return (await import('./file-channel.js')).deliverToFile(target, delivery, options);
    case 'webhook':
      return (await import('./webhook-channel.js')).deliverToWebhook(target, delivery, options);
    case 'slack':
      return (await import('./slack-channel.js')).deliverToSlack(target, delivery, options);
    case 'telegram':
      return (await import('./telegram-channel.js')).deliverToTelegram(target, delivery, options);
  }
}
