/**
 * The durable side of a run (autonomy.durability {enabled, orchestrateResume}):
 * after the run directory, its area is created and its bytes pinned and its
 * store row written (status running, owned by this process); after classify,
 * the row is settled. Loaded only for durable runs (never on the plain hot path).
 */
import type { Capability } from '../../capabilities/capabilities.js';
import { MCP_SURFACE_TOOL, type AgentSurface } from '../../policy/surface.js';
import type { ToolContext } from '../../tools/context.js';
import type { DurableRun } from '../durable.js';
import type { OrchestrateOptions } from '../runner.js';

/** The socket's request frame limit where a checkpoint (≤ 1 MiB) travels: a durable run, and its replay. */
// A literal, not ../durable.js's MAX_CHECKPOINT_BYTES: that module loads only for durable runs (test/orchestrate checks they agree).
export const DURABLE_FRAME_BYTES = 1024 * 1024 + 64 * 1024;

export interface DurablePart {
  run: DurableRun;
  /** The socket's frame limit: a 1 MiB checkpoint plus its envelope. */
  maxFrameBytes: number;
  ttlMs: number;
}

/** What the run is allowed (its lease's caps, its surface): pinned as the ceiling a resume of it runs under. */
export async function openDurable(options: OrchestrateOptions, runId: string, ctx: ToolContext, allowed: { caps: readonly Capability[]; surface: AgentSurface }): Promise<DurablePart> {
  const { DurableRun } = await import('../durable.js');
  const { openStore } = await import('../../store/store.js');
  const { startDurableRun, markResumed, DURABLE_TTL_MS } = await import('../../store/durable-runs.js');
  const { surface } = allowed;
  const ceiling = {
    caps: [...allowed.caps],
    tools: [...surface.tools, ...(surface.dropped.has(MCP_SURFACE_TOOL) ? [] : [MCP_SURFACE_TOOL])],
    write: surface.write,
    mcpAllow: [...(options.agent.config.autonomy.mcp?.allow ?? [])],
  };
  const run = new DurableRun(options.home, runId, { source: options.source, language: options.language, displayName: options.displayName, ceiling }, { maxFileBytes: ctx.maxReadBytes, budget: ctx.budget }, options.resumeOf);
  const store = openStore({ home: options.home });
  try {
    store.db.transaction(() => {
      startDurableRun(store.db, { runId, kind: 'orchestrate', agentId: options.agent.id, sessionKey: options.sessionKey, scriptRef: run.scriptRef, ...(options.resumeOf ? { resumedFrom: options.resumeOf } : {}) });
      if (options.resumeOf) markResumed(store.db, options.resumeOf, runId);
    })();
  } finally {
    store.close();
  }
  return { run, maxFrameBytes: DURABLE_FRAME_BYTES, ttlMs: DURABLE_TTL_MS };
}

export async function endDurable(home: string, run: DurableRun, timedOut: boolean): Promise<void> {
  const { openStore } = await import('../../store/store.js');
  const { endDurableRun } = await import('../../store/durable-runs.js');
  const store = openStore({ home });
  try {
    const checkpointRef = run.checkpointRef;
    endDurableRun(store.db, run.runId, timedOut ? { status: 'resumable', ...(checkpointRef ? { checkpointRef } : {}) } : { status: 'completed', ...(checkpointRef ? { checkpointRef } : {}) });
  } finally {
    store.close();
  }
}
