/**
 * What crosses back from a child to the lead: a bounded summary plus the
 * ResultRef drill-in line, and nothing else.
 *
 * The child chooses its summary through stdout: the LAST line that starts with
 * `SUMMARY:` (the rest of that line is the summary). Without one, the lead gets
 * the head and tail of the child's stdout, bounded the same way.
 */
import type { ChildState, ResultRefInfo } from './events.js';

export const SUMMARY_PREFIX = 'SUMMARY:';

/**
 * A copy of `s` that shares no memory with the string it was cut from. V8's
 * slice/split/trim and template literals return views (sliced and cons
 * strings) that keep their whole parent alive: a 2,000-char summary cut from
 * a child's stdout kept that stdout (up to 120,000 chars) in memory for as
 * long as the plan's report lived, so the coordinator grew with every child.
 * Prefixing makes a pair, and slicing flattens the pair into a fresh string
 * (one byte a character when it can be) of which the result is a view:
 * `s`'s parent is no longer referenced. Code units are kept as they are.
 */
export function detached(s: string): string {
  return ` ${s}`.slice(1);
}

/** Cuts `text` to at most `max` characters, keeping head and tail around a marker; the result is {@link detached} from `text`. */
export function boundSummary(text: string, max: number): string {
  if (text.length <= max) return detached(text);
  const marker = `\n[… ${text.length} chars, cut for the lead; drill into the result …]\n`;
  const room = Math.max(0, max - marker.length);
  const head = Math.ceil(room * 0.6);
  const tail = room - head;
  return detached(`${text.slice(0, head)}${marker}${tail > 0 ? text.slice(text.length - tail) : ''}`.slice(0, max));
}

/** The child's chosen summary (last `SUMMARY:` line), else the head and tail of its stdout; always ≤ max chars. */
export function summarizeStdout(stdout: string, max: number): { text: string; chosen: boolean } {
  const lines = stdout.split('\n');
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i]!;
    if (line.startsWith(SUMMARY_PREFIX)) return { text: boundSummary(line.slice(SUMMARY_PREFIX.length).trim(), max), chosen: true };
  }
  return { text: boundSummary(stdout.trimEnd(), max), chosen: false };
}

/** The seed's drill-in line. */
export function drillInLine(ref: ResultRefInfo): string {
  return `Full result (drill in with read/grep/jq): ${ref.ref} (${ref.bytes}B, ${ref.kind})`;
}

const STATE_WORDS: Record<ChildState, string> = {
  queued: 'queued',
  running: 'running',
  done: 'done',
  failed: 'failed',
  timed_out: 'timed out',
  skipped: 'skipped',
  cancelled: 'cancelled',
};

/** The whole announcement the lead's context grows by for one child. */
export function announce(a: { childId: string; state: ChildState; durationMs: number; stepsExecuted: number; detail?: string | undefined; summary: string; resultRef?: ResultRefInfo | undefined }): string {
  const head = `[${a.childId}] ${STATE_WORDS[a.state]}${a.detail ? ` (${a.detail})` : ''} in ${a.durationMs} ms, ${a.stepsExecuted} tool call${a.stepsExecuted === 1 ? '' : 's'}`;
  return [head, ...(a.summary ? [a.summary] : []), ...(a.resultRef ? [drillInLine(a.resultRef)] : [])].join('\n') + '\n';
}
