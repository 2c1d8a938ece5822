/**
 * The coordinator's event stream: one tagged union, rendered three ways (the
 * Ink TUI, plain lines, NDJSON) and stored for `comis run --follow`.
 *
 * Content-free by construction: ids, names, counts, durations, closed enums
 * and sizes only. No child stdout, summary text, script or tool result is ever
 * carried by an event; summaries travel in the run's result only.
 */
import type { Capability } from '../capabilities/capabilities.js';
import type { FailureClass } from '../store/runs.js';

export const CHILD_STATES = ['queued', 'running', 'done', 'failed', 'timed_out', 'skipped', 'cancelled'] as const;
export type ChildState = (typeof CHILD_STATES)[number];

export interface PlannedChild {
  childId: string;
  agentId: string;
  dependsOn: string[];
  requestedCaps: Capability[];
  grantedCaps: Capability[];
  /** Requested but not held by the lead: the child runs without them. */
  deniedCaps: Capability[];
}

/** The seed's progress fork event: an advance signal, never a result. */
export interface SubAgentProgress {
  type: 'session:sub_agent_progress';
  runId: string;
  agentId: string;
  progressLine: string;
  elapsedMs: number;
  stepsExecuted: number;
  timestamp: number;
}

export interface ResultRefInfo {
  /** Path relative to $COMIS_HOME: workspaces/<childAgentId>/comis-results/<runId>.stdout */
  ref: string;
  bytes: number;
  kind: string;
}

export type CoordinatorEvent =
  | {
      type: 'plan:started';
      planRunId: string;
      sessionKey: string;
      planName: string;
      leadAgentId: string;
      leadRole: 'worker' | 'coordinator';
      concurrency: number;
      progressIntervalMs: number;
      children: PlannedChild[];
      timestamp: number;
    }
  | { type: 'child:started'; planRunId: string; childId: string; runId: string; agentId: string; timestamp: number }
  | SubAgentProgress
  | {
      type: 'child:finished';
      planRunId: string;
      childId: string;
      runId: string | undefined;
      agentId: string;
      state: ChildState;
      durationMs: number;
      stepsExecuted: number;
      failureClass?: FailureClass | undefined;
      errorCode?: string | undefined;
      summaryChars: number;
      resultRef?: ResultRefInfo | undefined;
      /** Size of the lead's context after this child's announcement was added. */
      leadContextChars: number;
      timestamp: number;
    }
  | {
      type: 'plan:finished';
      planRunId: string;
      outcome: 'success' | 'failure' | 'interrupted';
      durationMs: number;
      totals: Record<ChildState, number>;
      leadContextChars: number;
      timestamp: number;
    };
