/**
 * The two non-TTY renderers of the coordinator stream: plain lines for
 * humans (`--no-tui`, or no TTY) and NDJSON for machines (`--json`).
 */
import type { ChildDetail } from '../lib/coordinator/coordinator.js';
import type { CoordinatorEvent } from '../lib/coordinator/events.js';

export function formatNdjson(event: CoordinatorEvent): string {
  return `${JSON.stringify(event)}\n`;
}

const WORDS = { queued: 'queued', running: 'running', done: 'done', failed: 'FAILED', timed_out: 'TIMED OUT', skipped: 'skipped', cancelled: 'cancelled' } as const;

/** One human line per event (progress included), no colour. */
export function formatPlainLine(event: CoordinatorEvent, childOf: (runId: string) => string | undefined = () => undefined): string {
  switch (event.type) {
    case 'plan:started': {
      const denied = event.children.filter((c) => c.deniedCaps.length > 0).map((c) => `${c.childId}: ${c.deniedCaps.join(', ')}`);
      return `plan ${event.planName} (${event.planRunId}): ${event.children.length} children, concurrency ${event.concurrency}, lead ${event.leadAgentId} (${event.leadRole}), session ${event.sessionKey}\n${denied.length ? `denied capabilities (the lead lacks them; children run without): ${denied.join('; ')}\n` : ''}`;
    }
    case 'child:started':
      return `[${event.childId}] running (run ${event.runId}, agent ${event.agentId})\n`;
    case 'session:sub_agent_progress':
      // The seed's "running, step N": N is the child's tool calls so far, which the line says.
      return `[${childOf(event.runId) ?? event.runId}] ${event.progressLine} (tool calls so far), ${Math.round(event.elapsedMs / 1000)}s\n`;
    case 'child:finished': {
      const why = event.failureClass ?? event.errorCode;
      const ref = event.resultRef ? `, result ${event.resultRef.bytes}B ${event.resultRef.kind}` : '';
      return `[${event.childId}] ${WORDS[event.state]}${why ? ` (${why})` : ''} after ${event.durationMs} ms, ${event.stepsExecuted} tool call${event.stepsExecuted === 1 ? '' : 's'}${ref}; lead context ${event.leadContextChars} chars\n`;
    }
    case 'plan:finished': {
      const t = event.totals;
      return `plan ${event.outcome} in ${event.durationMs} ms: ${t.done} done, ${t.failed} failed, ${t.timed_out} timed out, ${t.skipped} skipped, ${t.cancelled} cancelled; lead context ${event.leadContextChars} chars\n`;
    }
  }
}

/** A failed child's stderr tail (already redacted and escaped), indented under its line. */
export function formatChildDetail(detail: ChildDetail): string {
  return `[${detail.childId}] stderr (last ${detail.stderrTail.length} chars):\n${detail.stderrTail
    .split('\n')
    .map((l) => `  | ${l}\n`)
    .join('')}`;
}

/** A plain renderer that remembers which child a runId belongs to. */
export function createPlainRenderer(write: (text: string) => void): (event: CoordinatorEvent) => void {
  const children = new Map<string, string>();
  return (event) => {
    if (event.type === 'child:started') children.set(event.runId, event.childId);
    write(formatPlainLine(event, (id) => children.get(id)));
  };
}
