/**
 * The progress fork: while a child runs, a content-free
 * `session:sub_agent_progress` event every interval (30 s by default).
 *
 * Read-only by construction: the fork gets only a getter for the child's step
 * count and an emit function; it has no way to run, call or spawn anything.
 * Lifecycle-bound: {@link startProgressFork} is called when the child is
 * spawned and the returned stop() on its terminal boundary; the timer is
 * cleared there, so it never outlives the child.
 */
import type { SubAgentProgress } from './events.js';

export const DEFAULT_PROGRESS_INTERVAL_MS = 30_000;

export interface ProgressFork {
  stop(): void;
}

export function startProgressFork(options: { runId: string; agentId: string; startedAt: number; intervalMs?: number; steps: () => number; emit: (event: SubAgentProgress) => void; now?: () => number }): ProgressFork {
  const now = options.now ?? Date.now;
  let stopped = false;
  const timer = setInterval(
    () => {
      if (stopped) return;
      const steps = options.steps();
      const at = now();
      options.emit({
        type: 'session:sub_agent_progress',
        runId: options.runId,
        agentId: options.agentId,
        progressLine: `running, step ${steps}`,
        elapsedMs: at - options.startedAt,
        stepsExecuted: steps,
        timestamp: at,
      });
    },
    Math.max(10, options.intervalMs ?? DEFAULT_PROGRESS_INTERVAL_MS),
  );
  return {
    stop() {
      stopped = true;
      clearInterval(timer);
    },
  };
}
