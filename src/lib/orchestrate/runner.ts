/**
 * One orchestrate run, end to end, as DESIGN.md's data flow reads:
 * prepare (config, preflight, approvals) → lease → run dir and SDK → socket →
 * spawn → collect → classify → record, with cleanup whatever throws. Each
 * phase lives in ./phases/ and does one job; {@link runOrchestrate} is only the
 * driver that sequences them and owns the `try/finally`. Returns the script's
 * (bounded) stdout and a content-free record; emits typed events for renderers.
 *
 * Security properties: nothing runs unjailed (no provider, no interpreter →
 * refusal); the script reaches tools only through the socket, gated by its
 * own per-run lease, which is revoked before this function returns; the
 * run's results area lives outside the jail-writable workspace and is bound
 * read-only; stderr is never returned on success and is redacted when shown.
 */
import { chownSync } from 'node:fs';

import type { Capability } from '../capabilities/capabilities.js';
import type { LeaseRegistry } from '../capabilities/lease.js';
import type { ResolvedAgent } from '../config/load.js';
import { ComisError } from '../errors.js';
import { prefetchMcpDigest, wantsMcpDigest } from '../mcp/describe-digest.js';
import type { McpGateSurface } from '../mcp/gate.js';
import type { RunMcp } from '../mcp/run-surface.js';
import { logRunEvent } from '../obs/logger.js';
import type { AuditRow, FailureClass, RepairRecord, RunRecord, ToolCallTally } from '../store/runs.js';
import type { WebFetchDeps } from '../tools/web-fetch.js';
import { durableRuns } from '../config/durability.js';
import { resolveModel } from '../config/model-resolve.js';
import type { CapabilityAudited, ToolImpl } from './dispatch.js';
import type { SendApprovalRequest } from './message.js';
import { DURABLE_FRAME_BYTES, endDurable, openDurable } from './phases/durable.js';
import { classifyRun } from './phases/classify.js';
import { cleanupRun, type RunParts } from './phases/cleanup.js';
import { collectRun, StdoutCollector, type RunVerdict } from './phases/collect.js';
import { mintRunLease, renewRunLease } from './phases/lease.js';
import { JAIL_RUN_DIR } from './phases/constants.js';
import { prepareRun } from './phases/prepare.js';
import { recordRun } from './phases/record.js';
import { installRunFiles, openAgentJail, openRunDir, toolContext } from './phases/run-dir.js';
import { openRunSocket, startRunServices } from './phases/socket.js';
import { BeforeExecFailure, releaseWhenReady, spawnScript } from './phases/spawn.js';
import { slicesResults, type Footprint } from './preflight.js';
import { REPAIR_BUDGET_MS, repairGate } from './repair.js';
import type { ScriptLanguage } from './transpile.js';

export { classifyExit } from './phases/classify.js';
export { RunRefusedError } from './phases/prepare.js';

/** A wait for a jail slot this long gets the run fresh leases (minting costs ~0.1 ms; a shorter wait eats little of the lease's slack). */
export const SLOT_WAIT_RENEWS_LEASE_MS = 1_000;

export type OrchestrateEvent =
  | { type: 'run:preflight'; footprint: Footprint }
  | { type: 'run:started'; runId: string; leaseId: string; sessionKey: string; agentId: string; language: ScriptLanguage }
  | CapabilityAudited
  | { type: 'run:finished'; result: OrchestrateResult };

