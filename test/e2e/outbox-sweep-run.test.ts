/**
 * A plain `comis orchestrate` still sweeps the outbox: the send a crash left
 * pending is delivered by the next run, whatever that run's script does. The
 * run probes the outbox on the connection it records on (once its jail is
 * spawned) and sweeps on a connection of its own only when something is
 * pending (src/lib/orchestrate/execute.ts); an empty outbox loads nothing of
 * the sweep (test/e2e/run-hot-path.test.ts).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';

import { comisAsync } from '../helpers/message-fakes.js';
import { makeHome } from '../helpers/orchestrate.js';

const config = 'agents:\n  default:\n    autonomy:\n      durability:\n        enabled: true\n      message:\n        maxPerRun: 10\n';

describe('the outbox sweep of a plain run', () => {
  it('a send left pending by a crash is delivered once by the next orchestrate run, and the run is recorded', async () => {
    const h = makeHome(config);
    const send = h.script('send.ts', `import { comis_tools } from './comis_tools.js';\nawait comis_tools.message_send({ text: 'hello' }, 'm-1');\nconsole.log('sent');`);
    const crashed = await comisAsync(h.home, ['orchestrate', send, '--json'], { COMIS_TEST_OUTBOX_CRASH: 'after-intent' });
    expect(crashed.signal).toBe('SIGKILL');
    const jsonl = join(h.home, 'outbox', 'default.jsonl');
    // Control: the intent is written and nothing was delivered.
    expect(existsSync(jsonl) ? readFileSync(jsonl, 'utf8') : '').toBe('');
    const pending = (): unknown[] => {
      const db = new Database(join(h.home, 'comis.db'), { readonly: true });
      try {
        return db.prepare("SELECT operation_id FROM outbox WHERE state = 'pending'").all();
      } finally {
        db.close();
      }
    };
    expect(pending()).toHaveLength(1);
    const plain = h.script('plain.ts', `console.log('nothing to send');`);
    const run = await comisAsync(h.home, ['orchestrate', plain, '--json'], {});
    expect(run.status, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout).result.stdout).toBe('nothing to send\n');
    const lines = readFileSync(jsonl, 'utf8').trim().split('\n');
    expect(lines.map((l) => JSON.parse(l).operationId as string)).toEqual(['m-1']);
    expect(pending()).toEqual([]);
    // The run itself was recorded on the connection that probed the outbox.
    const db = new Database(join(h.home, 'comis.db'), { readonly: true });
    try {
      expect(db.prepare('SELECT COUNT(*) AS n FROM runs WHERE outcome = ?').get('success')).toEqual({ n: 1 });
    } finally {
      db.close();
    }
  }, 120_000);
});
