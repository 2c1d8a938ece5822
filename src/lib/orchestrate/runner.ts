/**
 * One orchestrate run, end to end:
 * preflight → approval → lease → run dir → capability socket → jail →
 * collect → classify → record → cleanup. Returns the script's (bounded)
 * stdout and a content-free record; emits typed events for renderers.
 *
 * Security properties: nothing runs unjailed (no provider, no interpreter →
 * refusal); the script reaches tools only through the socket, gated by its
 * own per-run lease, which is revoked before this function returns; the
 * run's results area lives outside the jail-writable workspace and is bound
 * read-only; stderr is never returned on success and is redacted when shown.
 */
import { chmodSync, cpSync, closeSync, constants as fsConstants, copyFileSync, existsSync, mkdirSync, openSync, writeFileSync, writeSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import { join } from 'node:path';
import { StringDecoder } from 'node:string_decoder';

import { PROFILE_CAPABILITIES, type Capability } from '../capabilities/capabilities.js';
import { LeaseRegistry, newId } from '../capabilities/lease.js';
import { findToolEntry } from '../capabilities/tool-table.js';
import { CapCallError } from '../capsocket/protocol.js';
import { listenCapSocket, type CapSocket } from '../capsocket/server.js';
import type { ResolvedAgent } from '../config/load.js';
import { ComisError } from '../errors.js';
import { logRunEvent, logToolFailure } from '../obs/logger.js';
import { agentSurface, assertGetsOrchestrate, describeDrop } from '../policy/surface.js';
import { redactSecrets } from '../redact/output-guard.js';
import type { SliceQueryRunner } from '../resultref/duckdb/run-slice-query.js';
import { createResultStore, estimateSavings, liveRef } from '../resultref/materialize.js';
import { foldToolCalls, type AuditRow, type FailureClass, type RefusalReason, type RefusalRecord, type RunRecord, type ToolCallTally } from '../store/runs.js';
import type { ToolContext } from '../tools/context.js';
import { grepTool, type GrepArgs } from '../tools/grep.js';
import { memoryGetTool, memorySearchTool, type MemorySearchArgs } from '../tools/memory.js';
import { readTool, type ReadArgs } from '../tools/read.js';
import { webFetchTool, type WebFetchArgs, type WebFetchDeps } from '../tools/web-fetch.js';
import { writeTool, type WriteArgs } from '../tools/write.js';
import { prefetchMcpDigest, wantsMcpDigest } from '../mcp/describe-digest.js';
import { createRunMcp, type RunMcp } from '../mcp/run-surface.js';
import type { WebSearchArgs } from '../web/search/tool.js';
import { createDispatcher, type CapabilityAudited } from './dispatch.js';
import { footprintOf, mcpPreflightRefusal, scanJavaScript, scanPython, slicesResults, type Footprint } from './preflight.js';
import { prepareRunDir, removeTree, stripWorkspace } from './run-dir.js';
import { boundStdout, DEFAULT_REENTRY_CHARS, tailOf } from './stdout.js';
import { prepareScript, type ScriptLanguage } from './transpile.js';
import { prepareAgentJail } from './workspace.js';

export const MAX_TIMEOUT_MS = 600_000;
export const STDERR_TAIL_CHARS = 2_000;
export const JAIL_WORKSPACE = '/workspace';
export const JAIL_RUN_DIR = '/run/comis';
export const JAIL_SOCKET = '/run/comis-cap/cap.sock';
/**
 * comis's own timer fires this long after the deadline: it is the second
 * line. The first is the supervisor the jail starts under, which kills at
 * the deadline whatever this process's event loop is doing.
 */
export const SECOND_LINE_GRACE_MS = 2_000;
/**
 * A stdout flood the script's own runtime could not hold: at least this many
 * bytes (one full pipe buffer) reached comis and the script then died of a
 * fatal signal (see {@link classifyExit}).
 */
export const STDOUT_FLOOD_MIN_BYTES = 64 * 1024;
/** Signals a runtime dies of when its memory runs out (V8 aborts; an mmap refused under RLIMIT_AS faults or traps). */
const MEMORY_DEATH_SIGNALS = new Set([5, 6, 7, 9, 11]); // SIGTRAP, SIGABRT, SIGBUS, SIGKILL, SIGSEGV

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
  /** Tests only: sees the run's MCP surface (server pids), and starts stdio servers without the pid namespace. */
  onMcp?: (mcp: RunMcp) => void;
  mcpNoPidNamespace?: boolean;
  /** Tests only: web_fetch's resolver and dialler (a stub resolver, a recording dialler that refuses non-loopback). */
  webFetchDeps?: WebFetchDeps;
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
}