export interface OrchestrateOptions {
  source: string;
  /** The script's name as the user gave it (for messages and module rules). */
  displayName: string;
  language: ScriptLanguage;
  agent: ResolvedAgent;
  home: string;
  sessionKey: string;
  timeoutMs?: number;
  /** Asked once for the whole footprint when `autonomy.approvals` is on. */
  approve?: (footprint: Footprint) => Promise<boolean>;
  /** Asked for a message_* send outside the agent's origin channel (absent: such a send is refused). */
  approveMessage?: (request: SendApprovalRequest) => Promise<boolean>;
  onEvent?: (event: OrchestrateEvent) => void;
  /** For coordinator children: caps requested (attenuated against the agent's). */
  requestedCaps?: readonly Capability[];
  parentRunId?: string;
  /**
   * Keep this run's results (ResultRefs and results/writes) instead of reaping
   * them: they are copied into this host directory (created, must not exist)
   * before the run directory is removed. For coordinator children, whose full
   * output outlives the run.
   */
  keepResultsDir?: string;
  /** Phase marks for benchmarks ("where the time goes"). */
  mark?: (phase: string) => void;
  /**
   * Coordinator children: a host path (created 0600, must not exist) that
   * receives the script's full stdout, byte for byte, up to the stdout hard
   * cap. When set, memory holds only the head and tail that re-enter the
   * caller, so a 50 MB child costs the runner no more than a 1 KB one.
   */
  stdoutFile?: string;
  /** Aborting it kills the jailed process (the run then ends as a failure). */
  signal?: AbortSignal;
  /** The registry the run's leases live in (default: its own). Shared, it must hold them revoked once the run returns. */
  leaseRegistry?: LeaseRegistry;
  /**
   * Tests only: when comis's own second-line timer fires (default: the
   * timeout + {@link SECOND_LINE_GRACE_MS}), to prove the supervisor alone
   * enforces the deadline.
   */
  secondLineTimerMs?: number;
  /**
   * Resume: the durable run whose pinned bytes this run re-spawns (`source` must
   * be those bytes); its last checkpoint is what resume() returns.
   */
  resumeOf?: string;
  /**
   * Replay (see replay.ts): the socket's tools answer from a recording; the
   * workspace is bound read-only; no MCP server starts; nothing durable is kept.
   */
  replayTools?: Record<string, ToolImpl>;
  /** Replay: the MCP surface that answers from the recording (no server starts). */
  replayMcp?: McpGateSurface;
  /** Replay: the original run's kept results (`durable/<runId>/results`), restored into this run's results area before the spawn. */
  replayResultsFrom?: string;
  /** Tests only: sees the run's MCP surface (server pids), and starts stdio servers without the pid namespace. */
  onMcp?: (mcp: RunMcp) => void;
  mcpNoPidNamespace?: boolean;
  /** Tests only: web_fetch's resolver and dialler (a stub resolver, a recording dialler that refuses non-loopback). */
  webFetchDeps?: WebFetchDeps;
  /** No one-shot repair for this run (`--no-repair`, for debugging); otherwise the agent's model class decides. */
  noRepair?: boolean;
  /**
   * The caller's store connection, opened on first use without the start-up sweeps: the jail uid
   * registry (as root) uses it instead of a connection of its own. The caller closes it.
   */
  store?: () => Promise<import('../store/store.js').Store>;
  /**
   * Coordinator children: a jail slot, awaited right before the spawn; the function it resolves
   * to releases the slot once the jail has exited. The run's host side (workspace, run dir,
   * socket) is prepared while other children's jails run; after a wait of
   * {@link SLOT_WAIT_RENEWS_LEASE_MS} or more the leases are minted afresh, so they count from the
   * spawn as an unwaited run's do.
   */
  jailSlot?: () => Promise<() => void>;
}

export interface OrchestrateResult {
  runId: string;
  leaseId: string;
  sessionKey: string;
  agentId: string;
  language: ScriptLanguage;
  outcome: 'success' | 'failure';
  exitCode: number | null;
  failureClass?: FailureClass;
  durationMs: number;
  timeoutMs: number;
  /** The script's stdout, bounded for re-entry (head and tail kept). */
  stdout: string;
  stdoutTruncated: boolean;
  /** Redacted stderr tail; present only on failure. */
  stderrTail?: string;
  toolCalls: ToolCallTally[];
  resultRefs: { count: number; bytes: number };
  /** Estimated tokens kept out of context; only when the run materialized ResultRefs. */
  savings?: { estSavedTokens: number; savedRatio?: number };
  /** A durable run that timed out: it can be continued with `comis orchestrate --resume <runId>` until expiresAt. */
  resumable?: { runId: string; expiresAt: number; checkpoint: boolean };
  /** A durable run: its pinned script and recording are kept for `comis replay <runId>`. */
  durable?: boolean;
  /** Only when the first attempt failed: what the one-shot repair did (content-free). */
  repair?: RepairRecord;
}

/** What a finished run yields: the caller-facing result, and the content-free record to store. */
export interface OrchestrateOutcome {
  public: OrchestrateResult;
  record: RunRecord;
  audit: AuditRow[];
}

