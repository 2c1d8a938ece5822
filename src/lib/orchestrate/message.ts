/**
 * The daemon side of `message_send` / `message_reply` / `message_react`
 * (orch:message): target resolution (the agent's origin channel by default),
 * approval of any other target, the per-run and per-hour limits, and the
 * delivery, through the outbox when `autonomy.durability.enabled` is on.
 *
 * With durability, a send is exactly once in effect: the intent is written
 * to the outbox (synchronous=FULL, BEGIN IMMEDIATE) before the channel is
 * touched and marked delivered after; a repeated operationId of the same
 * agent is answered from the outbox (within a run, across runs, after a
 * crash); what a crash left pending is delivered by the sweep
 * (outbox-sweep.ts) with the same idempotency key. Without durability a send
 * is a best-effort pass-through (counted for maxPerHour, not deduplicated).
 */
import type { ResolvedAgent } from '../config/load.js';
import { CapCallError } from '../capsocket/protocol.js';
import { ComisError } from '../errors.js';
import { redactSecrets } from '../redact/output-guard.js';
import type { OutboxAction } from '../store/outbox.js';
import type { Store } from '../store/store.js';
import { BUILTIN_FILE_CHANNEL, DeliveryError, resolveChannel, type ChannelTarget, type Delivery } from '../tools/message/channel.js';

/** What the approval callback is asked: a send to a target that is not the origin channel. */
export interface SendApprovalRequest {
  agentId: string;
  tool: string;
  channel: string;
  channelId: string;
  origin: string;
}

export interface MessageServiceOptions {
  agent: ResolvedAgent;
  home: string;
  runId: string;
  /** Asks for a send outside the origin channel (a TTY prompt, or `--yes`); absent: such a send is refused. */
  approve?: ((request: SendApprovalRequest) => Promise<boolean>) | undefined;
}

export interface MessageResult {
  operationId: string;
  channel: string;
  channelId: string;
  messageId: string;
  deduplicated: boolean;
  durable: boolean;
}

/** A refusal the dispatcher audits as a content-free deny (its reason only). */
export class MessageRefusal extends CapCallError {
  readonly auditReason: 'approval_required' | 'approval_refused' | 'rate_limited';
  constructor(code: string, message: string, auditReason: MessageRefusal['auditReason']) {
    super(code, message);
    this.auditReason = auditReason;
  }
}

export const DEFAULT_MAX_PER_RUN = 10;
export const DEFAULT_MAX_PER_HOUR = 20;

/** Deliveries of this process in flight, by agent and operation id (shared by runs and the sweep of one process). */
export const inFlight = new Map<string, Promise<{ messageId: string }>>();
export const flightKey = (agentId: string, operationId: string): string => `${agentId}\u0000${operationId}`;

export interface MessageService {
  handle(tool: 'message_send' | 'message_reply' | 'message_react', args: Record<string, unknown>): Promise<MessageResult>;
  /** Waits for this run's deliveries and closes its store connection. */
  close(): Promise<void>;
}

/** Parses `autonomy.message.origin` ("<channel>/<id>"); default `file/<agent id>`. */
export function originOf(agent: ResolvedAgent): { channel: string; id: string } {
  const origin = agent.config.autonomy.message?.origin;
  if (!origin) return { channel: BUILTIN_FILE_CHANNEL, id: agent.id };
  const slash = origin.indexOf('/');
  return { channel: origin.slice(0, slash), id: origin.slice(slash + 1) };
}

/** Test-only fault points for the crash harness (test/e2e/outbox-crash.test.ts): die at a named moment. */
async function testHook(point: 'after-intent' | 'during-delivery'): Promise<void> {
  const delay = Number(process.env.COMIS_TEST_OUTBOX_DELAY_MS ?? 0);
  if (point === 'after-intent' && delay > 0) await new Promise((r) => setTimeout(r, Math.min(delay, 5_000)));
  if (process.env.COMIS_TEST_OUTBOX_CRASH === point) process.kill(process.pid, 'SIGKILL');
}

