/**
 * The per-run MCP client manager: comis is the client of the servers the
 * operator configured under `mcp.servers`. A server is started (stdio) or
 * connected (Streamable HTTP) on the first call of the run that reaches it,
 * kept for the run, and closed by {@link McpClients.closeAll} at run end
 * (stdio: its whole process tree reaped, see stdio-transport.ts).
 *
 * The official SDK (`@modelcontextprotocol/sdk`) is loaded here, on the
 * first connection only: a run that calls no MCP tool, and every other
 * command, never loads it (a trace test holds that).
 *
 * Failure is sticky per run: a server that failed to start, crashed or sent
 * too much is not restarted within the run (a crash loop would otherwise be
 * the script's to trigger); its later calls fail at once with the same code.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { z } from 'zod/v4';

import type { McpServerConfig } from '../config/mcp-schema.js';
import { registerSecret } from '../redact/output-guard.js';
import { resolveSourceProfile, type SourceProfile } from '../policy/source-profiles.js';
import type { DirectToolCall } from './direct-call.js';
import type { ReapedStdioTransport } from './stdio-transport.js';

/** Everything one server may send in a run (many calls), before comis cuts it off. */
export const MCP_MAX_TOTAL_BYTES = 64 * 1024 * 1024;
/** Room a JSON-RPC frame needs beyond the payload the profile allows (ids, escaping of a 2 MB payload). */
const FRAME_SLACK_BYTES = 256 * 1024;

export class McpClientError extends Error {
  constructor(
    readonly code: 'mcp_unavailable' | 'mcp_start_failed' | 'mcp_timeout' | 'mcp_output_too_large' | 'mcp_error' | 'mcp_closed',
    message: string,
  ) {
    super(message);
    this.name = 'McpClientError';
  }
}

export interface McpClientsOptions {
  servers: Readonly<Record<string, McpServerConfig>>;
  /** Default working directory of stdio servers ($COMIS_HOME). */
  home: string;
  /** Environment the envFrom/headersFrom references are read from (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** Aborted when the run ends: calls still running stop. */
  runEnded?: AbortSignal;
  /** Tests only: start stdio servers without the pid namespace. */
  noPidNamespace?: boolean;
}

interface Connection {
  client: Client;
  transport: { close(): Promise<void> };
  /** What `tools/call` results are checked with (fast-reply.ts). */
  resultSchema: z.ZodType<CallToolResult>;
  stdio?: ReapedStdioTransport;
  /** A stdio server's `tools/call` without the SDK's request machinery (direct-call.ts). */
  direct?: DirectToolCall;
  /** Tools of the listed ones the direct path may call: those whose result the SDK checks no further (no output schema, no required task). */
  plain?: ReadonlySet<string>;
  tools?: Promise<Tool[]>;
  failed?: McpClientError;
}

export interface McpClients {
  /** The source profile bounding every result (mcp_default). */
  readonly profile: SourceProfile;
  /** Whether a server of that name is configured. */
  has(server: string): boolean;
  /** The server's own tool list (fetched once per run). */
  listTools(server: string): Promise<Tool[]>;
  /** Calls one tool; the result is the server's raw CallToolResult. */
  callTool(server: string, tool: string, args: Record<string, unknown>): Promise<unknown>;
  /** Pids of a stdio server's process tree (tests, `comis mcp list`). */
  serverPids(server: string): number[];
  /** stderr tail of a stdio server (diagnostics only; never shown to a script). */
  serverStderr(server: string): string;
  /** Closes every server of the run; resolves once each process tree is gone. */
  closeAll(): Promise<void>;
}

/** The base environment of a stdio server: never comis's own (it may hold keys). */
const INHERITED_ENV = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'USER', 'LOGNAME', 'SHELL', 'TERM', 'TZ'];

/** Resolves `envFrom`-style references to values (registered as secrets); names only in errors. */
function resolveRefs(server: string, key: 'envFrom' | 'headersFrom', refs: Readonly<Record<string, string>> | undefined, env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, varName] of Object.entries(refs ?? {})) {
    const value = env[varName];
    if (value === undefined || value === '') {
      throw new McpClientError('mcp_start_failed', `mcp.servers.${server}.${key}.${name} names the environment variable ${varName}, which is not set for comis`);
    }
    registerSecret(value);
    out[name] = value;
  }
  return out;
}