export async function runOrchestrate(options: OrchestrateOptions): Promise<OrchestrateOutcome> {
  // Every event is also logged (content-free, by allowlist); the logger loads pino on first use.
  const emit = (event: OrchestrateEvent): void => {
    logRunEvent(event);
    options.onEvent?.(event);
  };
  const mark = options.mark ?? (() => undefined);
  const limits = options.agent.config.autonomy.limits;

  const prepared = await prepareRun(options, emit, mark);
  const { timeoutMs, surface } = prepared;
  // A run that may be repaired keeps its lease through the model round and one re-run (coordinator
  // children, which tee their stdout to a file, are not repaired).
  const repairable = options.stdoutFile === undefined && repairGate(resolveModel(options.agent.config.model), options.noRepair === true) === 'on';
  const leaseExtraMs = repairable ? REPAIR_BUDGET_MS + timeoutMs : 0;
  const lease = mintRunLease(options.agent.id, prepared.agentCaps, timeoutMs, options.leaseRegistry, leaseExtraMs);
  const { runId } = lease;
  // Aborted by cleanup: tool work still running for this run stops with it.
  const parts: RunParts = { lease, runEnded: new AbortController(), stdout: new StdoutCollector(limits.stdoutCapBytes) };
  let stdout = parts.stdout!;
  let repair: RepairRecord | undefined;
  const audit: AuditRow[] = [];
  const verdict: RunVerdict = { exitCode: null, stderr: '' };
  let started: number;
  let ctx: ReturnType<typeof toolContext>;
  let durable: Awaited<ReturnType<typeof openDurable>> | undefined;
  let releaseSlot: (() => void) | undefined;
  const freeSlot = (): void => {
    const release = releaseSlot;
    releaseSlot = undefined;
    release?.();
  };
  try {
    const agentJail = await openAgentJail(options.agent, options.home, surface, options.store);
    parts.workspaceReal = agentJail.workspaceReal;
    mark('workspace');
    parts.dir = await openRunDir(options.home, runId);
    mark('run-dir');
    // A replay's ResultRef handles point at the files the original run materialised: they come back first.
    if (options.replayResultsFrom) {
      const { restoreKeptResults } = await import('./replay.js');
      restoreKeptResults(options.replayResultsFrom, parts.dir.resultsDir, { file: parts.dir.fileMode, dir: parts.dir.fileMode === 0o644 ? 0o755 : 0o700 });
    }
    ctx = toolContext(runId, options.agent, agentJail, parts.dir, parts.runEnded.signal);
    // A durable run pins its bytes and gets its row before anything of the script runs.
    if (durableRuns(options.agent.config.autonomy) && !options.replayTools) durable = parts.durable = await openDurable(options, runId, ctx, { caps: prepared.agentCaps, surface });
    const services = (parts.services = startRunServices(options.agent, options.home, ctx, () => agentJail.hostUid, parts.dir.resultsDir, { ...options, ...(durable ? { recordMcp: durable.run } : {}) }));
    // Pre-flight saw describe( and the agent reaches MCP servers: their tool lists go into the SDK directory before the spawn
    // (a durable run records them; its replay answers them from that recording, starting no server).
    const mcpDigest = wantsMcpDigest(prepared.script.code, services.mcp.surface, prepared.agentCaps.includes('orch:mcp') && !surface.dropped.has('mcp'))
      ? prefetchMcpDigest({ surface: services.mcp.surface, servers: options.agent.mcpServers, dir: parts.dir.sdkDir, mode: parts.dir.fileMode, jailDir: JAIL_RUN_DIR, maxWaitMs: timeoutMs, signal: options.signal })
      : undefined;
    started = Date.now();
    try {
      // Pre-flight saw .sql(/.jsonpath(: a hardened DuckDB child boots from run start, while the script's jail does
      // (once the jail uid is confirmed, when it is confirmed after the spawn: the child runs as it).
      const prewarm = slicesResults(prepared.script.code)
        ? () =>
            void services.getSlicer().then(
              (x) => x.warm(),
              () => undefined,
            )
        : undefined;
      if (!agentJail.confirmUid) prewarm?.();
      // The socket's request frame limit, which the SDKs check before sending (a durable run's checkpoint takes up to 1 MiB).
      const frameLimit = options.replayTools ? DURABLE_FRAME_BYTES : durable?.maxFrameBytes;
      parts.socket = await openRunSocket({
        agent: options.agent,
        home: options.home,
        surface,
        lease,
        ctx,
        services,
        sockDir: parts.dir.sockDir,
        hostUid: agentJail.hostUid,
        ...(durable ? { durable: durable.run, maxFrameBytes: durable.maxFrameBytes } : {}),
        ...(options.replayTools ? { tools: options.replayTools, maxFrameBytes: DURABLE_FRAME_BYTES } : {}),
        ...(options.webFetchDeps ? { webFetchDeps: options.webFetchDeps } : {}),
        onAudit: (row, event) => {
          audit.push(row);
          emit(event);
        },
      });
      mark('socket');
      if (options.jailSlot) {
        const waitFrom = Date.now();
        releaseSlot = await options.jailSlot();
        started = Date.now();
        if (started - waitFrom >= SLOT_WAIT_RENEWS_LEASE_MS) renewRunLease(lease, options.agent.id, prepared.agentCaps, timeoutMs, leaseExtraMs);
      }
      if (options.stdoutFile) stdout.openTee(options.stdoutFile);
      const spawnPhase = {
        prepared,
        language: options.language,
        limits,
        runId,
        bearer: lease.bearer,
        agentJail,
        dir: parts.dir,
        socketPath: parts.socket.path,
        surface,
        readOnlyWorkspace: options.replayTools !== undefined,
        extraEnv: { ...(frameLimit ? { COMIS_FRAME_LIMIT: String(frameLimit) } : {}), ...(mcpDigest ? await mcpDigest : {}) },
      };
      let child = spawnScript({ ...spawnPhase, gated: true });
      mark('spawned');
      const dir = parts.dir;
      const socketPath = parts.socket.path;
      child = await releaseWhenReady(child, {
        install: () => installRunFiles(dir, options.home, surface, prepared.script),
        agentJail,
        onUidChange: (uid) => {
          // As root the jail's gid is its uid (toolContext); the socket was handed to the predicted uid.
          ctx.jail = { uid, gid: uid };
          chownSync(socketPath, uid, uid);
        },
        respawn: () => spawnScript(spawnPhase),
      });
      if (agentJail.confirmUid) prewarm?.();
      mark('released');
      // Logged after the spawn, so loading the logger overlaps the jail's own start.
      emit({ type: 'run:started', runId, leaseId: lease.lease.leaseId, sessionKey: options.sessionKey, agentId: options.agent.id, language: options.language });
      const exit = await collectRun(child, stdout, verdict, { timeoutMs, ...(options.secondLineTimerMs === undefined ? {} : { secondLineTimerMs: options.secondLineTimerMs }), ...(options.signal ? { signal: options.signal } : {}) });
      mark('exited');
      classifyRun(exit, stdout.bytes, verdict, limits);
      // Seam between classify and record: the one-shot repair of a failed run (loaded only then),
      // in the same run directory, socket and lease; the original verdict stands unless it succeeded.
      if (verdict.failureClass !== undefined && options.stdoutFile === undefined && options.replayTools === undefined) {
        const { repairFailedRun } = await import('./phases/repair.js');
        const repaired = await repairFailedRun({ options, prepared, lease, agentJail, dir: parts.dir, socketPath: parts.socket.path, audit, verdict, limits });
        repair = repaired.record;
        if (repair.outcome === 'repaired' && repaired.rerun) {
          Object.assign(verdict, { failureClass: undefined, exitCode: repaired.rerun.verdict.exitCode, stderr: '' });
          stdout = repaired.rerun.stdout;
        }
        mark('repair');
      }
      freeSlot(); // the jail (and a repair's re-run) has exited: the next child may spawn
    } catch (err) {
      if (err instanceof ComisError) throw err;
      if (err instanceof BeforeExecFailure) throw err.error;
      verdict.failureClass = 'spawn_fail';
      verdict.stderr += `\n${(err as Error).message}`;
    }
  } finally {
    freeSlot();
    await cleanupRun(parts, options.keepResultsDir ?? durable?.run.resultsDir);
    // A durable run's row is settled whatever ended it: resumable after a timeout, completed otherwise.
    if (durable) await endDurable(options.home, durable.run, verdict.failureClass === 'timeout').catch(() => undefined); // left running: the next sweep says interrupted
    mark('cleanup');
  }

  const outcome = recordRun({ options, runId, leaseId: lease.lease.leaseId, timeoutMs, started, verdict, stdout, audit, results: ctx.results });
  if (durable) {
    durable.run.saveStdout(outcome.public.stdout);
    outcome.public.durable = true;
    if (verdict.failureClass === 'timeout') outcome.public.resumable = { runId, expiresAt: Date.now() + durable.ttlMs, checkpoint: durable.run.checkpointRef !== undefined };
  }
  if (repair) {
    outcome.public.repair = repair;
    outcome.record.repair = repair;
  }
  emit({ type: 'run:finished', result: outcome.public });
  return outcome;
}
