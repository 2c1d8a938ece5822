/**
 * The coordinator TUI as a pure component: a header with totals and the
 * lead's context size, then one row per child (state, elapsed, tool calls,
 * latest progress line). Failures are red, carry their class and, in a live
 * run, the last lines of their stderr. Every line is cut at the terminal's
 * width rather than wrapped, so the layout holds on a narrow terminal.
 */
import { Box, Text } from 'ink';

import type { ChildState } from '../lib/coordinator/events.js';
import { totalsOf, type ChildRow, type CoordinatorViewState } from '../lib/coordinator/view-state.js';

const STATE_LABEL: Record<ChildState, string> = {
  queued: 'queued',
  running: 'running',
  done: 'done',
  failed: 'FAILED',
  timed_out: 'TIMED OUT',
  skipped: 'skipped',
  cancelled: 'cancelled',
};
const STATE_ICON: Record<ChildState, string> = { queued: '·', running: '▶', done: '✔', failed: '✘', timed_out: '⏱', skipped: '↷', cancelled: '■' };
const STATE_COLOR: Partial<Record<ChildState, string>> = { running: 'cyan', done: 'green', failed: 'red', timed_out: 'red', skipped: 'yellow', cancelled: 'yellow' };

export function formatElapsed(ms: number): string {
  const s = Math.floor(ms / 1000);
  return s < 60 ? `${(ms / 1000).toFixed(1)}s` : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}

/** The seed's progress line (`running, step N`) only repeats the state and the calls column. */
const BARE_PROGRESS = /^running, step \d+$/;
/** Lines of a failed child's stderr tail shown under its row (the whole tail is in --json). */
export const DETAIL_LINES = 5;

function Row({ row, now, width }: { row: ChildRow; now: number; width: number }) {
  const elapsed = row.state === 'running' && row.startedAt !== undefined ? Math.max(row.elapsedMs, now - row.startedAt) : row.elapsedMs;
  const why = row.failureClass ?? row.errorCode;
  const progress = BARE_PROGRESS.test(row.progressLine) ? '' : row.progressLine;
  const line = why ? `${why}${progress ? ` · ${progress}` : ''}` : progress;
  const calls = row.state === 'queued' || row.state === 'skipped' ? '     -' : `${String(row.steps).padStart(3)} ${row.steps === 1 ? 'call ' : 'calls'}`;
  // One Text per row, truncated at the terminal's edge: a narrow terminal cuts the row, never wraps it into the next.
  return (
    <Text wrap="truncate-end">
      <Text color={STATE_COLOR[row.state]}>{`${STATE_ICON[row.state]} ${row.childId.slice(0, width).padEnd(width)} ${STATE_LABEL[row.state].padEnd(9)}`}</Text>
      {` ${row.state === 'queued' || row.state === 'skipped' ? '    -' : formatElapsed(elapsed).padStart(5)} ${calls}  `}
      <Text dimColor={!why} color={why ? 'red' : undefined}>
        {line}
      </Text>
      {row.deniedCaps.length > 0 ? <Text color="yellow">{`  (denied ${row.deniedCaps.join(', ')})`}</Text> : null}
    </Text>
  );
}

/** The last lines of a failed child's stderr (already redacted and escaped by the coordinator). */
function Detail({ tail }: { tail: string }) {
  const lines = tail.split('\n');
  const shown = lines.slice(-DETAIL_LINES);
  return (
    <Box flexDirection="column" paddingLeft={4}>
      <Text dimColor wrap="truncate-end">{`stderr${lines.length > shown.length ? ` (last ${shown.length} of ${lines.length} lines; all in --json)` : ''}:`}</Text>
      {shown.map((l, i) => (
        <Text key={i} color="red" wrap="truncate-end">{`│ ${l.replaceAll('\t', '  ')}`}</Text>
      ))}
    </Box>
  );
}

export interface CoordinatorViewProps {
  state: CoordinatorViewState;
  now: number;
  follow?: boolean;
  /** Most rows shown; the rest are summarized (running and failed rows first). */
  maxRows?: number;
  /** Terminal width: below 80 columns the totals drop their zero counts. */
  columns?: number;
  /** What the first frame names before the plan has started (the plan file, or the followed id). */
  title?: string;
}

export function CoordinatorView({ state, now, follow = false, maxRows = 30, columns = 80, title = '' }: CoordinatorViewProps) {
  const help = (
    <Text dimColor wrap="truncate-end">
      {follow ? 'q: stop following (the run goes on)' : 'q or Ctrl-C: quit (running children are stopped)'}
    </Text>
  );
  if (state.planRunId === '') {
    // Before plan:started (config, plan and store are still loading): say so instead of an empty frame.
    return (
      <Box flexDirection="column">
        <Text bold wrap="truncate-end">
          {`comis run ${title}`.trimEnd()}
        </Text>
        <Text dimColor wrap="truncate-end">
          {follow ? 'reading the stored run…' : 'starting: reading the plan and config…'}
        </Text>
        {help}
      </Box>
    );
  }
  const t = totalsOf(state);
  const failures = t.failed + t.timed_out;
  const compact = columns < 80;
  const count = (n: number, label: string, always: boolean): string[] => (n > 0 || (always && !compact) ? [`${n} ${label}`] : []);
  const ok = [...count(t.done, 'done', true), ...count(t.running, 'running', true), ...count(t.queued, 'queued', true)];
  const bad = [...count(t.failed, 'failed', true), ...count(t.timed_out, 'timed out', true)];
  const rest = [...count(t.skipped, 'skipped', false), ...count(t.cancelled, 'cancelled', false)];
  // Room for the state, elapsed and calls columns (30 characters) and 14 of the progress line, enough for a failure class, on a narrow terminal.
  const width = Math.max(5, Math.min(24, columns - 44, Math.max(5, ...state.rows.map((r) => r.childId.length))));
  const rank = (r: ChildRow): number => (r.state === 'running' ? 0 : r.state === 'failed' || r.state === 'timed_out' ? 1 : r.state === 'queued' ? 3 : 2);
  const rows = state.rows.length <= maxRows ? state.rows : [...state.rows].sort((a, b) => rank(a) - rank(b)).slice(0, maxRows);
  return (
    <Box flexDirection="column">
      <Text bold wrap="truncate-end">{`comis run ${state.planName} · ${state.planRunId}${follow ? ' · following (read-only)' : ''}`}</Text>
      <Text wrap="truncate-end">{`lead ${state.leadAgentId} · context ${state.leadContextChars} chars`}</Text>
      <Text wrap="truncate-end">
        {`${state.rows.length} children: ${ok.join(' · ')}${ok.length && bad.length ? ' · ' : ''}`}
        <Text color={failures > 0 ? 'red' : undefined} bold={failures > 0}>
          {bad.join(' · ')}
        </Text>
        {rest.length ? ` · ${rest.join(' · ')}` : ''}
      </Text>
      {rows.map((r) => (
        <Box key={r.childId} flexDirection="column">
          <Row row={r} now={now} width={width} />
          {r.stderrTail !== undefined && (r.state === 'failed' || r.state === 'timed_out') ? <Detail tail={r.stderrTail} /> : null}
        </Box>
      ))}
      {rows.length < state.rows.length ? <Text dimColor>{`… ${state.rows.length - rows.length} more`}</Text> : null}
      <Text dimColor wrap="truncate-end">
        calls = tool calls the child made so far
      </Text>
      {state.finished ? <Text bold color={state.finished.outcome === 'success' ? 'green' : 'red'}>{`${state.finished.outcome} in ${formatElapsed(state.finished.durationMs)}`}</Text> : help}
    </Box>
  );
}
