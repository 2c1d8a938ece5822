/**
 * The start-up sweep over real SQLite rows and real files: each closed-enum
 * orphan reason, what stays resumable, and what is reclaimed. Nothing runs.
 */
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { DURABLE_TTL_MS, endDurableRun, getDurableRun, processStartedAt, startDurableRun, sweepDurableRuns } from '../../src/lib/store/durable-runs.js';
import { openStore } from '../../src/lib/store/store.js';
import { tempDir } from '../helpers/temp.js';

function area(home: string, runId: string, files: string[]): void {
  mkdirSync(join(home, 'durable', runId), { recursive: true });
  for (const f of files) writeFileSync(join(home, 'durable', runId, f), '{}');
}

describe('the durable-runs sweep', () => {
  it('settles each resumable row by what is on disk, with a closed-enum reason, and reclaims orphans', () => {
    const home = tempDir();
    const s = openStore({ home });
    const now = Date.now();
    const mk = (runId: string, files: string[], checkpoint: boolean, at = now): void => {
      area(home, runId, files);
      startDurableRun(s.db, { runId, kind: 'orchestrate', agentId: 'a', sessionKey: 'k', scriptRef: `durable/${runId}/script.json` }, at);
      endDurableRun(s.db, runId, { status: 'resumable', ...(checkpoint ? { checkpointRef: `durable/${runId}/checkpoint.json` } : {}) }, at);
    };
    mk('r-ok', ['script.json', 'checkpoint.json'], true);
    mk('r-nocp', ['script.json'], false);
    mk('r-cpgone', ['script.json'], true);
    mk('r-scriptgone', ['checkpoint.json'], true);
    mk('r-old', ['script.json', 'checkpoint.json'], true, now - DURABLE_TTL_MS - 1000);
    const report = sweepDurableRuns(s.db, home, now);
    expect(report.orphaned.sort((a, b) => a.runId.localeCompare(b.runId))).toEqual([
      { runId: 'r-cpgone', reason: 'checkpoint_missing' },
      { runId: 'r-old', reason: 'expired' },
      { runId: 'r-scriptgone', reason: 'script_missing' },
    ]);
    expect(getDurableRun(s.db, 'r-ok')?.status).toBe('resumable');
    expect(getDurableRun(s.db, 'r-nocp')?.status).toBe('resumable');
    expect(existsSync(join(home, 'durable', 'r-ok'))).toBe(true);
    for (const gone of ['r-cpgone', 'r-old', 'r-scriptgone']) expect(existsSync(join(home, 'durable', gone))).toBe(false);
    // Idempotent: a second sweep changes nothing.
    expect(sweepDurableRuns(s.db, home, now)).toEqual({ interrupted: [], orphaned: [], reclaimed: [] });
    s.close();
  });

  it('a running row of a live process is left alone; of a dead one, it is interrupted', () => {
    const home = tempDir();
    const s = openStore({ home });
    area(home, 'r-live', ['script.json']);
    startDurableRun(s.db, { runId: 'r-live', kind: 'orchestrate', agentId: 'a', sessionKey: 'k', scriptRef: 'durable/r-live/script.json' });
    expect(sweepDurableRuns(s.db, home).interrupted).toEqual([]);
    // Positive control: the same row owned by a process that is gone.
    s.db.prepare("UPDATE resumable_runs SET owner_pid = 2147483000 WHERE run_id = 'r-live'").run();
    expect(sweepDurableRuns(s.db, home)).toMatchObject({ interrupted: ['r-live'], orphaned: [{ runId: 'r-live', reason: 'interrupted' }] });
    s.close();
  });

  it('a completed run keeps its area for replay until it expires, then the area is reclaimed', () => {
    const home = tempDir();
    const s = openStore({ home });
    const now = Date.now();
    area(home, 'r-done', ['script.json', 'calls.jsonl']);
    startDurableRun(s.db, { runId: 'r-done', kind: 'orchestrate', agentId: 'a', sessionKey: 'k' }, now);
    endDurableRun(s.db, 'r-done', { status: 'completed' }, now);
    sweepDurableRuns(s.db, home, now + 1000);
    expect(existsSync(join(home, 'durable', 'r-done'))).toBe(true);
    sweepDurableRuns(s.db, home, now + DURABLE_TTL_MS + 1000);
    expect(existsSync(join(home, 'durable', 'r-done'))).toBe(false);
    expect(getDurableRun(s.db, 'r-done')?.status).toBe('reclaimed');
    rmSync(home, { recursive: true, force: true });
    s.close();
  });

  it('a running plan run: left alone while its comis process lives; interrupted once it is gone or its pid names a later process', () => {
    const home = tempDir();
    const s = openStore({ home });
    const insert = s.db.prepare("INSERT INTO plan_runs (plan_run_id, session_key, lead_agent_id, plan_name, pid, started_at, status, child_count) VALUES (?, 'k', 'a', 'p', ?, ?, 'running', 1)");
    const ourStart = processStartedAt(process.pid)!;
    expect(Math.abs(ourStart - (Date.now() - process.uptime() * 1000))).toBeLessThan(5000);
    insert.run('p-live', process.pid, Date.now());
    insert.run('p-dead', 2147483000, Date.now());
    // Our pid, but the plan started a minute before this process did: the pid was reused.
    insert.run('p-reused', process.pid, ourStart - 60_000);
    const report = sweepDurableRuns(s.db, home);
    expect((report.interruptedPlans ?? []).sort()).toEqual(['p-dead', 'p-reused']);
    const status = (id: string): unknown => (s.db.prepare('SELECT status FROM plan_runs WHERE plan_run_id = ?').get(id) as { status: string }).status;
    expect([status('p-live'), status('p-dead'), status('p-reused')]).toEqual(['running', 'interrupted', 'interrupted']);
    s.close();
  });
});