const SDK_NAMES = ['comis_tools.ts', 'comis_tools.js', 'comis_tools.d.ts', 'comis_tools.py'];

/**
 * Puts the SDK into the run directory: the copy pre-generated at build
 * (dist/sdk, byte-identical to `comis sdk emit`), else emitted on the spot.
 * An agent whose tool policy or role drops tools gets its own SDK, emitted
 * from the table without them, so describe() and the types never offer a
 * tool the socket would deny by policy.
 */
async function installSdk(dir: string, mode: number, home: string, tools?: readonly string[]): Promise<void> {
  const prebuilt = new URL('../../sdk/', import.meta.url);
  if (!tools && SDK_NAMES.every((n) => existsSync(new URL(n, prebuilt)))) {
    for (const n of SDK_NAMES) {
      copyFileSync(new URL(n, prebuilt), join(dir, n));
      chmodSync(join(dir, n), mode);
    }
    return;
  }
  const { sdkForTools } = await import('./sdk-cache.js');
  for (const [name, content] of await sdkForTools(home, tools)) writeFileSync(join(dir, name), content, { mode });
}

/** What a finished run yields: the caller-facing result, and the content-free record to store. */
export interface OrchestrateOutcome {
  public: OrchestrateResult;
  record: RunRecord;
  audit: AuditRow[];
}

/**
 * A run refused before it started (exit 4): the error exactly as the user sees
 * it (same code, message, hint, details, exit code), plus the content-free
 * record of the refusal for the caller to store (`comis orchestrate` does, so
 * `explain --last` shows it). A ComisError like any other for every caller.
 */
export class RunRefusedError extends ComisError {
  readonly refusal: RefusalRecord;
  constructor(err: ComisError, refusal: RefusalRecord) {
    super(err.code, err.message, { hint: err.hint, details: err.details, exitCode: err.exitCode });
    this.refusal = refusal;
  }
}

