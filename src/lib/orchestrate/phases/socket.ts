/**
 * Phase 4, socket: the run's tools behind the lease-gated capability socket.
 * The tools work in the run's {@link ToolContext}; DuckDB slicing and MCP
 * servers start on first use and are closed by {@link RunServices.close}.
 */
import { CapCallError } from '../../capsocket/protocol.js';
import { listenCapSocket, type CapSocket } from '../../capsocket/server.js';
import { ConfineError } from '../../confine/index.js';
import type { ResolvedAgent } from '../../config/load.js';
import type { McpGateSurface } from '../../mcp/gate.js';
import { createRunMcp, type RunMcp } from '../../mcp/run-surface.js';
import { logToolFailure } from '../../obs/logger.js';
import type { AgentSurface } from '../../policy/surface.js';
import type { SliceQueryRunner } from '../../resultref/duckdb/run-slice-query.js';
import { liveRef, type ResultStore } from '../../resultref/materialize.js';
import type { AuditRow } from '../../store/runs.js';
import type { ToolContext } from '../../tools/context.js';
import { grepTool, type GrepArgs } from '../../tools/grep.js';
import { memoryGetTool, memorySearchTool, type MemorySearchArgs } from '../../tools/memory.js';
import { readTool, type ReadArgs } from '../../tools/read.js';
import { webFetchTool, type WebFetchArgs, type WebFetchDeps } from '../../tools/web-fetch.js';
import { writeTool, type WriteArgs } from '../../tools/write.js';
import type { WebSearchArgs } from '../../web/search/tool.js';
import { createDispatcher, type CapabilityAudited, type ToolImpl } from '../dispatch.js';
import type { DurableRun } from '../durable.js';
import { openMemoryIndex } from '../memory-index.js';
import type { MessageService, SendApprovalRequest } from '../message.js';
import type { RunLease } from './lease.js';

/** The run's daemon-side services the socket's tools reach (started lazily; closed at cleanup). */
export interface RunServices {
  mcp: RunMcp;
  getSlicer: () => Promise<SliceQueryRunner>;
  /** message_*: the origin channel, approvals, limits and the outbox; loaded on the first send. */
  message: (tool: 'message_send' | 'message_reply' | 'message_react') => ToolImpl;
  /** Every DuckDB child and MCP server of the run is gone, and every delivery it started has its verdict recorded, once this resolves. */
  close: () => Promise<void>;
}

export function startRunServices(
  agent: ResolvedAgent,
  home: string,
  ctx: ToolContext & { results: ResultStore },
  /** Read when the first DuckDB child starts: the jail uid may still change when the registry answers (releaseWhenReady). */
  hostUid: () => number,
  resultsDir: string,
  options: {
    mcpNoPidNamespace?: boolean;
    onMcp?: (mcp: RunMcp) => void;
    replayTools?: unknown;
    /** A replay's MCP surface: the gate's allowlist, tool lists and calls answered from the recording (replay.ts). */
    replayMcp?: McpGateSurface;
    /** A durable run: its MCP calls and tool lists are recorded. */
    recordMcp?: DurableRun;
    approveMessage?: ((request: SendApprovalRequest) => Promise<boolean>) | undefined;
  },
): RunServices {
  // DuckDB slicing (ResultRef.sql/.jsonpath): one hardened, jailed child per query, loaded on first use.
  // One promise, so a slicer still loading when the run ends is closed too (and a late warm() starts nothing).
  let slicer: Promise<SliceQueryRunner> | undefined;
  const getSlicer = (): Promise<SliceQueryRunner> =>
    (slicer ??= import('../../resultref/duckdb/run-slice-query.js').then(({ createSliceQueryRunner }) => createSliceQueryRunner({ resultsDir, hostUid: hostUid(), scriptMaxProcesses: agent.config.autonomy.limits.maxProcesses })));
  // comis_tools.mcp: the allowlist and configured servers; a server starts on the first allowed call.
  // A replay starts no MCP server: its surface answers from the recording (or refuses every call, without one).
  let mcp: RunMcp = options.replayTools
    ? { surface: options.replayMcp ?? createRunMcp({ servers: {}, allow: [], home, results: undefined, runEnded: ctx.runEnded! }).surface, clients: () => undefined, close: async () => undefined }
    : createRunMcp({
        servers: agent.mcpServers,
        allow: agent.config.autonomy.mcp?.allow,
        home,
        results: ctx.results,
        runEnded: ctx.runEnded!,
        ...(options.mcpNoPidNamespace ? { noPidNamespace: true } : {}),
      });
  if (options.recordMcp && !options.replayTools) mcp = { ...mcp, surface: options.recordMcp.recordMcp(mcp.surface) };
  options.onMcp?.(mcp);
  let messages: Promise<MessageService> | undefined;
  const message =
    (tool: 'message_send' | 'message_reply' | 'message_react'): ToolImpl =>
    async (args: unknown) => {
      messages ??= import('../message.js').then((m) => m.createMessageService({ agent, home, runId: ctx.runId, approve: options.approveMessage }));
      return (await messages).handle(tool, args as Record<string, unknown>);
    };
  return {
    mcp,
    getSlicer,
    message,
    close: async () => {
      // Every DuckDB child of the run (a spare, a query still running) is gone before the run returns.
      await slicer?.then(
        (x) => x.close(),
        () => undefined,
      );
      // Every MCP server the run started is gone (its whole process tree) before the run returns.
      await mcp.close().catch(() => undefined);
      // Deliveries still running for the run get their verdict recorded before it returns.
      await messages?.then(
        (m) => m.close(),
        () => undefined,
      );
    },
  };
}

