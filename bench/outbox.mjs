// Outward sends per second, with durability on (outbox: BEGIN IMMEDIATE, synchronous=FULL,
// intent before delivery, delivered after) and off (best-effort: only the maxPerHour count),
// to the file channel and to a local webhook on 127.0.0.1; plus the cost of the file channel's
// fsync per send. In-process, over the built modules (the jail and the socket are measured by
// capsocket-rtt.mjs). Run after `npm run build`: node bench/outbox.mjs [sends]
import { closeSync, mkdtempSync, openSync, writeSync, fsyncSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const N = Number(process.argv[2] ?? 300);
const ROUNDS = 5;
const dist = new URL('../dist/lib/', import.meta.url);
const { openStore } = await import(new URL('store/store.js', dist));
const outbox = await import(new URL('store/outbox.js', dist));
const { deliver, resolveChannel } = await import(new URL('tools/message/channel.js', dist));

const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"message_id":"1"}'));
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const url = `http://127.0.0.1:${server.address().port}/hook`;

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function sendsPerSecond(channel, durable) {
  const home = mkdtempSync(join(tmpdir(), 'bench-outbox-'));
  const store = openStore({ home });
  if (durable) store.db.pragma('synchronous = FULL');
  const target = channel === 'file' ? resolveChannel('file', undefined, home, 'bench') : resolveChannel('hook', { hook: { type: 'webhook', url, timeoutMs: 5000, maxAttempts: 1 } }, home, 'bench');
  const t0 = performance.now();
  for (let i = 0; i < N; i++) {
    const delivery = { action: 'send', operationId: `op-${i}`, agentId: 'bench', runId: 'r-bench', channelId: 'bench', createdAt: Date.now(), text: `message ${i}` };
    if (durable) {
      const intent = outbox.writeIntent(
        store.db,
        {
          agentId: 'bench',
          operationId: delivery.operationId,
          runId: 'r-bench',
          action: 'send',
          channel: target.name,
          channelId: 'bench',
          target: JSON.stringify(target),
          payload: JSON.stringify({ text: delivery.text, createdAt: delivery.createdAt }),
        },
        { maxPerHour: 1e9, ownBusy: false },
      );
      if (intent.kind !== 'claimed') throw new Error(intent.kind);
      const out = await deliver(target, delivery, { onAttempt: () => outbox.markAttempt(store.db, 'bench', delivery.operationId) });
      outbox.markDelivered(store.db, 'bench', delivery.operationId, out.messageId);
    } else {
      if (!outbox.recordSend(store.db, 'bench', 1e9).ok) throw new Error('limit');
      await deliver(target, delivery);
    }
  }
  const ms = performance.now() - t0;
  store.close();
  return (N / ms) * 1000;
}

function fsyncCostUs() {
  const dir = mkdtempSync(join(tmpdir(), 'bench-fsync-'));
  const line = `${JSON.stringify({ operationId: 'x', text: 'message' })}\n`;
  const time = (sync) => {
    const fd = openSync(join(dir, `f-${sync}.jsonl`), 'a', 0o600);
    const t0 = performance.now();
    for (let i = 0; i < N; i++) {
      writeSync(fd, line);
      if (sync) fsyncSync(fd);
    }
    const us = ((performance.now() - t0) * 1000) / N;
    closeSync(fd);
    return us;
  };
  return { withFsync: time(true), without: time(false) };
}

const results = {};
for (const channel of ['file', 'webhook']) {
  for (const durable of [false, true]) {
    const rates = [];
    for (let r = 0; r < ROUNDS; r++) rates.push(await sendsPerSecond(channel, durable));
    results[`${channel} durability ${durable ? 'on' : 'off'}`] = median(rates);
  }
}
const fs = [];
for (let r = 0; r < ROUNDS; r++) fs.push(fsyncCostUs());
server.close();

const load = (await import('node:fs')).readFileSync('/proc/loadavg', 'utf8').trim();
console.log(`outbox bench: ${N} sends per round, medians of ${ROUNDS} rounds; loadavg ${load}`);
for (const [k, v] of Object.entries(results)) console.log(`  ${k.padEnd(26)} ${v.toFixed(0).padStart(6)} sends/s  (${(1e6 / v).toFixed(0)} µs/send)`);
for (const ch of ['file', 'webhook']) console.log(`  ${ch}: durability on / off = ${(results[`${ch} durability off`] / results[`${ch} durability on`]).toFixed(2)}× the time per send`);
const withF = median(fs.map((x) => x.withFsync));
const without = median(fs.map((x) => x.without));
console.log(`  raw append+fsync ${withF.toFixed(0)} µs, append alone ${without.toFixed(0)} µs: fsync costs ~${(withF - without).toFixed(0)} µs per send (the file channel pays it once; durability adds the outbox's commits)`);
