import { render } from 'ink-testing-library';
import { describe, expect, it } from 'vitest';

import type { CoordinatorEvent } from '../../src/lib/coordinator/events.js';
import { initialViewState, reduceView } from '../../src/lib/coordinator/view-state.js';
import { CoordinatorApp } from '../../src/ui/coordinator-app.js';
import { CoordinatorView } from '../../src/ui/coordinator-view.js';
import { createEventBus } from '../../src/ui/event-bus.js';
import { formatNdjson, formatPlainLine } from '../../src/ui/line-renderers.js';

const T0 = 1_000_000;
const started: CoordinatorEvent = {
  type: 'plan:started',
  planRunId: 'p-1',
  sessionKey: 's-1',
  planName: 'demo',
  leadAgentId: 'lead',
  leadRole: 'coordinator',
  concurrency: 2,
  progressIntervalMs: 200,
  children: ['fetch', 'parse', 'slow', 'write'].map((id) => ({
    childId: id,
    agentId: `lead--${id}`,
    dependsOn: [],
    requestedCaps: id === 'write' ? ['orch:write'] : [],
    grantedCaps: [],
    deniedCaps: id === 'write' ? ['orch:write'] : [],
  })),
  timestamp: T0,
};
const fin = (childId: string, state: 'done' | 'failed' | 'timed_out', extra: Partial<Extract<CoordinatorEvent, { type: 'child:finished' }>> = {}): CoordinatorEvent => ({
  type: 'child:finished',
  planRunId: 'p-1',
  childId,
  runId: `r-${childId}`,
  agentId: `lead--${childId}`,
  state,
  durationMs: 1500,
  stepsExecuted: 2,
  summaryChars: 10,
  leadContextChars: 321,
  timestamp: T0 + 1500,
  ...extra,
});
const events: CoordinatorEvent[] = [
  started,
  { type: 'child:started', planRunId: 'p-1', childId: 'fetch', runId: 'r-fetch', agentId: 'lead--fetch', timestamp: T0 },
  { type: 'child:started', planRunId: 'p-1', childId: 'slow', runId: 'r-slow', agentId: 'lead--slow', timestamp: T0 },
  { type: 'session:sub_agent_progress', runId: 'r-fetch', agentId: 'lead--fetch', progressLine: 'running, step 4', elapsedMs: 1200, stepsExecuted: 4, timestamp: T0 + 1200 },
];

function frameAfter(list: CoordinatorEvent[], now = T0 + 2000): string {
  const state = list.reduce(reduceView, initialViewState());
  return render(<CoordinatorView state={state} now={now} />).lastFrame() ?? '';
}

describe('CoordinatorView frames', () => {
  it('queued: every child listed, totals in the header', () => {
    const frame = frameAfter([started]);
    expect(frame).toContain('comis run demo · p-1 · lead lead · context 0 chars');
    expect(frame).toContain('4 children: 0 done · 0 running · 4 queued · 0 failed · 0 timed out');
    expect(frame).toMatch(/· fetch\s+queued/);
    expect(frame).toContain('(denied orch:write)');
    expect(frame).toContain('q or Ctrl-C: quit');
  });

  it('running: elapsed, steps and the latest progress line', () => {
    const frame = frameAfter(events);
    expect(frame).toMatch(/▶ fetch\s+running\s+2\.0s\s+4 steps\s+running, step 4/);
    expect(frame).toMatch(/▶ slow\s+running/);
    expect(frame).toContain('2 running');
  });

  it('done, failed and timed out: failures visible at a glance', () => {
    const frame = frameAfter([
      ...events,
      fin('fetch', 'done', { resultRef: { ref: 'x', bytes: 2048, kind: 'json' } }),
      fin('slow', 'timed_out', { failureClass: 'timeout' }),
      fin('parse', 'failed', { failureClass: 'nonzero_exit' }),
    ]);
    expect(frame).toMatch(/✔ fetch\s+done\s+1\.5s\s+2 steps\s+result 2048B json/);
    expect(frame).toMatch(/⏱ slow\s+TIMED OUT.*timeout/);
    expect(frame).toMatch(/✘ parse\s+FAILED.*nonzero_exit/);
    expect(frame).toContain('1 done · 0 running · 1 queued · 1 failed · 1 timed out');
    expect(frame).toContain('context 321 chars');
  });

  it('finished: the outcome replaces the key help', () => {
    const frame = frameAfter([...events, { type: 'plan:finished', planRunId: 'p-1', outcome: 'failure', durationMs: 3000, totals: {} as never, leadContextChars: 400, timestamp: T0 + 3000 }]);
    expect(frame).toContain('failure in 3.0s');
    expect(frame).not.toContain('q or Ctrl-C');
  });
});

describe('CoordinatorApp', () => {
  it('follows the stream and quits on q', async () => {
    const bus = createEventBus();
    let quit = 0;
    const app = render(<CoordinatorApp subscribe={bus.subscribe} onQuit={() => quit++} follow />);
    for (const e of events) bus.publish(e);
    await new Promise((r) => setTimeout(r, 50));
    expect(app.lastFrame()).toContain('following (read-only)');
    expect(app.lastFrame()).toMatch(/fetch\s+running/);
    app.stdin.write('q');
    await new Promise((r) => setTimeout(r, 20));
    expect(quit).toBe(1);
    app.unmount();
  });
});

describe('line renderers', () => {
  it('plain lines and NDJSON of the same events', () => {
    expect(formatPlainLine(started)).toContain('denied capabilities (the lead lacks them; children run without): write: orch:write');
    expect(formatPlainLine(fin('slow', 'timed_out', { failureClass: 'timeout' }))).toBe('[slow] TIMED OUT (timeout) after 1500 ms, 2 steps; lead context 321 chars\n');
    const line = formatNdjson(events[3]!);
    expect(line.endsWith('\n')).toBe(true);
    expect(JSON.parse(line)).toEqual(events[3]);
  });
});