export async function runOrchestrate(options: OrchestrateOptions): Promise<OrchestrateOutcome> {
  // Every event is also logged (content-free, by allowlist); the logger loads pino on first use.
  const emit = (event: OrchestrateEvent): void => {
    logRunEvent(event);
    options.onEvent?.(event);
  };
  const mark = options.mark ?? (() => undefined);
  const limits = options.agent.config.autonomy.limits;
  const timeoutMs = Math.min(MAX_TIMEOUT_MS, Math.max(100, options.timeoutMs ?? limits.timeoutMs));
  // Refusals (exit 4) carry their record: the reason and the table names involved, never the script's text.
  const refusedFrom = Date.now();
  const refuse = (err: ComisError, reason: RefusalReason, names: { capabilities?: readonly string[]; tools?: readonly string[] } = {}): RunRefusedError =>
    new RunRefusedError(err, {
      runId: newId('r'),
      sessionKey: options.sessionKey,
      agentId: options.agent.id,
      parentRunId: options.parentRunId,
      language: options.language,
      startedAt: refusedFrom,
      endedAt: Date.now(),
      code: err.code as RefusalRecord['code'],
      reason,
      capabilities: names.capabilities ?? [],
      tools: names.tools ?? [],
    });
  // 0. A profile without orchestrate (assistant) is refused before anything else runs.
  try {
    assertGetsOrchestrate(options.agent);
  } catch (err) {
    throw err instanceof ComisError ? refuse(err, 'profile_no_orchestrate') : err;
  }
  const surface = agentSurface(options.agent);
  const jail = await import('../jail/spawn.js');

  // 1. Refuse before anything else if there is no working jail: never run unjailed.
  const provider = jail.detectSandboxProvider({ cacheFile: join(options.home, 'cache', 'jail-provider.json') });
  if (provider.provider !== 'bwrap' || provider.problem) {
    throw new ComisError('SANDBOX_UNAVAILABLE', provider.problem?.message ?? `No working sandbox provider on ${process.platform}.`, {
      hint: `${provider.problem?.hint ?? 'Install bubblewrap (apt-get install bubblewrap).'} Run \`comis jail probe\` for details.`,
    });
  }

  mark('provider');
  // 2. Script → what the jail runs; interpreter resolved before any side effect.
  const prepared = await prepareScript(options.source, options.language, options.displayName);
  const interpreter = jail.resolveInterpreter(options.language === 'py' ? 'python3' : 'node');
  mark('transpile');

  // 3. Pre-flight: the footprint against the agent's capabilities and surfaces.
  // A script that never names the SDK has no static footprint; skip the parser.
  const scan = !prepared.code.includes('comis_tools')
    ? { tools: new Set<string>(), parsed: true }
    : options.language === 'py'
      ? scanPython(prepared.code, interpreter.hostPath)
      : await scanJavaScript(prepared.code);
  const footprint = footprintOf(scan);
  emit({ type: 'run:preflight', footprint });
  mark('preflight');
  const profileCaps = PROFILE_CAPABILITIES[options.agent.config.autonomy.profile];
  const agentCaps = options.requestedCaps ? profileCaps.filter((c) => options.requestedCaps!.includes(c)) : [...profileCaps];
  // Tool policy and role first: they name the config entry that took the tool away.
  const policyDenied = footprint.tools.filter((t) => surface.dropped.has(t));
  if (policyDenied.length > 0) {
    const first = policyDenied[0]!;
    const drop = surface.dropped.get(first)!;
    const err = new ComisError('CAPABILITY_DENIED', `The script calls comis_tools.${first}, which the tool policy of agent "${options.agent.id}" denies (${describeDrop(options.agent.id, first, drop)}).`, {
      hint: `Nothing was run. Change agents.${options.agent.id}.skills.toolPolicy (or autonomy.role) in ${options.agent.source ?? 'config.yaml'}, or remove the call.`,
      details: { missingCapabilities: [], policyDenied: policyDenied.map((t) => ({ tool: t, ...surface.dropped.get(t)! })) },
    });
    throw refuse(err, drop.why, { tools: policyDenied });
  }
  const missing = footprint.capabilities.filter((c) => !agentCaps.includes(c));
  if (missing.length > 0) {
    const tools = footprint.tools.filter((t) => missing.includes(t === 'mcp' ? 'orch:mcp' : findToolEntry(t)!.capability));
    const err = new ComisError('CAPABILITY_DENIED', `The script needs ${missing.join(', ')}, which agent "${options.agent.id}" (profile ${options.agent.config.autonomy.profile}) does not hold.`, {
      hint: 'Nothing was run. Use an agent whose profile holds it (see docs/config.md), or remove the call.',
      details: { missingCapabilities: missing, tools },
    });
    throw refuse(err, 'capability_missing', { capabilities: missing, tools });
  }
  if (footprint.tools.includes('write') && !surface.write) {
    const err = new ComisError('CAPABILITY_DENIED', `The script calls comis_tools.write, but the write surface of agent "${options.agent.id}" is off.`, {
      hint: `Nothing was run. Set agents.${options.agent.id}.autonomy.write: true in config.yaml to turn it on.`,
      details: { missingCapabilities: [], surface: 'write' },
    });
    throw refuse(err, 'surface_disabled', { capabilities: ['orch:write'], tools: ['write'] });
  }
  const mcpRefusal = mcpPreflightRefusal(footprint, options.agent.config.autonomy.mcp?.allow, options.agent.id);
  if (mcpRefusal) {
    const err = new ComisError('CAPABILITY_DENIED', mcpRefusal.message, { hint: mcpRefusal.hint, details: { missingCapabilities: [], surface: 'mcp' } });
    throw refuse(err, 'surface_disabled', { capabilities: ['orch:mcp'], tools: ['mcp'] });
  }
  if (options.agent.config.autonomy.approvals) {
    if (!options.approve) {
      const err = new ComisError('APPROVAL_REQUIRED', 'This agent requires an approval for each run and there is no way to ask.', { hint: 'Pass --yes to approve.' });
      throw refuse(err, 'approval_required', footprint);
    }
    let approved: boolean;
    try {
      approved = await options.approve(footprint);
    } catch (err) {
      // The prompt refuses to hang (no terminal: APPROVAL_REQUIRED); that is a refusal too.
      if (err instanceof ComisError && (err.code === 'APPROVAL_REQUIRED' || err.code === 'APPROVAL_REFUSED')) throw refuse(err, err.code === 'APPROVAL_REQUIRED' ? 'approval_required' : 'approval_refused', footprint);
      throw err;
    }
    if (!approved) {
      throw refuse(new ComisError('APPROVAL_REFUSED', 'The run was not approved; nothing was run.'), 'approval_refused', footprint);
    }
  }

  // 4. Lease: the run's own attenuation of the agent's assembly lease.
  const runId = newId('r');
  const registry = options.leaseRegistry ?? new LeaseRegistry();
  const assembly = registry.mintAssembly(options.agent.id, agentCaps, timeoutMs + 120_000);
  const { lease, bearer } = registry.mintRun(assembly.lease, { runId, socketId: runId, ttlMs: timeoutMs + 30_000 });

  // 5. Run directory (outside the workspace, private under $COMIS_HOME/runs; the jail sees it read-only).
  // As root, each workspace gets its own stable unprivileged uid (so agents never share a process count).
  // The workspace and readOnlyAllowPaths are screened, and (as root) the uid comes from the store's registry.
  const root = process.getuid?.() === 0;
  const { workspaceReal, hostUid, readOnlyMounts } = await prepareAgentJail(options.agent, options.home);
  // bwrap cannot create the results/ mount point inside a read-only workspace bind.
  if (surface.role === 'coordinator') mkdirSync(join(workspaceReal, 'results'), { recursive: true, mode: 0o755 });
  const { path: runDir, sdkDir, resultsDir, writesDir, sockDir, fileMode } = await prepareRunDir(options.home, runId, { root });
  await installSdk(sdkDir, fileMode, options.home, surface.dropped.size > 0 ? surface.tools : undefined);
  writeFileSync(join(sdkDir, prepared.fileName), prepared.code, { mode: fileMode });

  const audit: AuditRow[] = [];
  const budget = { remainingBytes: limits.resultRunMb * 1024 * 1024 };
  const results = createResultStore(resultsDir, { budget, maxFileBytes: limits.resultFileMb * 1024 * 1024 });
  // Aborted in `finally`: tool work still running for this run stops with it.
  const runEnded = new AbortController();
  const ctx: ToolContext = {
    runId,
    agentId: options.agent.id,
    workspaceReal,
    jail: { uid: hostUid, gid: root ? hostUid : (process.getgid?.() ?? hostUid) },
    jailWorkspace: JAIL_WORKSPACE,
    writesDir,
    maxReadBytes: limits.resultFileMb * 1024 * 1024,
    budget,
    results,
    runEnded: runEnded.signal,
  };
  // DuckDB slicing (ResultRef.sql/.jsonpath): one hardened, jailed child per query, loaded on first use.
  // One promise, so a slicer still loading when the run ends is closed too (and a late warm() starts nothing).
  let slicer: Promise<SliceQueryRunner> | undefined;
  const getSlicer = (): Promise<SliceQueryRunner> =>
    (slicer ??= import('../resultref/duckdb/run-slice-query.js').then(({ createSliceQueryRunner }) => createSliceQueryRunner({ resultsDir, hostUid })));
  const sliceFailure = (r: { error: string; code: string }): unknown => {
    // An absent DuckDB degrades honestly to an {error}; anything else is a refusal the script sees thrown.
    if (r.code === 'duckdb_missing') return { error: r.error };
    throw new CapCallError(r.code, r.error);
  };
  // comis_tools.mcp: the allowlist and configured servers; a server starts on the first allowed call.
  const mcp: RunMcp = createRunMcp({ servers: options.agent.mcpServers, allow: options.agent.config.autonomy.mcp?.allow, home: options.home, results, runEnded: runEnded.signal, ...(options.mcpNoPidNamespace ? { noPidNamespace: true } : {}) });
  options.onMcp?.(mcp);
  // Pre-flight saw describe( and the agent reaches MCP servers: their tool lists go into the SDK directory before the spawn.
  const mcpDigest = wantsMcpDigest(prepared.code, mcp.surface, agentCaps.includes('orch:mcp') && !surface.dropped.has('mcp'))
    ? prefetchMcpDigest({ surface: mcp.surface, servers: options.agent.mcpServers, dir: sdkDir, mode: fileMode, jailDir: JAIL_RUN_DIR, maxWaitMs: timeoutMs, signal: options.signal })
    : undefined;
  const started = Date.now();
  let socket: CapSocket | undefined;
  let stdoutBuf = '';
  let stdoutBytes = 0;
  // With stdoutFile, stdoutBuf keeps a head and a rolling tail; omittedChars counts what fell between.
  let omittedChars = 0;
  let teeFd: number | undefined;
  let stderrBuf = '';
  let failureClass: FailureClass | undefined;
  let exitCode: number | null = null;
  try {
    // Pre-flight saw .sql(/.jsonpath(: a hardened DuckDB child boots from run start, while the script's jail does.
    if (slicesResults(prepared.code)) void getSlicer().then((x) => x.warm(), () => undefined);
    socket = await listenCapSocket({
      dir: sockDir,
      clientUid: hostUid,
      handler: createDispatcher({
        registry,
        socketId: runId,
        agentId: options.agent.id,
        surfaces: { write: surface.write },
        dropped: surface.dropped,
        mcp: mcp.surface,
        tools: {
          read: (args) => readTool(ctx, args as ReadArgs),
          grep: (args) => grepTool(ctx, args as GrepArgs),
          write: (args) => writeTool(ctx, args as WriteArgs),
          memory_search: (args) => memorySearchTool(ctx, { home: options.home }, args as MemorySearchArgs),
          memory_get: (args) => memoryGetTool(ctx, args as { path: string }),
          // undici loads on the first search only (no other run or command pays for it).
          web_search: async (args) => (await import('../web/search/tool.js')).webSearchTool(ctx, options.agent, args as WebSearchArgs),
          web_fetch: (args) => webFetchTool(ctx, options.agent.config.web.fetch, args as WebFetchArgs, options.webFetchDeps),
          ref_sql: async (args) => {
            const { ref, query } = args as { ref: string; query: string };
            liveRef(results, ref);
            const r = await (await getSlicer()).query(query);
            return 'error' in r ? sliceFailure(r) : r.rows;
          },
          ref_jsonpath: async (args) => {
            const { ref, expr } = args as { ref: string; expr: string };
            liveRef(results, ref);
            const r = await (await getSlicer()).jsonpath(ref, expr);
            return 'error' in r ? sliceFailure(r) : r.value;
          },
        },
        audit: (event) => {
          audit.push({ leaseId: event.leaseId, runId: event.runId, tool: event.tool, capability: event.capability, decision: event.decision, reason: event.reason, at: event.at });
          emit(event);
        },
        onInternalError: (tool, err) => logToolFailure({ runId, leaseId: lease.leaseId, tool, error: err }),
      }),
    });
    // sockDir stays ours: the jail uid reaches the socket through the mount stage, never the directory.
    mark('socket');

    const command =
      options.language === 'py'
        ? [interpreter.jailPath, ...(interpreter.args ?? []), '-E', '-s', '-B', `${JAIL_RUN_DIR}/${prepared.fileName}`]
        : [interpreter.jailPath, ...(interpreter.args ?? []), ...prepared.nodeFlags, `${JAIL_RUN_DIR}/${prepared.fileName}`];
    const env: Record<string, string> = {
      PATH: '/usr/local/bin:/usr/bin:/bin',
      HOME: '/tmp',
      LANG: 'C.UTF-8',
      TMPDIR: '/tmp',
      COMIS_CAP_LEASE: bearer,
      COMIS_ORCH_SOCKET: JAIL_SOCKET,
      COMIS_RUN_ID: runId,
      COMIS_WORKSPACE: JAIL_WORKSPACE,
    };
    if (mcpDigest) Object.assign(env, await mcpDigest);
    if (options.language === 'py') {
      env.PYTHONPATH = JAIL_RUN_DIR;
      env.PYTHONDONTWRITEBYTECODE = '1';
      env.PYTHONUNBUFFERED = '1';
    }
    if (options.stdoutFile) teeFd = openSync(options.stdoutFile, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW, 0o600);
    const child = jail.spawnJail({
      command,
      mounts: [
        ...interpreter.mounts,
        ...readOnlyMounts,
        // A coordinator's own scripts mutate nothing: its workspace is read-only (heavy work goes to children).
        { kind: surface.role === 'coordinator' ? 'ro' : 'rw', source: workspaceReal, target: JAIL_WORKSPACE },
        { kind: 'ro', source: resultsDir, target: `${JAIL_WORKSPACE}/results` },
        { kind: 'ro', source: sdkDir, target: JAIL_RUN_DIR },
        { kind: 'socket', source: socket.path, target: JAIL_SOCKET },
      ],
      cwd: JAIL_WORKSPACE,
      env,
      limits,
      hostUid,
      // Counted as the host sees it (as root: every byte, whatever the jail's modes say).
      writableQuota: { hostPath: workspaceReal, maxBytes: limits.workspaceMb * 1024 * 1024, maxEntries: limits.workspaceInodes },
      stdin: 'ignore',
      deadlineMs: timeoutMs,
    });
    mark('spawned');
    // Logged after the spawn, so loading the logger overlaps the jail's own start.
    emit({ type: 'run:started', runId, leaseId: lease.leaseId, sessionKey: options.sessionKey, agentId: options.agent.id, language: options.language });
    const timer = setTimeout(() => {
      failureClass ??= 'timeout';
      child.kill();
    }, options.secondLineTimerMs ?? timeoutMs + SECOND_LINE_GRACE_MS);
    const onAbort = (): void => child.kill();
    if (options.signal?.aborted) child.kill();
    else options.signal?.addEventListener('abort', onAbort, { once: true });
    const keepHead = Math.floor(DEFAULT_REENTRY_CHARS * 0.6);
    const keepTail = DEFAULT_REENTRY_CHARS - keepHead;
    // A multi-byte character may straddle two chunks: decode as a stream.
    const stdoutText = new StringDecoder('utf8');
    const stderrText = new StringDecoder('utf8');
    child.stdout.on('data', (chunk: Buffer) => {
      stdoutBytes += chunk.length;
      if (stdoutBytes > limits.stdoutCapBytes) {
        failureClass ??= 'stdout_cap';
        child.kill();
        return;
      }
      stdoutBuf += stdoutText.write(chunk);
      if (teeFd !== undefined) {
        writeSync(teeFd, chunk);
        if (stdoutBuf.length > 4 * DEFAULT_REENTRY_CHARS) {
          const drop = stdoutBuf.length - keepHead - keepTail;
          omittedChars += drop;
          stdoutBuf = stdoutBuf.slice(0, keepHead) + stdoutBuf.slice(stdoutBuf.length - keepTail);
        }
      }
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderrBuf = tailOf(stderrBuf + stderrText.write(chunk), STDERR_TAIL_CHARS * 4);
    });
    const exit = await child.exited;
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', onAbort);
    mark('exited');
    if (stdoutBytes <= limits.stdoutCapBytes) stdoutBuf += stdoutText.end();
    stderrBuf = tailOf(stderrBuf + stderrText.end(), STDERR_TAIL_CHARS * 4);
    // The supervisor's own SIGKILL at the deadline reads as 137, like a jail killed by comis's timer.
    exitCode = exit.code ?? (exit.signal ? 128 + (osConstants.signals[exit.signal] ?? 0) : null);
    if (exit.killedBy === 'quota' && !failureClass) {
      // No failure class of its own (the stored enum is closed): a non-zero exit that says why.
      failureClass = 'nonzero_exit';
      stderrBuf += `\ncomis: the run was killed: its workspace passed autonomy.limits.workspaceMb (${limits.workspaceMb} MiB allocated) or workspaceInodes (${limits.workspaceInodes} entries), or held a directory comis could not measure.\n`;
    }
    failureClass ??= classifyExit(exit, stdoutBytes);
  } catch (err) {
    if (err instanceof ComisError) throw err;
    failureClass = 'spawn_fail';
    stderrBuf += `\n${(err as Error).message}`;
  } finally {
    if (teeFd !== undefined) closeSync(teeFd);
    registry.revoke(assembly.lease.leaseId);
    runEnded.abort();
    await socket?.close();
    // Every DuckDB child of the run (a spare, a query still running) is gone before the run returns.
    await slicer?.then((x) => x.close(), () => undefined);
    // Every MCP server the run started is gone (its whole process tree) before the run returns.
    await mcp.close().catch(() => undefined);
    if (options.keepResultsDir) {
      try {
        cpSync(resultsDir, options.keepResultsDir, { recursive: true, errorOnExist: true, force: false, verbatimSymlinks: true });
      } catch {
        /* keeping is best effort: the run's outcome stands */
      }
    }
    // The jail is gone (exited resolves only then). Neither step follows a link the jail left.
    await removeTree(runDir).catch(() => undefined); // a leftover is swept by the next comis process
    await stripWorkspace(workspaceReal).catch(() => undefined);
    mark('cleanup');
  }

  const durationMs = Date.now() - started;
  const outcome = failureClass === undefined ? 'success' : 'failure';
  const bounded = omittedChars === 0 ? boundStdout(stdoutBuf) : boundTeedStdout(stdoutBuf, omittedChars);
  const toolCalls = foldToolCalls(audit);
  const result: OrchestrateResult = {
    runId,
    leaseId: lease.leaseId,
    sessionKey: options.sessionKey,
    agentId: options.agent.id,
    language: options.language,
    outcome,
    exitCode,
    durationMs,
    timeoutMs,
    stdout: bounded.text,
    stdoutTruncated: bounded.truncated,
    toolCalls,
    resultRefs: { count: results.materialized.count, bytes: results.materialized.bytes },
  };
  const savings = estimateSavings(results.materialized.bytes, bounded.text.length);
  if (savings) result.savings = savings;
  if (failureClass) {
    result.failureClass = failureClass;
    result.stderrTail = redactSecrets(tailOf(stderrBuf, STDERR_TAIL_CHARS));
  }
  const record: RunRecord = {
    runId,
    sessionKey: options.sessionKey,
    agentId: options.agent.id,
    leaseId: lease.leaseId,
    parentRunId: options.parentRunId,
    language: options.language,
    startedAt: started,
    endedAt: started + durationMs,
    durationMs,
    outcome,
    exitCode,
    failureClass,
    stdoutChars: bounded.text.length,
    toolCalls,
    resultRefs: result.resultRefs,
    savings,
  };
  emit({ type: 'run:finished', result });
  return { public: result, record, audit };
}

