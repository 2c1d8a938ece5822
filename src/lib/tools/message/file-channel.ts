/**
 * The `file` channel: one JSON object per message appended to a JSONL file
 * (0600, in a 0700 directory), fsync'd before the send counts as delivered,
 * so `tail -f` shows what a script sent and a crash after the answer never
 * loses a line. It dedupes by operation id itself: a redelivery (the outbox
 * sweep after a crash during delivery) first looks for its key in the file.
 */
import { constants as fsConstants } from 'node:fs';
import { mkdir, open, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';

import type { ChannelTarget, DeliverOptions, Delivery } from './channel.js';
import { DeliveryError } from './channel.js';

/** The line written for a delivery (documented in docs/messages.md). */
export function fileLine(delivery: Delivery): string {
  const line: Record<string, unknown> = {
    operationId: delivery.operationId,
    at: new Date(delivery.createdAt).toISOString(),
    agentId: delivery.agentId,
    runId: delivery.runId,
    action: delivery.action,
    channelId: delivery.channelId,
  };
  if (delivery.text !== undefined) line.text = delivery.text;
  if (delivery.messageId !== undefined) line.messageId = delivery.messageId;
  if (delivery.emoji !== undefined) line.emoji = delivery.emoji;
  return `${JSON.stringify(line)}\n`;
}

export async function deliverToFile(target: ChannelTarget, delivery: Delivery, options: DeliverOptions): Promise<{ messageId: string }> {
  const path = target.path!;
  options.onAttempt?.();
  let handle: FileHandle;
  try {
    await mkdir(dirname(path), { recursive: true, mode: 0o700 });
    handle = await open(path, fsConstants.O_RDWR | fsConstants.O_APPEND | fsConstants.O_CREAT | fsConstants.O_NOFOLLOW, 0o600);
  } catch (err) {
    throw new DeliveryError('channel_unavailable', `file channel "${target.name}": cannot open its file (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  try {
    const st = await handle.stat();
    if (!st.isFile()) throw new DeliveryError('channel_unavailable', `file channel "${target.name}": its path is not a regular file`);
    if (options.redelivery && (await containsKey(handle, st.size, delivery.operationId))) return { messageId: delivery.operationId };
    // A line torn by a crash (no final newline) is closed first, so this one stays parseable.
    let prefix = '';
    if (st.size > 0) {
      const last = Buffer.alloc(1);
      await handle.read(last, 0, 1, st.size - 1);
      if (last[0] !== 0x0a) prefix = '\n';
    }
    // One write: O_APPEND keeps concurrent appenders' lines whole.
    await handle.write(prefix + fileLine(delivery));
    await handle.sync();
    return { messageId: delivery.operationId };
  } catch (err) {
    if (err instanceof DeliveryError) throw err;
    throw new DeliveryError('channel_unavailable', `file channel "${target.name}": write failed (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  } finally {
    await handle.close();
  }
}

/** Whether a line of the file already carries this operation id (read in 1 MiB chunks, never whole). */
async function containsKey(handle: FileHandle, size: number, operationId: string): Promise<boolean> {
  const needle = Buffer.from(`{"operationId":${JSON.stringify(operationId)},`);
  const chunk = 1 << 20;
  const buf = Buffer.alloc(chunk + needle.length);
  let carry = 0;
  for (let pos = 0; pos < size; pos += chunk) {
    const { bytesRead } = await handle.read(buf, carry, Math.min(chunk, size - pos), pos);
    const view = buf.subarray(0, carry + bytesRead);
    if (view.indexOf(needle) !== -1) return true;
    carry = Math.min(needle.length - 1, view.length);
    view.copy(buf, 0, view.length - carry);
  }
  return false;
}