export function createMessageService(options: MessageServiceOptions): MessageService {
  const { agent, runId } = options;
  const config = agent.config.autonomy.message;
  const maxPerRun = config?.maxPerRun ?? DEFAULT_MAX_PER_RUN;
  const maxPerHour = config?.maxPerHour ?? DEFAULT_MAX_PER_HOUR;
  const durable = agent.config.autonomy.durability?.enabled === true;
  const origin = originOf(agent);
  const originName = `${origin.channel}/${origin.id}`;
  const approved = new Set<string>();
  const pending = new Set<Promise<unknown>>();
  let reserved = 0;
  let store: Store | undefined;
  let outbox: typeof import('../store/outbox.js') | undefined;
  let daemonOrdinal = 0;

  const openStore = async (): Promise<{ store: Store; outbox: typeof import('../store/outbox.js') }> => {
    if (!store) {
      const [{ openStore: open }, mod] = await Promise.all([import('../store/store.js'), import('../store/outbox.js')]);
      store = open({ home: options.home });
      // Every outbox commit reaches the disk before the send goes out.
      if (durable) store.db.pragma('synchronous = FULL');
      outbox = mod;
    }
    return { store, outbox: outbox! };
  };

  const approve = async (tool: string, channel: string, channelId: string): Promise<void> => {
    const key = `${channel}/${channelId}`;
    if (key === originName || approved.has(key)) return;
    const request: SendApprovalRequest = { agentId: agent.id, tool, channel, channelId, origin: originName };
    const needs = `${tool} to ${key} is outside the origin channel of agent "${agent.id}" (${originName}) and needs approval`;
    if (!options.approve) throw new MessageRefusal('approval_required', `${needs}: run comis orchestrate with --yes or on a terminal, or set agents.${agent.id}.autonomy.message.origin`, 'approval_required');
    let ok: boolean;
    try {
      ok = await options.approve(request);
    } catch (err) {
      if (err instanceof ComisError && err.code === 'APPROVAL_REQUIRED') throw new MessageRefusal('approval_required', `${needs}, and there is no terminal to ask on: pass --yes`, 'approval_required');
      throw err;
    }
    if (!ok) throw new MessageRefusal('approval_refused', `${needs}: the operator refused it`, 'approval_refused');
    approved.add(key);
  };

  const run = async (tool: 'message_send' | 'message_reply' | 'message_react', args: Record<string, unknown>): Promise<MessageResult> => {
    const action: OutboxAction = tool === 'message_send' ? 'send' : tool === 'message_reply' ? 'reply' : 'react';
    let channel = origin.channel;
    let channelId = origin.id;
    if (action === 'send') {
      const type = args.channel_type as string | undefined;
      const id = args.channel_id as string | undefined;
      if (type !== undefined && type !== origin.channel && id === undefined) {
        throw new CapCallError('invalid_params', `${tool}: channel_id is required with a channel_type other than the origin channel's (${origin.channel})`);
      }
      channel = type ?? origin.channel;
      channelId = id ?? origin.id;
    }
    const target = resolveChannel(channel, agent.channels, options.home, agent.id);
    if (!target) {
      const names = [BUILTIN_FILE_CHANNEL, ...Object.keys(agent.channels ?? {}).filter((n) => n !== BUILTIN_FILE_CHANNEL)];
      throw new CapCallError('unknown_channel', `${tool}: no channel "${channel}" is configured (channels: ${names.join(', ')})`);
    }
    await approve(tool, channel, channelId);
    if (reserved >= maxPerRun) {
      throw new MessageRefusal('rate_limited', `${tool}: this run already sent ${maxPerRun} messages, the most agents.${agent.id}.autonomy.message.maxPerRun allows`, 'rate_limited');
    }
    const operationId = (args.operationId as string | undefined) ?? `${runId}:d${++daemonOrdinal}`;
    const delivery: Delivery = {
      action,
      operationId,
      agentId: agent.id,
      runId,
      channelId,
      createdAt: Date.now(),
      ...(args.text !== undefined ? { text: args.text as string } : {}),
      ...(args.message_id !== undefined ? { messageId: args.message_id as string } : {}),
      ...(args.emoji !== undefined ? { emoji: args.emoji as string } : {}),
    };
    const result = (messageId: string, deduplicated: boolean): MessageResult => ({ operationId, channel, channelId, messageId, deduplicated, durable });
    const rateRefusal = (sent: number): MessageRefusal =>
      new MessageRefusal('rate_limited', `${tool}: agent "${agent.id}" sent ${sent} messages in the last hour, the most agents.${agent.id}.autonomy.message.maxPerHour allows`, 'rate_limited');

    const { store: s, outbox: o } = await openStore();
    if (!durable) {
      reserved++;
      const counted = o.recordSend(s.db, agent.id, maxPerHour);
      if (!counted.ok) {
        reserved--;
        throw rateRefusal(counted.sentLastHour);
      }
      try {
        const { messageId } = await (await import('../tools/message/channel.js')).deliver(target, delivery);
        return result(messageId, false);
      } catch (err) {
        throw deliveryFailure(tool, err);
      }
    }

    const key = flightKey(agent.id, operationId);
    for (;;) {
      const intent = o.writeIntent(s.db, { agentId: agent.id, operationId, runId, action, channel, channelId, target: JSON.stringify(target), payload: JSON.stringify(payloadOf(delivery)) }, { maxPerHour, ownBusy: inFlight.has(key) });
      switch (intent.kind) {
        case 'delivered':
          return { ...result(intent.row.messageId ?? operationId, true), channel: intent.row.channel, channelId: intent.row.channelId };
        case 'dropped':
          throw new CapCallError('send_dropped', `${tool}: operation ${operationId} was dropped by an operator (comis outbox drop); use a new operationId to send again`);
        case 'rate_limited':
          throw rateRefusal(intent.sentLastHour);
        case 'busy': {
          const mine = inFlight.get(key);
          if (!mine) throw new CapCallError('send_in_flight', `${tool}: another comis process is delivering operation ${operationId}; see comis outbox list`);
          try {
            const { messageId } = await mine;
            return { ...result(messageId, true), channel: intent.row.channel, channelId: intent.row.channelId };
          } catch {
            continue; // the first attempt failed: this call tries again with the same key
          }
        }
        case 'claimed': {
          if (intent.fresh) reserved++;
          // A row taken over (a crash, a failure) is delivered as it was first written.
          const stored = intent.fresh ? { target, delivery } : rowDelivery(intent.row);
          const flight = deliverClaimed(s, o, stored.target, stored.delivery, !intent.fresh || intent.row.attempts > 0);
          inFlight.set(key, flight);
          pending.add(flight);
          try {
            const { messageId } = await flight;
            return { ...result(messageId, !intent.fresh), channel: intent.row.channel, channelId: intent.row.channelId };
          } catch (err) {
            throw deliveryFailure(tool, err);
          } finally {
            inFlight.delete(key);
            pending.delete(flight);
          }
        }
      }
    }
  };

  return {
    handle: (tool, args) => run(tool, args),
    close: async () => {
      await Promise.allSettled([...pending]);
      store?.close();
      store = undefined;
    },
  };
}

