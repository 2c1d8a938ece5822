/**
 * Crash injection with real processes: `comis orchestrate` runs scripts that
 * send numbered messages (durability on) and is SIGKILLed at random moments;
 * after each kill the next start sweeps the outbox and the script is run
 * again (a caller retrying its turn), until every message was sent. The
 * receiver must hold every message exactly once: 0 lost, 0 duplicated.
 *
 * Where each kill landed is read from the store right after it: a pending
 * row with 0 attempts is a kill between the outbox write and the delivery, a
 * pending row with attempts a kill during the delivery. Two deterministic
 * kill points (COMIS_TEST_OUTBOX_CRASH, a test-only hook that SIGKILLs comis
 * at exactly that moment) make sure both windows are hit whatever the timing.
 *
 * Bounded: the machine is shared, so the kill count is the target (102: 50 + 50 random, 2 fixed;
 * the issue asks for at least 100) and each cycle is one short run.
 */
import { mkdirSync, readFileSync, watch } from 'node:fs';
import { join } from 'node:path';

import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { comisAsync, startWebhookReceiver, type WebhookReceiver } from '../helpers/message-fakes.js';
import { makeHome, type Home } from '../helpers/orchestrate.js';

const WINDOW = 4;

interface Tally {
  kills: number;
  afterIntent: number;
  duringDelivery: number;
  completed: number;
  failedRuns: number;
}

function script(h: Home, from: number): string {
  const ns = Array.from({ length: WINDOW }, (_, i) => from + i);
  return h.script(
    `send-${from}.ts`,
    `import { comis_tools } from './comis_tools.js';
for (const n of ${JSON.stringify(ns)}) await comis_tools.message_send({ text: 'message ' + n }, 'm-' + n);
console.log('sent ${ns.join(',')}');`,
  );
}

function classify(home: string, tally: Tally): void {
  let db: Database.Database | undefined;
  try {
    db = new Database(join(home, 'comis.db'), { readonly: true, fileMustExist: true });
    const rows = db.prepare("SELECT attempts FROM outbox WHERE state = 'pending'").all() as Array<{ attempts: number }>;
    if (rows.some((r) => r.attempts === 0)) tally.afterIntent++;
    if (rows.some((r) => r.attempts > 0)) tally.duringDelivery++;
  } catch {
    /* killed before the store existed */
  } finally {
    db?.close();
  }
}

/**
 * Runs windows of WINDOW messages until `total` are sent, killing runs at
 * random (uniform over the span a clean run takes) until `kills` kills.
 */
async function harness(h: Home, total: number, kills: number, env: Record<string, string>, onActivity: (fire: () => void) => () => void): Promise<Tally> {
  const tally: Tally = { kills: 0, afterIntent: 0, duringDelivery: 0, completed: 0, failedRuns: 0 };
  const durations: number[] = [2000];
  let next = 1;
  const deadline = Date.now() + 900_000; // a loaded CI machine runs ~7 s a cycle: the kill target, not the clock, ends the loop
  while ((next <= total || tally.kills < kills) && Date.now() < deadline) {
    const from = next <= total ? next : total - WINDOW + 1; // once all are sent, later kills re-send the last window
    const kill = tally.kills < kills;
    const median = [...durations].sort((a, b) => a - b)[Math.floor(durations.length / 2)]!;
    const at = kill ? Math.floor(median * (0.25 + Math.random() * 0.8)) : 0;
    const t0 = Date.now();
    let timer: NodeJS.Timeout | undefined;
    // Every other kill is armed on the channel's activity (a line appended, a request received)
    // and fires 0-60 ms later: in the middle of the sends, where the windows that matter are.
    let disarm = (): void => undefined;
    const res = await comisAsync(h.home, ['orchestrate', script(h, from), '--json'], env, (child) => {
      if (!kill) return;
      // Once every message is out, a re-sent window is answered from the outbox without touching the
      // channel: no activity to arm on, so those kills are timed.
      if (tally.kills % 2 === 0 || next > total) timer = setTimeout(() => child.kill('SIGKILL'), at);
      else disarm = onActivity(() => void setTimeout(() => child.kill('SIGKILL'), Math.floor(Math.random() * 60)));
    });
    clearTimeout(timer);
    disarm();
    if (res.signal === 'SIGKILL') {
      tally.kills++;
      classify(h.home, tally);
      continue;
    }
    if (res.status !== 0) {
      // A send the flaky receiver refused through all its attempts fails the run: the caller retries the turn.
      expect(res.stdout, res.stderr).not.toBe('');
      expect(JSON.parse(res.stdout).result.failureClass, res.stderr).toBe('nonzero_exit');
      tally.failedRuns++;
      continue;
    }
    durations.push(Date.now() - t0);
    tally.completed++;
    if (next <= total) next += WINDOW;
  }
  // The sweep of the next start (any command that opens the store) delivers what the last kill left.
  const list = await comisAsync(h.home, ['outbox', 'list', '--state', 'all', '--limit', '10000', '--json'], env);
  expect(list.status, list.stderr).toBe(0);
  const entries = JSON.parse(list.stdout).result.entries as Array<{ state: string; operationId: string }>;
  expect(entries.filter((e) => e.state !== 'delivered')).toEqual([]);
  expect(entries).toHaveLength(total);
  return tally;
}

