/**
 * The coordinator TUI as a pure component: a header with totals and the
 * lead's context size, then one row per child (state, elapsed, steps, latest
 * progress line). Failures are red and carry their class.
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

function Row({ row, now, width }: { row: ChildRow; now: number; width: number }) {
  const elapsed = row.state === 'running' && row.startedAt !== undefined ? Math.max(row.elapsedMs, now - row.startedAt) : row.elapsedMs;
  const why = row.failureClass ?? row.errorCode;
  const line = why ? `${why}${row.progressLine ? ` · ${row.progressLine}` : ''}` : row.progressLine;
  return (
    <Box>
      <Text color={STATE_COLOR[row.state]}>{`${STATE_ICON[row.state]} ${row.childId.padEnd(width)} ${STATE_LABEL[row.state].padEnd(9)}`}</Text>
      <Text>{` ${row.state === 'queued' || row.state === 'skipped' ? '    -' : formatElapsed(elapsed).padStart(5)} ${String(row.steps).padStart(3)} steps  `}</Text>
      <Text dimColor={!why} color={why ? 'red' : undefined}>{line}</Text>
      {row.deniedCaps.length > 0 ? <Text color="yellow">{`  (denied ${row.deniedCaps.join(', ')})`}</Text> : null}
    </Box>
  );
}

export interface CoordinatorViewProps {
  state: CoordinatorViewState;
  now: number;
  follow?: boolean;
  /** Most rows shown; the rest are summarized (running and failed rows first). */
  maxRows?: number;
}

export function CoordinatorView({ state, now, follow = false, maxRows = 30 }: CoordinatorViewProps) {
  const t = totalsOf(state);
  const failures = t.failed + t.timed_out;
  const width = Math.min(24, Math.max(5, ...state.rows.map((r) => r.childId.length)));
  const rank = (r: ChildRow): number => (r.state === 'running' ? 0 : r.state === 'failed' || r.state === 'timed_out' ? 1 : r.state === 'queued' ? 3 : 2);
  const rows = state.rows.length <= maxRows ? state.rows : [...state.rows].sort((a, b) => rank(a) - rank(b)).slice(0, maxRows);
  return (
    <Box flexDirection="column">
      <Text bold>{`comis run ${state.planName} · ${state.planRunId} · lead ${state.leadAgentId} · context ${state.leadContextChars} chars${follow ? ' · following (read-only)' : ''}`}</Text>
      <Box>
        <Text>{`${state.rows.length} children: ${t.done} done · ${t.running} running · ${t.queued} queued · `}</Text>
        <Text color={failures > 0 ? 'red' : undefined} bold={failures > 0}>{`${t.failed} failed · ${t.timed_out} timed out`}</Text>
        <Text>{`${t.skipped ? ` · ${t.skipped} skipped` : ''}${t.cancelled ? ` · ${t.cancelled} cancelled` : ''}`}</Text>
      </Box>
      {rows.map((r) => (
        <Row key={r.childId} row={r} now={now} width={width} />
      ))}
      {rows.length < state.rows.length ? <Text dimColor>{`… ${state.rows.length - rows.length} more`}</Text> : null}
      {state.finished ? (
        <Text bold color={state.finished.outcome === 'success' ? 'green' : 'red'}>{`${state.finished.outcome} in ${formatElapsed(state.finished.durationMs)}`}</Text>
      ) : (
        <Text dimColor>{follow ? 'q: stop following (the run goes on)' : 'q or Ctrl-C: quit (running children are stopped)'}</Text>
      )}
    </Box>
  );
}
