/**
 * `comis replay <runId>`: a durable run's pinned bytes re-spawned in the same
 * jail (its workspace bound read-only: the only writable place is the jail's
 * own /tmp scratch) against a replay socket. The socket keeps the gate (lease,
 * policy, capabilities) but its tools act on nothing: each call is answered
 * from the run's recording, in order. A call whose tool or params differ from
 * the recording at that index is a `replay_divergence` (the script sees it
 * thrown; the report names the index). MCP calls are refused (no server is
 * started), so a replay never sends, fetches or writes anything.
 */
import { CapCallError } from '../capsocket/protocol.js';
import { TOOL_TABLE } from '../capabilities/tool-table.js';
import type { ToolImpl } from './dispatch.js';
import type { RecordedCall } from './durable.js';

export interface ReplayCall {
  index: number;
  tool: string;
  recordedTool?: string;
  match: boolean;
}

export interface ReplayLog {
  calls: ReplayCall[];
  divergence?: { index: number; recordedTool?: string; tool: string; why: 'tool' | 'params' | 'extra_call' };
}

/** JSON with sorted keys, so two equal values compare equal whatever their key order. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => (v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v));
}

/** The replay socket's tools: every table tool answered from `calls`, in order; `log` collects the comparison. */
export function replayTools(calls: readonly RecordedCall[], log: ReplayLog): Record<string, ToolImpl> {
  let next = 0;
  const answer = (tool: string, args: unknown): unknown => {
    const index = next++;
    const rec = calls[index];
    const why = !rec ? 'extra_call' : rec.tool !== tool ? 'tool' : canonical(rec.args) !== canonical(args) ? 'params' : undefined;
    log.calls.push({ index, tool, ...(rec ? { recordedTool: rec.tool } : {}), match: why === undefined });
    if (why) {
      log.divergence ??= { index, tool, why, ...(rec ? { recordedTool: rec.tool } : {}) };
      const what = why === 'extra_call' ? 'the recording has no call there' : why === 'tool' ? `the recording has ${rec!.tool} there` : 'its params differ from the recording';
      throw new CapCallError('replay_divergence', `replay_divergence at call ${index}: ${tool}: ${what}`);
    }
    if (rec!.error) throw new CapCallError(rec!.error.code, rec!.error.message);
    return rec!.result;
  };
  return Object.fromEntries(TOOL_TABLE.map((t) => [t.name, (args: unknown) => answer(t.name, args)]));
}
