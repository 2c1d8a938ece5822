/**
 * The mcp surface of one orchestrate run, as the runner wires it: the
 * agent's allowlist and the configured servers, with comis's MCP client
 * created on the first call that passes the gate (so a run that calls no MCP
 * tool loads neither the client manager nor the SDK) and closed at run end.
 */
import type { McpServerConfig } from '../config/mcp-schema.js';
import type { ResultStore } from '../resultref/materialize.js';
import { parseAllowlist } from './allowlist.js';
import type { McpClients } from './client-manager.js';
import type { McpGateSurface, McpToolInfo } from './gate.js';

export interface RunMcpOptions {
  servers: Readonly<Record<string, McpServerConfig>> | undefined;
  allow: readonly string[] | undefined;
  home: string;
  results: ResultStore | undefined;
  runEnded: AbortSignal;
  /** Tests only: stdio servers without the pid namespace. */
  noPidNamespace?: boolean;
}

export interface RunMcp {
  surface: McpGateSurface;
  /** The run's clients, if any call created them (tests look at server pids). */
  clients(): McpClients | undefined;
  /** Closes every server this run started; resolves once their process trees are gone. */
  close(): Promise<void>;
}

export function createRunMcp(options: RunMcpOptions): RunMcp {
  const servers = options.servers ?? {};
  let clients: Promise<McpClients> | undefined;
  let made: McpClients | undefined;
  let closed = false;
  const get = (): Promise<McpClients> =>
    (clients ??= import('./client-manager.js').then(({ createMcpClients }) => {
      made = createMcpClients({ servers, home: options.home, runEnded: options.runEnded, ...(options.noPidNamespace ? { noPidNamespace: true } : {}) });
      if (closed) void made.closeAll();
      return made;
    }));
  // Hot path (one gate check and one call per script call): the client, each server's tool list and the
  // results module are looked up once, then reused without a promise hop or a copy per call.
  const lists = new Map<string, McpToolInfo[]>();
  let results: typeof import('./results.js') | undefined;
  async function fetchTools(server: string): Promise<McpToolInfo[]> {
    const tools = await (made ?? (await get())).listTools(server);
    const list = tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema }));
    lists.set(server, list);
    return list;
  }
  async function firstCall(server: string, tool: string, args: Record<string, unknown>): Promise<unknown> {
    const c = made ?? (await get());
    const raw = await c.callTool(server, tool, args);
    results ??= await import('./results.js');
    return results.toScriptResult(raw, { server, tool }, c.profile, options.results);
  }
  // Not async functions: once the client, the list and the results module are known, a call is the client's promise and one reaction.
  const surface: McpGateSurface = {
    allow: parseAllowlist(options.allow),
    configured: (server) => Object.hasOwn(servers, server),
    listTools(server) {
      const known = lists.get(server);
      return known === undefined ? fetchTools(server) : Promise.resolve(known);
    },
    call(server, tool, args) {
      const c = made;
      const r = results;
      if (c === undefined || r === undefined) return firstCall(server, tool, args);
      return c.callTool(server, tool, args).then((raw) => r.toScriptResult(raw, { server, tool }, c.profile, options.results));
    },
  };
  return {
    surface,
    clients: () => made,
    async close() {
      closed = true;
      if (clients) await (await clients).closeAll();
    },
  };
}
