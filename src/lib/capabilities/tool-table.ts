/**
 * THE tool→capability table, as plain data: name, capability, one-line
 * summary and surface toggle. The dispatch gate decides from this alone, so
 * the hot path of a run loads no schema library; `tool-map.ts` attaches the
 * zod schemas of params and results to these same entries for validation,
 * the SDK emitter and the docs (a test asserts the two cover the same names).
 */
import type { Capability } from './capabilities.js';

export interface ToolEntry {
  name: string;
  capability: Capability;
  summary: string;
  /**
   * A surface toggle beyond the capability: the tool is reachable only when the
   * agent's config turns it on (`write` needs `autonomy.write: true`).
   */
  surface?: 'write';
  /**
   * For a tool whose result is data: where that data is in an inline result
   * (`value`: the whole result; `content`: its `content` field). The SDKs give
   * such an inline result the ResultRef methods over that payload, so a script
   * slices a result the same way whether it came back inline or as a ResultRef.
   */
  inlinePayload?: 'value' | 'content';
  /**
   * The SDK method takes these positional arguments (in order) instead of one
   * params object: `checkpoint(state)`, `resume()`. The call still sends `{name: value}`.
   */
  sdkArgs?: readonly string[];
  /**
   * An outward send (`message_*`): the SDKs take the upstream second argument,
   * `message_send(args, "report-send")`, as its `operationId`, and derive a
   * deterministic default from the run id and the call's ordinal when none is given.
   */
  operationId?: true;
}

export const TOOL_TABLE: readonly ToolEntry[] = [
  { name: 'read', capability: 'orch:read', summary: 'Read lines of a file in the agent workspace.', inlinePayload: 'content' },
  { name: 'grep', capability: 'orch:read', summary: 'Search files in the agent workspace for a pattern.' },
  {
    name: 'ref_sql',
    capability: 'orch:read',
    summary: 'Run one read-only DuckDB SELECT over a ResultRef of this run (ResultRef.sql calls it).',
  },
  {
    name: 'ref_jsonpath',
    capability: 'orch:read',
    summary: 'Extract a $-rooted JSONPath from a ResultRef of this run (ResultRef.jsonpath calls it).',
  },
  {
    name: 'memory_search',
    capability: 'orch:read',
    summary: "Full-text search of the agent's memory (the Markdown under memory/ in its workspace), ranked.",
    inlinePayload: 'value',
  },
  { name: 'memory_get', capability: 'orch:read', summary: 'Read one Markdown file of the agent memory (a path under memory/).', inlinePayload: 'content' },
  {
    name: 'web_search',
    capability: 'orch:web',
    summary: "Search the web through the agent's configured provider (SearXNG, Brave or Tavily).",
    inlinePayload: 'value',
  },
  {
    name: 'web_fetch',
    capability: 'orch:web',
    summary: 'Fetch an http(s) URL daemon-side through the SSRF guard; the page comes back as untrusted data (readable text or the data itself).',
    inlinePayload: 'content',
  },
  {
    name: 'checkpoint',
    capability: 'orch:read',
    summary: "Save this durable run's progress (any JSON value, at most 1 MiB); resume() on a later attempt gets it back. Needs autonomy.durability.",
    sdkArgs: ['state'],
  },
  {
    name: 'resume',
    capability: 'orch:read',
    summary: "The last checkpoint of this durable run as untrusted data ({type: 'Checkpoint', state, savedAt}), or null.",
    sdkArgs: [],
  },
  {
    name: 'write',
    capability: 'orch:write',
    summary: "Write a file into this run's results/writes area (reaped at run end).",
    surface: 'write',
  },
  {
    name: 'message_send',
    capability: 'orch:message',
    summary: "Send a text message outward, by default to the agent's own origin channel (any other channel asks for approval); exactly once with durability on.",
    operationId: true,
  },
  {
    name: 'message_reply',
    capability: 'orch:message',
    summary: 'Reply to a message of the origin channel (by its message_id).',
    operationId: true,
  },
  {
    name: 'message_react',
    capability: 'orch:message',
    summary: 'React with an emoji to a message of the origin channel (by its message_id).',
    operationId: true,
  },
];

const byName = new Map(TOOL_TABLE.map((t) => [t.name, t]));

export function findToolEntry(name: string): ToolEntry | undefined {
  return byName.get(name);
}

/**
 * The administrative control plane. Deny-by-origin: an agent-origin call to any
 * of these is refused whatever the lease holds, even if a later table entry
 * ever named one.
 */
export function isControlPlaneTool(name: string): boolean {
  return name === 'gateway' || name === 'mcp_manage' || name === 'mcp_login' || /_manage$/.test(name) || MESSAGE_ADMIN_TOOLS.has(name);
}

/**
 * The admin subset of `message.*` (seed 000): editing, deleting or reading
 * back channel messages is not part of `orch:message` and is denied by origin.
 */
export const MESSAGE_ADMIN_TOOLS: ReadonlySet<string> = new Set(['message_edit', 'message_delete', 'message_fetch']);