export interface SocketPhase {
  agent: ResolvedAgent;
  home: string;
  surface: AgentSurface;
  lease: RunLease;
  ctx: ToolContext & { results: ResultStore };
  services: RunServices;
  sockDir: string;
  hostUid: number;
  webFetchDeps?: WebFetchDeps;
  /** A durable run: checkpoint/resume act on its area, and every tool call is recorded for replay. */
  durable?: DurableRun;
  /**
   * Replay: the tools answer from this instead of acting (see replay.ts); the
   * gate in front of them is the same.
   */
  tools?: Record<string, ToolImpl>;
  /** The socket's largest request frame (a durable run's takes a 1 MiB checkpoint). */
  maxFrameBytes?: number;
  /** Each decision of the gate, as a content-free audit row (and an event). */
  onAudit: (row: AuditRow, event: CapabilityAudited) => void;
}

/** The run's tools by table name, as the dispatcher calls them after the gate. */
function runTools(p: SocketPhase): Record<string, ToolImpl> {
  const { ctx, agent, services } = p;
  const sliceFailure = (r: { error: string; code: string }): unknown => {
    // An absent DuckDB degrades honestly to an {error}; anything else is a refusal the script sees thrown.
    if (r.code === 'duckdb_missing') return { error: r.error };
    throw new CapCallError(r.code, r.error);
  };
  return {
    read: (args) => readTool(ctx, args as ReadArgs),
    grep: (args) => grepTool(ctx, args as GrepArgs),
    write: (args) => writeTool(ctx, args as WriteArgs),
    memory_search: (args) => memorySearchTool(ctx, () => openMemoryIndex(p.home), args as MemorySearchArgs),
    memory_get: (args) => memoryGetTool(ctx, args as { path: string }),
    // undici loads on the first search only (no other run or command pays for it).
    web_search: async (args) => (await import('../../web/search/tool.js')).webSearchTool(ctx, agent, args as WebSearchArgs),
    web_fetch: (args) => webFetchTool(ctx, agent.config.web.fetch, args as WebFetchArgs, p.webFetchDeps),
    ref_sql: async (args) => {
      const { ref, query } = args as { ref: string; query: string };
      liveRef(ctx.results, ref);
      const r = await (await services.getSlicer()).query(query);
      return 'error' in r ? sliceFailure(r) : r.rows;
    },
    ref_jsonpath: async (args) => {
      const { ref, expr } = args as { ref: string; expr: string };
      liveRef(ctx.results, ref);
      const r = await (await services.getSlicer()).jsonpath(ref, expr);
      return 'error' in r ? sliceFailure(r) : r.value;
    },
    message_send: services.message('message_send'),
    message_reply: services.message('message_reply'),
    message_react: services.message('message_react'),
    checkpoint: (args) => durable(p).checkpoint(args as { state?: unknown }),
    resume: () => durable(p).resume(),
  };
}

function durable(p: SocketPhase): DurableRun {
  if (p.durable) return p.durable;
  throw new CapCallError('durability_off', `checkpoint() and resume() need durable runs: set agents.${p.agent.id}.autonomy.durability {enabled: true, orchestrateResume: true}`);
}

/** Every call of a durable run, recorded in order with what it returned or threw (the replay's script). */
function recorded(tools: Record<string, ToolImpl>, run: DurableRun): Record<string, ToolImpl> {
  return Object.fromEntries(
    Object.entries(tools).map(([name, impl]) => [
      name,
      async (args: unknown) => {
        const i = run.begin();
        try {
          const result = await impl(args);
          run.record(i, name, args, { result });
          return result;
        } catch (err) {
          // As the script sees it: a confinement refusal keeps its code (the dispatcher turns it into a tool error).
          const known = err instanceof CapCallError || err instanceof ConfineError;
          run.record(i, name, args, { error: { code: known ? err.code : 'internal', message: known ? err.message : 'internal error' } });
          throw err;
        }
      },
    ]),
  );
}

/** Listens on the run's socket; sockDir stays ours (the jail uid reaches the socket through the mount stage, never the directory). */
export async function openRunSocket(p: SocketPhase): Promise<CapSocket> {
  const { lease } = p;
  return listenCapSocket({
    dir: p.sockDir,
    clientUid: p.hostUid,
    ...(p.maxFrameBytes ? { limits: { maxFrameBytes: p.maxFrameBytes } } : {}),
    handler: createDispatcher({
      registry: lease.registry,
      socketId: lease.runId,
      agentId: p.agent.id,
      surfaces: { write: p.surface.write },
      dropped: p.surface.dropped,
      mcp: p.services.mcp.surface,
      tools: p.tools ?? (p.durable ? recorded(runTools(p), p.durable) : runTools(p)),
      audit: (event) => p.onAudit({ leaseId: event.leaseId, runId: event.runId, tool: event.tool, capability: event.capability, decision: event.decision, reason: event.reason, at: event.at }, event),
      onInternalError: (tool, err) => logToolFailure({ runId: lease.runId, leaseId: lease.lease.leaseId, tool, error: err }),
    }),
  });
}
