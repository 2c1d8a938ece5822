import { render } from 'ink-testing-library';
import { describe, expect, it } from 'vitest';

import { Box } from 'ink';

import type { ChildDetail } from '../../src/lib/coordinator/coordinator.js';
import type { CoordinatorEvent } from '../../src/lib/coordinator/events.js';
import { childStderrTail, escapeForTerminal } from '../../src/lib/coordinator/stderr-tail.js';
import { initialViewState, reduceView } from '../../src/lib/coordinator/view-state.js';
import { CoordinatorApp } from '../../src/ui/coordinator-app.js';
import { CoordinatorView } from '../../src/ui/coordinator-view.js';
import { createEventBus } from '../../src/ui/event-bus.js';
import { formatChildDetail, formatNdjson, formatPlainLine } from '../../src/ui/line-renderers.js';

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

function frameAfter(list: (CoordinatorEvent | ChildDetail)[], now = T0 + 2000): string {
  const state = list.reduce(reduceView, initialViewState());
  return render(<CoordinatorView state={state} now={now} />).lastFrame() ?? '';
}

describe('CoordinatorView frames', () => {
  it('queued: every child listed, totals in the header', () => {
    const frame = frameAfter([started]);
    expect(frame).toContain('comis run demo · p-1\nlead lead · context 0 chars');
    expect(frame).toContain('4 children: 0 done · 0 running · 4 queued · 0 failed · 0 timed out');
    expect(frame).toMatch(/· fetch\s+queued/);
    expect(frame).toContain('(denied orch:write)');
    expect(frame).toContain('q or Ctrl-C: quit');
  });

  it('running: elapsed and tool calls, with a legend saying what the count is (no bare "step N")', () => {
    const frame = frameAfter(events);
    expect(frame).toMatch(/▶ fetch\s+running\s+2\.0s\s+4 calls\s*$/m);
    expect(frame).not.toMatch(/step \d/);
    expect(frame).toContain('calls = tool calls the child made so far');
    expect(frame).toMatch(/▶ slow\s+running/);
    expect(frame).toContain('2 running');
  });

  it('done, failed and timed out: failures visible at a glance', () => {
    const frame = frameAfter([...events, fin('fetch', 'done', { resultRef: { ref: 'x', bytes: 2048, kind: 'json' } }), fin('slow', 'timed_out', { failureClass: 'timeout' }), fin('parse', 'failed', { failureClass: 'nonzero_exit' })]);
    expect(frame).toMatch(/✔ fetch\s+done\s+1\.5s\s+2 calls\s+result 2048B json/);
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

const tail = ['Traceback (most recent call last):', '  File "job.py", line 3', 'one', 'two', 'three', 'KeyError: \\x1b[2J hosts'].join('\n');
const failedWithDetail: (CoordinatorEvent | ChildDetail)[] = [
  ...events,
  fin('fetch', 'done', { resultRef: { ref: 'x', bytes: 2048, kind: 'json' } }),
  fin('parse', 'failed', { failureClass: 'nonzero_exit' }),
  { type: 'child:detail', childId: 'parse', runId: 'r-parse', stderrTail: tail },
];

describe('failed child detail and narrow terminals', () => {
  it("a failed child's stderr tail shows under its row: its last lines, as given (already escaped)", () => {
    const frame = frameAfter(failedWithDetail);
    expect(frame).toMatch(/✘ parse\s+FAILED.*nonzero_exit\n\s+stderr \(last 5 of 6 lines; all in --json\):\n\s+│ {3}File "job\.py", line 3\n/);
    expect(frame).toContain('│ KeyError: \\x1b[2J hosts');
    expect(frame).not.toContain('Traceback');
  });

  it('holds together at 60 columns: every line fits, rows are cut rather than wrapped', () => {
    const long = { ...started, planName: 'a-plan-with-a-rather-long-name-for-a-terminal', children: [...started.children, { ...started.children[0]!, childId: 'a-child-id-of-thirty-two-chars-x' }] };
    const state = [
      long,
      ...failedWithDetail.slice(1),
      { type: 'session:sub_agent_progress', runId: 'r-slow', agentId: 'lead--slow', progressLine: 'a progress line that is long enough to reach the edge', elapsedMs: 1200, stepsExecuted: 12, timestamp: T0 + 1200 } as CoordinatorEvent,
    ].reduce(reduceView, initialViewState());
    const frame = render(
      <Box width={60}>
        <CoordinatorView state={state} now={T0 + 2000} columns={60} />
      </Box>,
    ).lastFrame()!;
    const lines = frame.split('\n');
    for (const l of lines) expect(l.length).toBeLessThanOrEqual(60);
    // One line per child row (no wrapped continuation lines), all children present, totals without zero counts.
    expect(lines.filter((l) => /^[·▶✔✘⏱↷■] /.test(l))).toHaveLength(5);
    // 3 header lines, 5 rows, the failed row's detail (1 + 5), the legend and the key help: nothing wrapped.
    expect(lines).toHaveLength(16);
    expect(frame).toContain('5 children: 1 done · 1 running · 2 queued · 1 failed');
    expect(frame).not.toContain('0 timed out');
    expect(frame).toMatch(/^▶ slow\s+running\s+2\.0s\s+12 calls\s+a progres/m);
    expect(frame).toMatch(/^· a-child-id-of-th queued/m); // the id is cut to leave room for the columns
    expect(frame).toContain('calls = tool calls the child made so far');
    expect(frame).toContain('│ KeyError');
  });

  it('the first frame, before the plan has started, says what is happening', () => {
    const app = render(<CoordinatorApp subscribe={() => () => undefined} onQuit={() => undefined} title="plan.yaml" />);
    expect(app.lastFrame()).toBe('comis run plan.yaml\nstarting: reading the plan and config…\nq or Ctrl-C: quit (running children are stopped)');
    app.unmount();
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
    expect(formatPlainLine(fin('slow', 'timed_out', { failureClass: 'timeout' }))).toBe('[slow] TIMED OUT (timeout) after 1500 ms, 2 tool calls; lead context 321 chars\n');
    const line = formatNdjson(events[3]!);
    expect(line.endsWith('\n')).toBe(true);
    expect(JSON.parse(line)).toEqual(events[3]);
  });

  it("plain lines say the step count is tool calls, and print a failed child's stderr tail indented", () => {
    expect(formatPlainLine(events[3]!, () => 'fetch')).toBe('[fetch] running, step 4 (tool calls so far), 1s\n');
    expect(formatChildDetail({ type: 'child:detail', childId: 'parse', runId: 'r-parse', stderrTail: 'a\nb' })).toBe('[parse] stderr (last 3 chars):\n  | a\n  | b\n');
  });
});

describe('stderr tail escaping', () => {
  it('shows every control character but newline and tab as text, and the bidi overrides too', () => {
    expect(escapeForTerminal('a\u001b[31mred\u0007\r\n\tb\u0000\u007f\u009b\u202e\u2066c')).toBe('a\\x1b[31mred\\x07\\r\n\tb\\0\\x7f\\x9b\\u{202e}\\u{2066}c');
    expect(escapeForTerminal('plain ünïcödé → ok')).toBe('plain ünïcödé → ok');
  });

  it('bounds the escaped tail at 2,000 chars, preferring a line start, and drops an empty one', () => {
    expect(childStderrTail(undefined)).toBeUndefined();
    expect(childStderrTail('  \n')).toBeUndefined();
    // Escaped, 2,046 chars: the cut lands in the first line, so the tail starts at the second.
    const t = childStderrTail(`${'x'.repeat(100)}\n${'y'.repeat(1900)}${'\u001b'.repeat(10)}\nlast\n`)!;
    expect(t).toBe(`${'y'.repeat(1900)}${'\\x1b'.repeat(10)}\nlast`);
    const noBreak = childStderrTail('y'.repeat(5000))!;
    expect(noBreak).toHaveLength(2000);
  });
});
