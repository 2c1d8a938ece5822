/**
 * The attack battery of message_* (orch:message): untrusted scripts that try
 * to send where they should not, as much as they like, or with hostile ids and
 * text, or to reach the admin subset; and the channel token, which must never
 * show in anything comis writes. Each case has its positive control: the same
 * script reaches the same line and succeeds where the protection does not
 * apply (an approved target, a send under the limit, a clean id, an allowed tool).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { parseJson } from '../helpers/cli.js';
import { comisAsync, startFakeTelegram, type FakeTelegram } from '../helpers/message-fakes.js';
import { makeHome, type Home } from '../helpers/orchestrate.js';

const lines = (path: string): Array<Record<string, unknown>> =>
  existsSync(path)
    ? readFileSync(path, 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>)
    : [];

async function run(h: Home, code: string, extra: string[] = [], env: Record<string, string> = {}): Promise<{ body: any; out: any[]; stderr: string }> {
  const res = await comisAsync(h.home, ['orchestrate', h.script('s.ts', `import { comis_tools } from './comis_tools.js';\n${code}`), '--json', ...extra], env);
  const body = parseJson(res.stdout);
  return {
    body,
    stderr: res.stderr,
    out: String(body.result?.stdout ?? '')
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l: string) => JSON.parse(l)),
  };
}

const tryIt = (expr: string): string =>
  `try { const r = await ${expr}; console.log(JSON.stringify({ ok: true, channel: r.channel, channelId: r.channelId })); } catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })); }`;

function auditRows(home: string): Array<Record<string, unknown>> {
  const db = new Database(join(home, 'comis.db'), { readonly: true });
  const rows = db.prepare("SELECT tool, capability, decision, reason FROM audit_events WHERE decision = 'deny'").all() as Array<Record<string, unknown>>;
  db.close();
  return rows;
}

describe('message_* attacks', () => {
  it('a send to a channel that is not the origin is refused without approval (clear error, content-free audited deny); control: with --yes it goes', async () => {
    const h = makeHome(`channels:\n  other:\n    type: file\n    path: other.jsonl\n`);
    const attack = tryIt(`comis_tools.message_send({ channel_type: 'other', channel_id: 'exfil-room', text: 'SECRET-PAYLOAD-7f3' })`);
    const refused = await run(h, attack);
    expect(refused.out).toEqual([{ code: 'approval_required', message: expect.stringContaining('message_send to other/exfil-room is outside the origin channel of agent "default" (file/default) and needs approval') }]);
    expect(refused.out[0].message).toContain('--yes');
    expect(lines(join(h.home, 'other.jsonl'))).toEqual([]);
    const denies = auditRows(h.home);
    expect(denies).toEqual([{ tool: 'message_send', capability: 'orch:message', decision: 'deny', reason: 'approval_required' }]);
    // The same channel of the origin needs no approval; another id of the origin's channel does.
    const otherId = await run(h, tryIt(`comis_tools.message_send({ channel_type: 'file', channel_id: 'someone-else', text: 'x' })`));
    expect(otherId.out[0].code).toBe('approval_required');
    // Positive control: approved, the very same send is delivered.
    const approved = await run(h, attack, ['--yes']);
    expect(approved.out).toEqual([{ ok: true, channel: 'other', channelId: 'exfil-room' }]);
    expect(lines(join(h.home, 'other.jsonl')).map((l) => l.text)).toEqual(['SECRET-PAYLOAD-7f3']);
  }, 180_000);

  it('a flood is cut at maxPerRun (default 10) and at maxPerHour across runs; control: the sends under the limits went', async () => {
    const h = makeHome();
    const flood = `let sent = 0; let code = ''; for (let i = 0; i < 50; i++) { try { await comis_tools.message_send({ text: 'flood ' + i }); sent++; } catch (e) { code = e.code; console.log(JSON.stringify({ sent, code, message: e.message })); break; } }`;
    const first = await run(h, flood);
    expect(first.out).toEqual([{ sent: 10, code: 'rate_limited', message: expect.stringContaining('this run already sent 10 messages, the most agents.default.autonomy.message.maxPerRun allows') }]);
    expect(lines(join(h.home, 'outbox', 'default.jsonl'))).toHaveLength(10);
    expect(auditRows(h.home)).toEqual([{ tool: 'message_send', capability: 'orch:message', decision: 'deny', reason: 'rate_limited' }]);
    // The hour's budget (default 20) holds across runs: 10 more go, then the hour is full.
    const second = await run(h, flood);
    expect(second.out).toEqual([{ sent: 10, code: 'rate_limited', message: expect.stringContaining('maxPerRun') }]);
    const third = await run(h, flood);
    expect(third.out).toEqual([{ sent: 0, code: 'rate_limited', message: expect.stringContaining('sent 20 messages in the last hour, the most agents.default.autonomy.message.maxPerHour allows') }]);
    expect(lines(join(h.home, 'outbox', 'default.jsonl'))).toHaveLength(20);
    // Configured: maxPerRun 3, maxPerHour 4.
    const c = makeHome('agents:\n  default:\n    autonomy:\n      message:\n        maxPerRun: 3\n        maxPerHour: 4\n');
    expect((await run(c, flood)).out).toEqual([{ sent: 3, code: 'rate_limited', message: expect.stringContaining('this run already sent 3 messages') }]);
    expect((await run(c, flood)).out).toEqual([{ sent: 1, code: 'rate_limited', message: expect.stringContaining('sent 4 messages in the last hour') }]);
  }, 240_000);

  it('control characters in channel_id or text, 1 MB of text, a bad message id: clear errors naming the field; control: the clean send goes', async () => {
    const h = makeHome();
    const cases = [
      `comis_tools.message_send({ channel_type: 'file', channel_id: 'default\\u001b[2J', text: 'x' })`,
      `comis_tools.message_send({ channel_type: 'file', channel_id: 'a\\nb', text: 'x' })`,
      `comis_tools.message_send({ text: 'bell \\u0007 and ESC \\u001b[31m' })`,
      `comis_tools.message_send({ text: 'x'.repeat(1024 * 1024) })`,
      `comis_tools.message_send({ text: 'y'.repeat(10_000) })`,
      `comis_tools.message_reply({ message_id: '../../etc', text: 'x' })`,
      `comis_tools.message_send({ text: 'ok' }, 'op\\u0000id')`,
      `comis_tools.message_send({ text: 'clean, with a newline\\nand a tab\\t' })`,
    ];
    const { out, body } = await run(h, cases.map(tryIt).join('\n'));
    expect(body.result.outcome).toBe('success');
    expect(out.map((o) => o.code ?? 'ok')).toEqual(['invalid_params', 'invalid_params', 'invalid_params', 'frame_too_large', 'invalid_params', 'invalid_params', 'invalid_params', 'ok']);
    expect(out[0].message).toBe('message_send: channel_id: letters, digits and @ # . _ : + - only (1 to 256 characters, no spaces or control characters)');
    expect(out[2].message).toBe('message_send: text: control characters are not allowed (newlines and tabs are)');
    expect(out[3].message).toMatch(/^message_send: the request is \d+ bytes, over the capability socket limit of 65536 bytes$/);
    expect(out[4].message).toBe('message_send: text: too long: at most 4096 characters');
    expect(out[5].message).toContain('message_id');
    expect(out[6].message).toBe('message_send: operationId: control characters are not allowed');
    // Positive control: only the clean message was written.
    expect(lines(join(h.home, 'outbox', 'default.jsonl')).map((l) => l.text)).toEqual(['clean, with a newline\nand a tab\t']);
  }, 180_000);

  it('the admin subset (message_edit, message_delete, message_fetch) is denied by origin, audited; control: message_send through the same invoke() goes', async () => {
    const h = makeHome();
    const code = ['message_edit', 'message_delete', 'message_fetch', 'message_send']
      .map((t) => tryIt(`comis_tools.invoke('${t}', { message_id: '1', text: 'x' })`).replace("{ message_id: '1', text: 'x' }", t === 'message_send' ? "{ text: 'x' }" : "{ message_id: '1', text: 'x' }"))
      .join('\n');
    const { out } = await run(h, code);
    expect(out.slice(0, 3).map((o) => o.code)).toEqual(['denied_by_origin', 'denied_by_origin', 'denied_by_origin']);
    expect(out[0].message).toContain('admin subset of message.*');
    expect(out[3]).toEqual({ ok: true, channel: 'file', channelId: 'default' });
    expect(auditRows(h.home)).toEqual(['message_edit', 'message_delete', 'message_fetch'].map((tool) => ({ tool, capability: 'none', decision: 'deny', reason: 'denied_by_origin' })));
  }, 120_000);
});

describe('the channel token never leaves comis', () => {
  const TOKEN = '777001:CANARY-telegram-token-q9z';
  let tg: FakeTelegram;
  beforeAll(async () => {
    tg = await startFakeTelegram('777001:the-token-telegram-expects');
  });
  afterAll(() => tg.close());

  function filesUnder(dir: string): string[] {
    if (!existsSync(dir)) return [];
    return readdirSync(dir).flatMap((name) => {
      const path = join(dir, name);
      return statSync(path).isDirectory() ? filesUnder(path) : [path];
    });
  }

  it('a refused token (401) shows in no error, stdout, stderr, store row, store file, log or outbox entry; control: the fake did receive it', async () => {
    const h = makeHome(
      `channels:\n  telegram:\n    type: telegram\n    tokenEnv: TG_TOKEN\n    baseUrl: ${tg.baseUrl}\n    maxAttempts: 1\nagents:\n  default:\n    autonomy:\n      durability:\n        enabled: true\n      message:\n        origin: telegram/chat123\n`,
    );
    const before = tg.calls.length;
    const code = tryIt(`comis_tools.message_send({ text: 'hello' }, 'tok-1')`);
    const res = await comisAsync(h.home, ['orchestrate', h.script('t.ts', `import { comis_tools } from './comis_tools.js';\n${code}`), '--json'], { TG_TOKEN: TOKEN });
    const body = parseJson(res.stdout);
    const out = JSON.parse(String(body.result.stdout).trim());
    expect(out).toEqual({ code: 'channel_refused', message: 'message_send: telegram channel "telegram": sendMessage refused: Unauthorized' });
    // Control: the token was used (the fake received it, and refused it as a wrong token).
    expect(tg.calls.length).toBe(before);
    expect(tg.unauthorized).toContain(TOKEN);
    const list = await comisAsync(h.home, ['outbox', 'list', '--state', 'all', '--json'], { TG_TOKEN: TOKEN });
    const listText = list.stdout + list.stderr;
    expect(JSON.parse(list.stdout).result.entries).toEqual([expect.objectContaining({ operationId: 'tok-1', state: 'failed', error: 'telegram channel "telegram": sendMessage refused: Unauthorized' })]);
    const retried = await comisAsync(h.home, ['outbox', 'retry', 'tok-1'], { TG_TOKEN: TOKEN });
    expect(retried.status).toBe(1);
    const everything = [res.stdout, res.stderr, listText, retried.stdout, retried.stderr];
    for (const file of filesUnder(h.home)) everything.push(readFileSync(file).toString('latin1'));
    const db = new Database(join(h.home, 'comis.db'), { readonly: true });
    for (const { name } of db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as Array<{ name: string }>) {
      everything.push(JSON.stringify(db.prepare(`SELECT * FROM "${name}"`).all()));
    }
    db.close();
    for (const text of everything) expect(text).not.toContain(TOKEN);
  }, 120_000);
});