/** The payload kept in the outbox while a send is open: what the channel needs, and when the intent was written. */
export function payloadOf(delivery: Delivery): Record<string, unknown> {
  return { createdAt: delivery.createdAt, text: delivery.text, messageId: delivery.messageId, emoji: delivery.emoji };
}

/** A stored row back to what deliver() takes. */
export function rowDelivery(row: import('../store/outbox.js').OutboxRow): { target: ChannelTarget; delivery: Delivery } {
  const payload = JSON.parse(row.payload ?? '{}') as { createdAt?: number; text?: string; messageId?: string; emoji?: string };
  return {
    target: JSON.parse(row.target) as ChannelTarget,
    delivery: {
      action: row.action,
      operationId: row.operationId,
      agentId: row.agentId,
      runId: row.runId,
      channelId: row.channelId,
      createdAt: payload.createdAt ?? row.createdAt,
      ...(payload.text !== undefined ? { text: payload.text } : {}),
      ...(payload.messageId !== undefined ? { messageId: payload.messageId } : {}),
      ...(payload.emoji !== undefined ? { emoji: payload.emoji } : {}),
    },
  };
}

/**
 * Delivers a row this process claimed and records the verdict: delivered
 * (payload gone), or failed (kept for a repeat or `comis outbox retry`).
 */
export async function deliverClaimed(store: Store, outbox: typeof import('../store/outbox.js'), target: ChannelTarget, delivery: Delivery, redelivery: boolean): Promise<{ messageId: string }> {
  const { deliver } = await import('../tools/message/channel.js');
  await testHook('after-intent');
  try {
    const out = await deliver(target, delivery, {
      redelivery,
      onAttempt: () => {
        outbox.markAttempt(store.db, delivery.agentId, delivery.operationId);
        void testHook('during-delivery');
      },
    });
    outbox.markDelivered(store.db, delivery.agentId, delivery.operationId, out.messageId);
    return out;
  } catch (err) {
    const message = err instanceof DeliveryError ? err.message : `delivery failed: ${redactSecrets((err as Error).message ?? String(err))}`;
    outbox.markFailed(store.db, delivery.agentId, delivery.operationId, message);
    throw err;
  }
}

function deliveryFailure(tool: string, err: unknown): Error {
  if (err instanceof CapCallError) return err;
  if (err instanceof DeliveryError) return new CapCallError(err.code, `${tool}: ${err.message}`);
  return err as Error;
}
