/**
 * message_send / message_reply / message_react end to end through
 * bin/comis.js: a real jail, the real capability socket, the real store, and
 * receivers on 127.0.0.1 (the file channel, a webhook receiver, a fake
 * Telegram). Includes seed 000's worked example, "fetch, transform, send in
 * one turn", as written (examples/fetch-transform-send.ts).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { parseJson, repoRoot } from '../helpers/cli.js';
import { comisAsync, startFakeTelegram, startWebhookReceiver, type FakeTelegram, type WebhookReceiver } from '../helpers/message-fakes.js';
import { makeHome } from '../helpers/orchestrate.js';
import { startWebServer, type WebServer } from '../helpers/web-server.js';

const TG_TOKEN = '424242:e2e-telegram-token-xyz';
let tg: FakeTelegram;
let hook: WebhookReceiver;
let web: WebServer;
beforeAll(async () => {
  tg = await startFakeTelegram(TG_TOKEN);
  hook = await startWebhookReceiver({ secret: 'e2e-webhook-secret-0123' });
  web = await startWebServer();
});
afterAll(async () => {
  await tg.close();
  await hook.close();
  await web.close();
});

const lines = (path: string): Array<Record<string, unknown>> =>
  readFileSync(path, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);

async function orchestrate(home: string, file: string, extra: string[] = [], env: Record<string, string> = {}): Promise<{ body: any; stderr: string; stdout: string[] }> {
  const res = await comisAsync(home, ['orchestrate', file, '--json', ...extra], env);
  const body = parseJson(res.stdout);
  return {
    body,
    stderr: res.stderr,
    stdout: String(body.result?.stdout ?? '')
      .trim()
      .split('\n')
      .filter(Boolean),
  };
}

describe('message_* through comis orchestrate', () => {
  it('zero config: message_send({text}) appends to $COMIS_HOME/outbox/default.jsonl (origin file/default); describe() lists the three tools', async () => {
    const h = makeHome();
    const script = h.script(
      'send.ts',
      `import { comis_tools } from './comis_tools.js';
const r = await comis_tools.message_send({ text: 'done' });
const names = comis_tools.describe().filter((t) => t.name.startsWith('message_')).map((t) => t.name + ':' + t.capability);
console.log(JSON.stringify({ r, names }));`,
    );
    const { body, stdout } = await orchestrate(h.home, script);
    expect(body.result.outcome).toBe('success');
    const out = JSON.parse(stdout[0]!);
    expect(out.names).toEqual(['message_send:orch:message', 'message_reply:orch:message', 'message_react:orch:message']);
    expect(out.r).toMatchObject({ channel: 'file', channelId: 'default', deduplicated: false, durable: false });
    expect(out.r.operationId).toBe(`${body.result.runId}:msg:1`);
    const sent = lines(join(h.home, 'outbox', 'default.jsonl'));
    expect(sent).toEqual([expect.objectContaining({ operationId: out.r.operationId, action: 'send', channelId: 'default', text: 'done', runId: body.result.runId })]);
    expect(body.result.toolCalls).toEqual([expect.objectContaining({ tool: 'message_send', capability: 'orch:message' })]);
  }, 120_000);

  it('durability on: a repeated operationId (the upstream second argument, in Python and TS) is sent once, within a run and across runs; off, it is sent again', async () => {
    const cfg = (durable: boolean): string => `agents:\n  default:\n    autonomy:\n      durability:\n        enabled: ${durable}\n`;
    const h = makeHome(cfg(true));
    const py = h.script(
      'send.py',
      `import comis_tools, json
a = comis_tools.message_send({"text": "report ready"}, "report-send")
b = comis_tools.message_send({"text": "report ready"}, "report-send")
print(json.dumps([a["deduplicated"], b["deduplicated"], a["operationId"], b["messageId"] == a["messageId"], a["durable"]]))`,
    );
    const first = await orchestrate(h.home, py);
    expect(first.body.result.outcome, first.stderr).toBe('success');
    expect(JSON.parse(first.stdout[0]!)).toEqual([false, true, 'report-send', true, true]);
    const ts = h.script('again.ts', `import { comis_tools } from './comis_tools.js';\nconst r = await comis_tools.message_send({ text: 'report ready' }, 'report-send');\nconsole.log(JSON.stringify(r.deduplicated));`);
    expect((await orchestrate(h.home, ts)).stdout).toEqual(['true']);
    const out = join(h.home, 'outbox', 'default.jsonl');
    expect(lines(out).filter((l) => l.operationId === 'report-send')).toHaveLength(1);
    // The outbox row is delivered and holds no text any more.
    const db = new Database(join(h.home, 'comis.db'), { readonly: true });
    const row = db.prepare("SELECT state, payload, attempts FROM outbox WHERE operation_id = 'report-send'").get();
    db.close();
    expect(row).toEqual({ state: 'delivered', payload: null, attempts: 1 });
    // Control: without durability the same id is a best-effort pass-through, sent again.
    const off = makeHome(cfg(false));
    await orchestrate(off.home, off.script('twice.ts', `import { comis_tools } from './comis_tools.js';\nawait comis_tools.message_send({ text: 'x' }, 'same');\nawait comis_tools.message_send({ text: 'x' }, 'same');`));
    expect(lines(join(off.home, 'outbox', 'default.jsonl'))).toHaveLength(2);
  }, 180_000);

  it('webhook origin with reply and react: signed, keyed, and the ids flow back to the script', async () => {
    const h = makeHome(`channels:\n  ops:\n    type: webhook\n    url: ${hook.url}\n    secretEnv: OPS_HOOK_SECRET\nagents:\n  default:\n    autonomy:\n      message:\n        origin: ops/room-1\n`);
    const script = h.script(
      'hook.ts',
      `import { comis_tools } from './comis_tools.js';
const sent = await comis_tools.message_send({ text: 'build green' });
await comis_tools.message_reply({ message_id: sent.messageId, text: 'details' });
await comis_tools.message_react({ message_id: sent.messageId, emoji: '✅' }, 'react-1');
console.log(sent.messageId);`,
    );
    const before = hook.requests.length;
    const { body, stdout, stderr } = await orchestrate(h.home, script, [], { OPS_HOOK_SECRET: 'e2e-webhook-secret-0123' });
    expect(body.result.outcome, stderr).toBe('success');
    const mine = hook.requests.slice(before);
    expect(mine.map((r) => [r.signatureOk, r.body.action, r.body.channelId])).toEqual([
      [true, 'send', 'room-1'],
      [true, 'reply', 'room-1'],
      [true, 'react', 'room-1'],
    ]);
    expect(mine[1]!.body.messageId).toBe(stdout[0]);
    expect(mine[2]!.key).toBe('react-1');
    expect(mine[2]!.body.emoji).toBe('✅');
  }, 120_000);

  it("seed 000's worked example, as written: web_fetch a local report, jq the total, write a note, message_send to telegram/chat123", async () => {
    const h = makeHome(
      `channels:\n  telegram:\n    type: telegram\n    tokenEnv: TELEGRAM_BOT_TOKEN\n    baseUrl: ${tg.baseUrl}\nagents:\n  default:\n    autonomy:\n      write: true\n      message:\n        origin: telegram/chat123\n    web:\n      fetch:\n        allowPrivate: ["127.0.0.1:${web.port}"]\n`,
    );
    // The example names https://example.com/report.json; here the same script reads the local server's report.
    const example = readFileSync(join(repoRoot, 'examples', 'fetch-transform-send.ts'), 'utf8');
    expect(example).toContain('await comis_tools.message_send({ channel_type: "telegram", channel_id: "chat123", text: `Report total: ${total}` });');
    const script = h.script('example.ts', example.replace('https://example.com/report.json', web.url('/report.json')));
    const before = tg.calls.length;
    const { body, stdout, stderr } = await orchestrate(h.home, script, [], { TELEGRAM_BOT_TOKEN: TG_TOKEN });
    expect(body.result.outcome, stderr).toBe('success');
    expect(stdout).toEqual(['sent total=42']);
    expect(tg.calls.slice(before)).toEqual([{ method: 'sendMessage', body: { chat_id: 'chat123', text: 'Report total: 42' } }]);
    // The token reached the fake (it answered ok) and appears nowhere comis wrote.
    expect(JSON.stringify(body)).not.toContain(TG_TOKEN);
    expect(stderr).not.toContain(TG_TOKEN);
  }, 120_000);
});
