/**
 * The per-agent MCP allowlist (`agents.<id>.autonomy.mcp.allow`): `"server"`
 * opens every tool of that server, `"server.tool"` one tool; anything else is
 * denied by absence. Pure data and functions (no SDK, no schema library), so
 * the socket gate, the pre-flight and `comis mcp list` share it.
 *
 * Security property: a name is only ever compared with the allowlist and the
 * server's own tool list; nothing here builds a command line, a path or a
 * property lookup on an object from it.
 */
import { MCP_CONFUSABLE_NAMES, MCP_SERVER_NAME_PATTERN, MCP_TOOL_NAME_PATTERN } from '../config/mcp-names.js';

export interface McpAllowlist {
  /** server → '*' (every tool) or the set of tool names allowed. */
  readonly entries: ReadonlyMap<string, '*' | ReadonlySet<string>>;
}

/** Builds the allowlist from the config entries (already validated by the schema). */
export function parseAllowlist(entries: readonly string[] | undefined): McpAllowlist {
  const map = new Map<string, '*' | Set<string>>();
  for (const entry of entries ?? []) {
    const dot = entry.indexOf('.');
    const server = dot === -1 ? entry : entry.slice(0, dot);
    if (!isValidServerName(server)) continue;
    if (dot === -1) {
      map.set(server, '*');
      continue;
    }
    const tool = entry.slice(dot + 1);
    if (!isValidToolName(tool)) continue;
    const have = map.get(server);
    if (have === '*') continue;
    if (have) have.add(tool);
    else map.set(server, new Set([tool]));
  }
  return { entries: map };
}

export function isValidServerName(name: unknown): name is string {
  return typeof name === 'string' && MCP_SERVER_NAME_PATTERN.test(name) && !MCP_CONFUSABLE_NAMES.has(name);
}

export function isValidToolName(name: unknown): name is string {
  return typeof name === 'string' && MCP_TOOL_NAME_PATTERN.test(name) && !MCP_CONFUSABLE_NAMES.has(name) && !name.startsWith('__');
}

/** Whether the server is opened at all (some entry names it). */
export function allowsServer(list: McpAllowlist, server: unknown): server is string {
  return isValidServerName(server) && list.entries.has(server);
}

/** Whether `server.tool` is allowlisted (by the server entry or its own). */
export function allowsTool(list: McpAllowlist, server: unknown, tool: unknown): boolean {
  if (!isValidServerName(server) || !isValidToolName(tool)) return false;
  const e = list.entries.get(server);
  return e === '*' || (e !== undefined && e.has(tool));
}

/** Servers the allowlist names, sorted. */
export function allowlistedServers(list: McpAllowlist): string[] {
  return [...list.entries.keys()].sort();
}

/** The allowlist entry an operator adds to open `server.tool` (for messages), or undefined for an invalid name. */
export function entryToAdd(server: unknown, tool: unknown): string | undefined {
  if (!isValidServerName(server)) return undefined;
  return isValidToolName(tool) ? `${server}.${tool}` : server;
}
