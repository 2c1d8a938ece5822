import { describe, expect, it } from 'vitest';

import type { CoordinatorEvent } from '../../src/lib/coordinator/events.js';
import { createPlanEventLog, followPlanRun, planRunExists } from '../../src/lib/coordinator/event-log.js';
import { openStore } from '../../src/lib/store/store.js';
import { tempDir } from '../helpers/temp.js';

const started: CoordinatorEvent = {
  type: 'plan:started',
  planRunId: 'p-1',
  sessionKey: 's-1',
  planName: 'demo',
  leadAgentId: 'lead',
  leadRole: 'coordinator',
  concurrency: 1,
  progressIntervalMs: 100,
  children: [{ childId: 'a', agentId: 'lead--a', dependsOn: [], requestedCaps: ['orch:write'], grantedCaps: [], deniedCaps: ['orch:write'] }],
  timestamp: 1,
};

describe('plan event log', () => {
  it('stores content-free events and child states; follow replays them to the end', async () => {
    const store = openStore({ home: tempDir() });
    const log = createPlanEventLog(store.db);
    const events: CoordinatorEvent[] = [
      started,
      { type: 'child:started', planRunId: 'p-1', childId: 'a', runId: 'r-a', agentId: 'lead--a', timestamp: 2 },
      { type: 'session:sub_agent_progress', runId: 'r-a', agentId: 'lead--a', progressLine: 'running, step 1', elapsedMs: 100, stepsExecuted: 1, timestamp: 3 },
      { type: 'child:finished', planRunId: 'p-1', childId: 'a', runId: 'r-a', agentId: 'lead--a', state: 'done', durationMs: 150, stepsExecuted: 1, summaryChars: 9, leadContextChars: 120, timestamp: 4 },
      { type: 'plan:finished', planRunId: 'p-1', outcome: 'success', durationMs: 5, totals: {} as never, leadContextChars: 120, timestamp: 5 },
    ];
    for (const e of events) log.append(e);
    expect(planRunExists(store.db, 'p-1')).toBe(true);
    expect(store.db.prepare('SELECT state, steps, summary_chars, denied_caps FROM plan_children').get()).toEqual({ state: 'done', steps: 1, summary_chars: 9, denied_caps: 'orch:write' });
    expect(store.db.prepare('SELECT status, lead_context_chars FROM plan_runs').get()).toEqual({ status: 'success', lead_context_chars: 120 });
    expect(store.db.prepare("SELECT agent_id FROM sessions WHERE session_key = 's-1'").get()).toEqual({ agent_id: 'lead' });
    expect((store.db.prepare("SELECT plan_run_id FROM plan_events WHERE type = 'session:sub_agent_progress'").get() as { plan_run_id: string }).plan_run_id).toBe('p-1');
    const seen: CoordinatorEvent[] = [];
    expect(await followPlanRun({ db: store.db, planRunId: 'p-1', onEvent: (e) => seen.push(e) })).toBe('success');
    expect(seen).toEqual(events);
    store.close();
  });

  it('a run whose process is gone ends the follow as interrupted', async () => {
    const store = openStore({ home: tempDir() });
    createPlanEventLog(store.db).append(started);
    const seen: CoordinatorEvent[] = [];
    expect(await followPlanRun({ db: store.db, planRunId: 'p-1', onEvent: (e) => seen.push(e), isAlive: () => false, pollMs: 10 })).toBe('interrupted');
    expect(seen.map((e) => e.type)).toEqual(['plan:started']);
    store.close();
  });
});