const config = (channel: string): string => `${channel}agents:\n  default:\n    autonomy:\n      durability:\n        enabled: true\n      message:\n        maxPerRun: 100\n        maxPerHour: 100000\n`;

describe('crash injection: SIGKILL comis orchestrate at random, then sweep', () => {
  let hook: WebhookReceiver;
  beforeAll(async () => {
    // Randomly 500s (20%) and never-answering requests (10%, past the 400 ms timeout); a 30 ms think time widens "during delivery".
    hook = await startWebhookReceiver({ secret: 'crash-secret-0123456', failRate: 0.2, hangRate: 0.1, delayMs: 30 });
  });
  afterAll(() => hook.close());

  it('deterministic kill points: after the outbox write, and during the delivery; the next start delivers once', async () => {
    for (const point of ['after-intent', 'during-delivery']) {
      const h = makeHome(config(''));
      const res = await comisAsync(h.home, ['orchestrate', script(h, 1), '--json'], { COMIS_TEST_OUTBOX_CRASH: point });
      expect(res.signal).toBe('SIGKILL');
      const db = new Database(join(h.home, 'comis.db'), { readonly: true });
      const rows = db.prepare('SELECT operation_id AS id, state, attempts FROM outbox').all();
      db.close();
      // during-delivery dies once the attempt is counted, before the line is written or marked delivered.
      expect(rows).toEqual([{ id: 'm-1', state: 'pending', attempts: point === 'after-intent' ? 0 : 1 }]);
      const list = await comisAsync(h.home, ['outbox', 'list', '--json'], {});
      expect(JSON.parse(list.stdout).result).toEqual({ swept: { delivered: 1, failed: 0, skipped: 0 }, entries: [] });
      const again = await comisAsync(h.home, ['orchestrate', script(h, 1), '--json']);
      expect(again.status, again.stderr).toBe(0);
      const ids = readFileSync(join(h.home, 'outbox', 'default.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).operationId as string);
      expect(ids).toEqual(['m-1', 'm-2', 'm-3', 'm-4']);
    }
  }, 120_000);

  it('file channel: 50 random kills; every message once in the JSONL, 0 lost, 0 duplicated', async () => {
    const h = makeHome(config(''));
    const total = 48;
    const dir = join(h.home, 'outbox');
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const onAppend = (fire: () => void): (() => void) => {
      let fired = false;
      const watcher = watch(dir, () => {
        if (!fired) fire();
        fired = true;
      });
      return () => watcher.close();
    };
    const tally = await harness(h, total, 50, { COMIS_TEST_OUTBOX_DELAY_MS: '25' }, onAppend);
    const ids = readFileSync(join(h.home, 'outbox', 'default.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l).operationId as string);
    const want = Array.from({ length: total }, (_, i) => `m-${i + 1}`);
    expect([...new Set(ids)].sort()).toEqual([...want].sort()); // 0 lost
    expect(ids).toHaveLength(total); // 0 duplicated
    expect(tally.kills).toBe(50);
    process.stderr.write(`outbox-crash file: ${JSON.stringify(tally)}\n`);
    // Kills between the outbox write and the delivery (the random ones; the deterministic test has both windows).
    expect(tally.afterIntent).toBeGreaterThan(0);
  }, 960_000);

  it('webhook that randomly 500s and times out: 50 random kills; every message one effect, 0 lost, 0 duplicated, every request signed', async () => {
    const h = makeHome(config(`channels:\n  hook:\n    type: webhook\n    url: ${hook.url}\n    secretEnv: HOOK_SECRET\n    timeoutMs: 400\n    maxAttempts: 3\n`).replace('      message:\n', '      message:\n        origin: hook/ops\n'));
    const total = 40;
    const onRequest = (fire: () => void): (() => void) => {
      hook.onRequest = () => {
        hook.onRequest = undefined;
        fire();
      };
      return () => (hook.onRequest = undefined);
    };
    const tally = await harness(h, total, 50, { HOOK_SECRET: 'crash-secret-0123456', COMIS_TEST_OUTBOX_DELAY_MS: '25' }, onRequest);
    const want = Array.from({ length: total }, (_, i) => `m-${i + 1}`);
    expect([...hook.effects.keys()].sort()).toEqual([...want].sort()); // exactly one effect per message
    for (const [key, body] of hook.effects) expect(body.text).toBe(`message ${key.slice(2)}`);
    expect(hook.requests.every((r) => r.signatureOk)).toBe(true);
    process.stderr.write(`outbox-crash webhook: ${JSON.stringify({ ...tally, requests: hook.requests.length, absorbedRedeliveries: hook.duplicates })}\n`);
    expect(tally.kills).toBe(50);
    // Kills during the delivery (the receiver thinks 30 ms, retries back off).
    expect(tally.duringDelivery).toBeGreaterThan(0);
  }, 960_000);
});