export function createMcpClients(options: McpClientsOptions): McpClients {
  const profile = resolveSourceProfile('mcp_default');
  const env = options.env ?? process.env;
  const connections = new Map<string, Promise<Connection>>();
  let closed = false;
  const settled = new Map<string, Connection>();
  /** Connections whose start succeeded: a call on one needs no promise hop through connect(). */
  const opened = new Map<string, Connection>();
  /** What connect() would resolve with, when that is known now (the run is on, the server started and has not failed). */
  const ready = (name: string): Connection | undefined => {
    const c = closed ? undefined : opened.get(name);
    return c && !c.failed ? c : undefined;
  };

  async function open(name: string, config: McpServerConfig): Promise<Connection> {
    const [{ Client }, { deserializeMessage }, { CallToolResultSchema, McpError }, { z }, { replyDeserializer, callToolResultCheck, callToolResultSchema }] = await Promise.all([
      import('@modelcontextprotocol/sdk/client/index.js'),
      import('@modelcontextprotocol/sdk/shared/stdio.js'),
      import('@modelcontextprotocol/sdk/types.js'),
      import('zod/v4'),
      import('./fast-reply.js'),
    ]);
    const client = new Client({ name: 'comis', version: '0.1.0' }, { capabilities: {} });
    let transport: { close(): Promise<void> };
    let stdio: ReapedStdioTransport | undefined;
    if (config.command !== undefined) {
      const base: Record<string, string> = {};
      for (const k of INHERITED_ENV) {
        const v = env[k];
        if (v !== undefined && !v.startsWith('()')) base[k] = v;
      }
      const serverEnv = { ...base, ...(config.env ?? {}), ...resolveRefs(name, 'envFrom', config.envFrom, env) };
      const { ReapedStdioTransport } = await import('./stdio-transport.js');
      stdio = new ReapedStdioTransport(
        {
          command: config.command,
          args: config.args ?? [],
          env: serverEnv,
          cwd: config.cwd ?? options.home,
          maxFrameBytes: profile.maxResponseBytes + FRAME_SLACK_BYTES,
          maxTotalBytes: MCP_MAX_TOTAL_BYTES,
          ...(options.noPidNamespace ? { noPidNamespace: true } : {}),
        },
        replyDeserializer(deserializeMessage),
      );
      transport = stdio;
    } else {
      const headers = { ...(config.headers ?? {}), ...resolveRefs(name, 'headersFrom', config.headersFrom, env) };
      const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
      const { boundedFetch } = await import('./bounded-fetch.js');
      transport = new StreamableHTTPClientTransport(new URL(config.url!), {
        requestInit: { headers },
        fetch: boundedFetch(profile.maxResponseBytes + FRAME_SLACK_BYTES),
      });
    }
    const conn: Connection = { client, transport, resultSchema: callToolResultSchema(z, CallToolResultSchema), ...(stdio ? { stdio } : {}) };
    settled.set(name, conn);
    client.onerror = (err) => {
      if (err && (err as Error).name === 'McpOutputTooLargeError') conn.failed ??= new McpClientError('mcp_output_too_large', `mcp server "${name}": ${(err as Error).message}; it was stopped for the rest of the run`);
    };
    client.onclose = () => {
      conn.failed ??= new McpClientError('mcp_closed', `mcp server "${name}" stopped (it exited or closed the connection) and is not restarted within a run`);
    };
    try {
      // No run signal here: connect is once per server, and closeAll() ends a start still in progress.
      await client.connect(transport as never, { timeout: config.startupTimeoutMs });
    } catch (err) {
      await transport.close().catch(() => undefined);
      const timedOut = /timed? ?out/i.test((err as Error).message ?? '');
      throw new McpClientError(
        timedOut ? 'mcp_timeout' : 'mcp_start_failed',
        timedOut ? `mcp server "${name}" did not answer initialize within ${config.startupTimeoutMs} ms (mcp.servers.${name}.startupTimeoutMs)` : `mcp server "${name}" did not start: ${scrubUrl(name, shortReason(err))}`,
      );
    }
    if (stdio) {
      const { directToolCalls } = await import('./direct-call.js');
      conn.direct = directToolCalls(stdio, timeoutOf(name), callToolResultCheck(CallToolResultSchema), (code, message, data) => McpError.fromError(code, message, data));
    }
    opened.set(name, conn);
    return conn;
  }

  function connect(name: string): Promise<Connection> {
    if (closed) return Promise.reject(new McpClientError('mcp_closed', 'the run has ended'));
    const config = Object.hasOwn(options.servers, name) ? options.servers[name] : undefined;
    if (!config) return Promise.reject(new McpClientError('mcp_unavailable', `no MCP server "${name}" is configured under mcp.servers`));
    let p = connections.get(name);
    if (!p) {
      p = open(name, config);
      connections.set(name, p);
    }
    return p.then((c) => {
      if (c.failed) throw c.failed;
      return c;
    });
  }

  const timeoutOf = (name: string): number => options.servers[name]?.callTimeoutMs ?? 60_000;

  /**
   * One request, bounded by the server's call timeout. No AbortSignal per
   * call (an AbortController, and the listener the SDK adds to it and never
   * removes, on every call of the hot path): when the run ends, every server
   * of the run is closed at once (below), and closing a transport rejects
   * every request still waiting on it.
   */
  function request<T>(name: string, fn: (opts: { timeout: number }) => Promise<T>): Promise<T> {
    return fn({ timeout: timeoutOf(name) });
  }
  // The run ended: calls still running stop now (their servers are reaped by closeAll(), which awaits the same close).
  options.runEnded?.addEventListener(
    'abort',
    () => {
      for (const c of settled.values()) void c.transport.close().catch(() => undefined);
    },
    { once: true },
  );

  /** A server's URL as messages may show it: no query (it may carry a token), no credentials. */
  const scrubUrl = (name: string, text: string): string => {
    const url = options.servers[name]?.url;
    if (url === undefined || !URL.canParse(url)) return text;
    const u = new URL(url);
    return text.split(url).join(`${u.protocol}//${u.host}${u.pathname}`).split(u.search).join('');
  };

  function translate(name: string, err: unknown, conn?: Connection): McpClientError {
    if (err instanceof McpClientError) return err;
    if (conn?.failed) return conn.failed;
    const e = err as { code?: unknown; message?: string; name?: string };
    if (e.code === -32001 || /timed? ?out/i.test(e.message ?? '')) return new McpClientError('mcp_timeout', `mcp server "${name}" did not answer within ${timeoutOf(name)} ms (mcp.servers.${name}.callTimeoutMs)`);
    if (options.runEnded?.aborted) return new McpClientError('mcp_closed', 'the run has ended');
    return new McpClientError('mcp_error', `mcp server "${name}" answered an error: ${scrubUrl(name, shortReason(err))}`);
  }

  /** Any other call (a server still starting, an HTTP server, a tool with an output schema): the SDK's `callTool`. */
  async function callToolThroughSdk(server: string, tool: string, args: Record<string, unknown>): Promise<unknown> {
    const conn = ready(server) ?? (await connect(server));
    try {
      // The schema's type is the SDK's own result type; the SDK's parameter names only its two schema objects.
      return await request(server, (o) => conn.client.callTool({ name: tool, arguments: args }, conn.resultSchema as never, o));
    } catch (err) {
      throw translate(server, err, conn);
    }
  }

  return {
    profile,
    has: (server) => Object.hasOwn(options.servers, server),
    async listTools(server) {
      const conn = await connect(server);
      conn.tools ??= (async () => {
        const tools: Tool[] = [];
        let cursor: string | undefined;
        // Bounded pagination: a server cannot keep us listing forever.
        for (let page = 0; page < 20; page++) {
          const res = await request(server, (o) => conn.client.listTools(cursor === undefined ? {} : { cursor }, o));
          tools.push(...res.tools);
          cursor = res.nextCursor;
          if (!cursor || tools.length >= 1000) break;
        }
        conn.plain = new Set(tools.filter((t) => t.outputSchema === undefined && t.execution?.taskSupport !== 'required').map((t) => t.name));
        return tools;
      })();
      try {
        return await conn.tools;
      } catch (err) {
        conn.tools = undefined;
        throw translate(server, err, conn);
      }
    },
    callTool(server, tool, args) {
      const conn = ready(server);
      // The common call, a listed plain tool of a running stdio server: no async frame, no SDK request.
      if (conn?.direct !== undefined && conn.plain?.has(tool)) {
        return conn.direct(tool, args).catch((err: unknown) => {
          throw translate(server, err, conn);
        });
      }
      return callToolThroughSdk(server, tool, args);
    },
    serverPids: (server) => settled.get(server)?.stdio?.treePids() ?? [],
    serverStderr: (server) => settled.get(server)?.stdio?.stderr ?? '',
    async closeAll() {
      closed = true;
      const all = [...connections.values()].map((p) =>
        p.then(
          (c) => c.transport.close(),
          () => undefined,
        ),
      );
      // A connection still opening is closed by its own failure path or here once it settles.
      await Promise.all(all);
      await Promise.all([...settled.values()].map((c) => c.transport.close().catch(() => undefined)));
    },
  };
}

/** A short, single-line reason (the server's text is untrusted: callers sanitize before it reaches a script). */
function shortReason(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  const line = msg.replace(/\s+/g, ' ').trim();
  return line.length > 300 ? `${line.slice(0, 300)}…` : line || 'unknown error';
}
