/**
 * The socket gate of `comis_tools.mcp.<server>.<tool>(args)`: the request
 * `{method: "mcp", params: {server, tool, args}}` (and `mcp.describe`) after
 * the bearer was authenticated. Decisions, in order, each audited:
 *
 *  1. the agent's tool policy or role dropped `mcp` (group:mcp, coordinator)
 *     → deny, reason as for any tool;
 *  2. the lease lacks `orch:mcp` → deny `capability_missing`;
 *  3. `server.tool` is not on `autonomy.mcp.allow` → deny `surface_disabled`
 *     (the mcp surface reaches no server until the allowlist opens it). The
 *     audit event names only `mcp`: a name the operator did not list never
 *     reaches the store (a script could put any text in it);
 *  4. the server's own tool list lacks the tool → deny `unknown_tool`,
 *     recorded as `mcp:<server>.<unknown>`;
 *  5. allow, recorded as `mcp:<server>.<tool>`; the call runs on comis's own
 *     client and its result comes back as data (results.ts).
 *
 * Names are compared, never interpreted: nothing here builds a command line,
 * a path or a property lookup from them. The control plane (`mcp_manage`,
 * `mcp_login`) is not a method of this surface at all; `tool.invoke` refuses
 * those names by origin.
 */
import type { Capability } from '../capabilities/capabilities.js';
import { CapCallError } from '../capsocket/protocol.js';
import { redactSecrets } from '../redact/output-guard.js';
import { sanitizeUntrustedText, sanitizeUntrustedValue } from '../untrusted/envelope.js';
import { allowlistedServers, allowsServer, allowsTool, entryToAdd, isValidServerName, isValidToolName, type McpAllowlist } from './allowlist.js';

export interface McpToolInfo {
  name: string;
  description?: string | undefined;
  inputSchema?: unknown;
}

/** What the gate needs from the run: the allowlist and comis's own client (started lazily). */
export interface McpGateSurface {
  allow: McpAllowlist;
  /** Whether a server of that name is configured under mcp.servers. */
  configured(server: string): boolean;
  /** The server's tools; `forCall` when a script's call is being checked (not a describe() digest). */
  listTools(server: string, forCall?: boolean): Promise<McpToolInfo[]>;
  /** Calls the tool and returns what the script receives (data, maybe a ResultRef). */
  call(server: string, tool: string, args: Record<string, unknown>): Promise<unknown>;
}

export type McpAudit = (tool: string, capability: Capability | 'none', decision: 'allow' | 'deny', reason?: 'capability_missing' | 'unknown_tool' | 'surface_disabled' | 'explicit_deny' | 'not_in_profile' | 'role_coordinator') => void;

export interface McpGateContext {
  agentId: string;
  caps: readonly Capability[];
  /** Why the agent's policy or role dropped `mcp`, if it did. */
  dropped?: { why: 'explicit_deny' | 'not_in_profile' | 'role_coordinator'; message: string } | undefined;
  surface: McpGateSurface | undefined;
  audit: McpAudit;
}

/** An error of comis's client, as the script sees it: its code, a sanitized message. */
export function mcpCallError(err: unknown): CapCallError {
  if (err instanceof CapCallError) return err;
  const e = err as { name?: string; code?: unknown; message?: unknown };
  if (e && e.name === 'McpClientError' && typeof e.code === 'string') return new CapCallError(e.code, sanitizeUntrustedText(String(e.message)));
  return new CapCallError('mcp_error', 'the MCP call failed');
}

function checkHeld(ctx: McpGateContext, tool: string): McpGateSurface {
  if (ctx.dropped) {
    ctx.audit('mcp', 'none', 'deny', ctx.dropped.why);
    throw new CapCallError('policy_denied', `mcp is denied by the tool policy of agent "${ctx.agentId}" (${ctx.dropped.message})`);
  }
  if (!ctx.caps.includes('orch:mcp')) {
    ctx.audit('mcp', 'orch:mcp', 'deny', 'capability_missing');
    throw new CapCallError('capability_denied', `${tool} needs orch:mcp, which this run's lease does not hold (agent "${ctx.agentId}")`);
  }
  if (!ctx.surface) {
    ctx.audit('mcp', 'orch:mcp', 'deny', 'surface_disabled');
    throw new CapCallError('mcp_not_allowed', `agent "${ctx.agentId}" reaches no MCP server: list one under agents.${ctx.agentId}.autonomy.mcp.allow`);
  }
  return ctx.surface;
}

