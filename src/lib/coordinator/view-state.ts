/**
 * The coordinator view as data: a pure fold of the event stream into rows and
 * totals. The Ink TUI, the plain renderer and --follow all render this.
 */
import type { ChildDetail } from './coordinator.js';
import { CHILD_STATES, type ChildState, type CoordinatorEvent } from './events.js';

export interface ChildRow {
  childId: string;
  agentId: string;
  runId: string | undefined;
  state: ChildState;
  startedAt: number | undefined;
  elapsedMs: number;
  steps: number;
  progressLine: string;
  deniedCaps: string[];
  failureClass?: string | undefined;
  errorCode?: string | undefined;
  resultBytes?: number | undefined;
  /** A failed child's escaped stderr tail (live runs only: --follow never has it). */
  stderrTail?: string | undefined;
}

export interface CoordinatorViewState {
  planRunId: string;
  planName: string;
  leadAgentId: string;
  concurrency: number;
  rows: ChildRow[];
  leadContextChars: number;
  startedAt: number;
  finished: { outcome: 'success' | 'failure' | 'interrupted'; durationMs: number } | undefined;
}

export function initialViewState(): CoordinatorViewState {
  return { planRunId: '', planName: '', leadAgentId: '', concurrency: 0, rows: [], leadContextChars: 0, startedAt: 0, finished: undefined };
}

export function totalsOf(state: CoordinatorViewState): Record<ChildState, number> {
  const t = Object.fromEntries(CHILD_STATES.map((s) => [s, 0])) as Record<ChildState, number>;
  for (const r of state.rows) t[r.state]++;
  return t;
}

/** Applies one event (or a live child detail); returns a new state (rows are copied on change). */
export function reduceView(state: CoordinatorViewState, event: CoordinatorEvent | ChildDetail): CoordinatorViewState {
  switch (event.type) {
    case 'child:detail':
      return { ...state, rows: state.rows.map((r) => (r.childId === event.childId ? { ...r, stderrTail: event.stderrTail } : r)) };
    case 'plan:started':
      return {
        ...state,
        planRunId: event.planRunId,
        planName: event.planName,
        leadAgentId: event.leadAgentId,
        concurrency: event.concurrency,
        startedAt: event.timestamp,
        rows: event.children.map((c) => ({ childId: c.childId, agentId: c.agentId, runId: undefined, state: 'queued', startedAt: undefined, elapsedMs: 0, steps: 0, progressLine: '', deniedCaps: c.deniedCaps })),
      };
    case 'child:started':
      return { ...state, rows: state.rows.map((r) => (r.childId === event.childId ? { ...r, state: 'running', runId: event.runId, startedAt: event.timestamp, progressLine: 'started' } : r)) };
    case 'session:sub_agent_progress':
      return { ...state, rows: state.rows.map((r) => (r.runId === event.runId ? { ...r, elapsedMs: event.elapsedMs, steps: event.stepsExecuted, progressLine: event.progressLine } : r)) };
    case 'child:finished':
      return {
        ...state,
        leadContextChars: event.leadContextChars,
        rows: state.rows.map((r) =>
          r.childId === event.childId
            ? {
                ...r,
                state: event.state,
                runId: event.runId,
                elapsedMs: event.durationMs,
                steps: event.stepsExecuted,
                failureClass: event.failureClass,
                errorCode: event.errorCode,
                resultBytes: event.resultRef?.bytes,
                progressLine: event.resultRef ? `result ${event.resultRef.bytes}B ${event.resultRef.kind}` : r.progressLine,
              }
            : r,
        ),
      };
    case 'plan:finished':
      return { ...state, leadContextChars: event.leadContextChars, finished: { outcome: event.outcome, durationMs: event.durationMs } };
  }
}