/**
 * The failure class of a run comis did not end itself (no timer, cap or
 * abort), from facts the script cannot forge: the supervisor's own death at
 * the deadline, bubblewrap's status pipe (`started`: it exec'd the command),
 * the exit code, and the bytes comis received. Never from the script's text.
 *
 * The one heuristic, `stdout_cap` for a flood the script's runtime could not
 * hold (node queues writes to a full pipe in its own heap until it dies): at
 * least {@link STDOUT_FLOOD_MIN_BYTES} of stdout arrived and the script then
 * died of a fatal signal. A script can trigger it on purpose, but gains
 * nothing: printing past the hard cap gets the same class.
 */
export function classifyExit(exit: { code: number | null; signal: NodeJS.Signals | null; killedBy?: 'kill' | 'quota' | 'deadline'; started: boolean }, stdoutBytes: number): FailureClass | undefined {
  if (exit.killedBy === 'deadline') return 'timeout';
  if (exit.code === 0 && !exit.signal) return undefined;
  if (!exit.started && !exit.killedBy) return 'spawn_fail';
  if (exit.code !== null && exit.code > 128 && MEMORY_DEATH_SIGNALS.has(exit.code - 128) && stdoutBytes >= STDOUT_FLOOD_MIN_BYTES && !exit.killedBy) return 'stdout_cap';
  return 'nonzero_exit';
}

/** boundStdout's shape for a tee'd run, whose buffer already dropped `omittedChars` between head and tail. */
function boundTeedStdout(kept: string, omittedChars: number): { text: string; truncated: boolean } {
  const head = Math.floor(DEFAULT_REENTRY_CHARS * 0.6);
  const tail = DEFAULT_REENTRY_CHARS - head;
  const omitted = omittedChars + kept.length - head - tail;
  return { text: `${kept.slice(0, head)}\n[… ${omitted} characters of stdout omitted by comis …]\n${kept.slice(kept.length - tail)}`, truncated: true };
}