export async function handleMcpRequest(method: string, params: unknown, ctx: McpGateContext): Promise<unknown> {
  const p = (params && typeof params === 'object' && !Array.isArray(params) ? params : {}) as { server?: unknown; tool?: unknown; args?: unknown };
  if (method === 'mcp.describe') return describeMcp(p.server, ctx);
  if (typeof p.server !== 'string' || typeof p.tool !== 'string' || p.server.length > 256 || p.tool.length > 256) {
    throw new CapCallError('bad_request', 'mcp needs params.server and params.tool (names)');
  }
  const { server, tool } = p;
  const surface = checkHeld(ctx, 'comis_tools.mcp');
  if (!allowsTool(surface.allow, server, tool)) {
    ctx.audit('mcp', 'orch:mcp', 'deny', 'surface_disabled');
    const entry = entryToAdd(server, tool);
    const shown = entry ? `comis_tools.mcp.${server}${isValidToolName(tool) ? `.${tool}` : ''}` : 'this MCP server name (not a valid name)';
    throw new CapCallError(
      'mcp_not_allowed',
      entry ? `${shown} is not allowlisted for agent "${ctx.agentId}": add "${entry}" (or "${server}" for all its tools) to agents.${ctx.agentId}.autonomy.mcp.allow` : `${shown} is not allowlisted for agent "${ctx.agentId}"`,
    );
  }
  if (!surface.configured(server)) {
    ctx.audit(`mcp:${server}.${tool}`, 'orch:mcp', 'deny', 'unknown_tool');
    throw new CapCallError('mcp_unavailable', `no MCP server "${server}" is configured under mcp.servers`);
  }
  const args = p.args === undefined ? {} : p.args;
  if (args === null || typeof args !== 'object' || Array.isArray(args)) throw new CapCallError('invalid_params', `comis_tools.mcp.${server}.${tool}: the arguments must be an object`);
  let tools: McpToolInfo[];
  try {
    tools = await surface.listTools(server, true);
  } catch (err) {
    ctx.audit(`mcp:${server}.${tool}`, 'orch:mcp', 'deny', 'unknown_tool');
    throw mcpCallError(err);
  }
  if (!tools.some((t) => t.name === tool)) {
    ctx.audit(`mcp:${server}.<unknown>`, 'orch:mcp', 'deny', 'unknown_tool');
    throw new CapCallError('unknown_tool', `MCP server "${server}" has no tool "${tool}" (comis_tools.describe() lists its tools)`);
  }
  ctx.audit(`mcp:${server}.${tool}`, 'orch:mcp', 'allow');
  try {
    return await surface.call(server, tool, args as Record<string, unknown>);
  } catch (err) {
    throw mcpCallError(err);
  }
}

/** What a script may call: the allowlisted tools of the allowlisted servers, with descriptions and input schemas. */
async function describeMcp(only: unknown, ctx: McpGateContext): Promise<unknown> {
  if (ctx.dropped || !ctx.caps.includes('orch:mcp') || !ctx.surface) return [];
  if (only !== undefined && !isValidServerName(only)) return [];
  const servers = only === undefined ? allowlistedServers(ctx.surface.allow) : allowsServer(ctx.surface.allow, only) ? [only] : [];
  ctx.audit('mcp.describe', 'orch:mcp', 'allow');
  return mcpCatalog(ctx.surface, servers);
}

/** One MCP tool a script may call, as describe() lists it: sanitized, bounded, marked untrusted. */
export interface McpCatalogTool {
  server: string;
  tool: string;
  call: string;
  capability: 'orch:mcp';
  description?: string | undefined;
  inputSchema: unknown;
  untrusted: true;
}

/** An allowlisted server that could not be asked for its tools: its error code and a sanitized reason. */
export interface McpCatalogUnavailable {
  server: string;
  unavailable: true;
  error: string;
  reason: string;
}

export type McpCatalogEntry = McpCatalogTool | McpCatalogUnavailable;

/** Longest description kept (characters), and largest input schema kept (bytes of JSON; a larger one reads as `{}`). */
const MAX_DESCRIPTION_CHARS = 2000;
export const MAX_INPUT_SCHEMA_BYTES = 64 * 1024;

/**
 * The allowlisted tools of `servers` (default: every allowlisted server),
 * asked of the servers concurrently (each list is fetched once per run by the
 * client). A server that cannot be asked is one `unavailable` entry with its
 * reason; it never fails the catalog. Output is sorted by server, then tool.
 */
export async function mcpCatalog(surface: McpGateSurface, servers: readonly string[] = allowlistedServers(surface.allow)): Promise<McpCatalogEntry[]> {
  const perServer = await Promise.all(
    servers.map(async (server): Promise<McpCatalogEntry[]> => {
      if (!surface.configured(server)) return [{ server, unavailable: true, error: 'mcp_unavailable', reason: `no MCP server "${server}" is configured under mcp.servers` }];
      let tools: McpToolInfo[];
      try {
        tools = await surface.listTools(server);
      } catch (err) {
        const e = mcpCallError(err);
        return [{ server, unavailable: true, error: e.code, reason: redactSecrets(e.message) }];
      }
      const out: McpCatalogTool[] = [];
      for (const t of tools) {
        if (!allowsTool(surface.allow, server, t.name)) continue;
        const d = typeof t.description === 'string' ? sanitizeUntrustedText(t.description) : undefined;
        const schema = sanitizeUntrustedValue(t.inputSchema ?? {});
        out.push({
          server,
          tool: t.name,
          call: `comis_tools.mcp.${server}.${t.name}`,
          capability: 'orch:mcp',
          description: d && d.length > MAX_DESCRIPTION_CHARS ? `${d.slice(0, MAX_DESCRIPTION_CHARS)}…` : d,
          inputSchema: (JSON.stringify(schema) ?? '').length > MAX_INPUT_SCHEMA_BYTES ? {} : schema,
          untrusted: true,
        });
      }
      return out.sort((a, b) => (a.tool < b.tool ? -1 : a.tool > b.tool ? 1 : 0));
    }),
  );
  return perServer.flat();
}
