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
import { chmodSync, cpSync, closeSync, constants as fsConstants, copyFileSync, existsSync, lstatSync, mkdirSync, openSync, realpathSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';

import { PROFILE_CAPABILITIES, type Capability } from '../capabilities/capabilities.js';
import { LeaseRegistry, newId } from '../capabilities/lease.js';
import { findToolEntry } from '../capabilities/tool-table.js';
import { CapCallError, listenCapSocket, type CapSocket } from '../capsocket/server.js';
import type { ResolvedAgent } from '../config/load.js';
import { ComisError } from '../errors.js';
import { logRunEvent } from '../obs/logger.js';
import { redactSecrets } from '../obs/output-guard.js';
import type { SliceQueryRunner } from '../resultref/duckdb/run-slice-query.js';
import { createResultStore, estimateSavings, liveRef } from '../resultref/materialize.js';
import { foldToolCalls, type AuditRow, type FailureClass, type RunRecord, type ToolCallTally } from '../store/runs.js';
import type { ToolContext } from '../tools/context.js';
import { grepTool, type GrepArgs } from '../tools/grep.js';
import { readTool, type ReadArgs } from '../tools/read.js';
import { writeTool, type WriteArgs } from '../tools/write.js';
import { createDispatcher, type CapabilityAudited } from './dispatch.js';
import { footprintOf, scanJavaScript, scanPython, type Footprint } from './preflight.js';
import { prepareRunDir, removeTree, stripWorkspace } from './run-dir.js';
import { boundStdout, DEFAULT_REENTRY_CHARS, tailOf } from './stdout.js';
import { prepareScript, type ScriptLanguage } from './transpile.js';

export const MAX_TIMEOUT_MS = 600_000;
export const STDERR_TAIL_CHARS = 2_000;
export const JAIL_WORKSPACE = '/workspace';
export const JAIL_RUN_DIR = '/run/comis';
export const JAIL_SOCKET = '/run/comis-cap/cap.sock';

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

function ensureWorkspace(path: string): string {
  mkdirSync(path, { recursive: true, mode: 0o700 });
  const real = realpathSync(path);
  chmodSync(real, 0o700);
  // A previous run may have planted a symlink or file where results/ is mounted.
  const resultsMount = join(real, 'results');
  try {
    const st = lstatSync(resultsMount);
    if (!st.isDirectory()) rmSync(resultsMount, { force: true, recursive: true });
  } catch {
    /* absent: bwrap creates the mount point */
  }
  return real;
}

const SDK_NAMES = ['comis_tools.ts', 'comis_tools.js', 'comis_tools.d.ts', 'comis_tools.py'];

/**
 * Puts the SDK into the run directory: the copy pre-generated at build
 * (dist/sdk, byte-identical to `comis sdk emit`), else emitted on the spot.
 */
async function installSdk(dir: string, mode: number): Promise<void> {
  const prebuilt = new URL('../../sdk/', import.meta.url);
  if (SDK_NAMES.every((n) => existsSync(new URL(n, prebuilt)))) {
    for (const n of SDK_NAMES) {
      copyFileSync(new URL(n, prebuilt), join(dir, n));
      chmodSync(join(dir, n), mode);
    }
    return;
  }
  const { emitSdk } = await import('../sdk/emit.js');
  for (const [name, content] of emitSdk('all')) writeFileSync(join(dir, name), content, { mode });
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
  const timeoutMs = Math.min(MAX_TIMEOUT_MS, Math.max(100, options.timeoutMs ?? limits.timeoutMs));
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
  const missing = footprint.capabilities.filter((c) => !agentCaps.includes(c));
  if (missing.length > 0) {
    const tools = footprint.tools.filter((t) => missing.includes(t === 'mcp' ? 'orch:mcp' : findToolEntry(t)!.capability));
    throw new ComisError('CAPABILITY_DENIED', `The script needs ${missing.join(', ')}, which agent "${options.agent.id}" (profile ${options.agent.config.autonomy.profile}) does not hold.`, {
      hint: 'Nothing was run. Use an agent whose profile holds it (see docs/config.md), or remove the call.',
      details: { missingCapabilities: missing, tools },
    });
  }
  if (footprint.tools.includes('write') && !options.agent.config.autonomy.write) {
    throw new ComisError('CAPABILITY_DENIED', `The script calls comis_tools.write, but the write surface of agent "${options.agent.id}" is off.`, {
      hint: `Nothing was run. Set agents.${options.agent.id}.autonomy.write: true in config.yaml to turn it on.`,
      details: { missingCapabilities: [], surface: 'write' },
    });
  }
  if (options.agent.config.autonomy.approvals) {
    if (!options.approve) {
      throw new ComisError('APPROVAL_REQUIRED', 'This agent requires an approval for each run and there is no way to ask.', { hint: 'Pass --yes to approve.' });
    }
    if (!(await options.approve(footprint))) {
      throw new ComisError('APPROVAL_REFUSED', 'The run was not approved; nothing was run.');
    }
  }

  // 4. Lease: the run's own attenuation of the agent's assembly lease.
  const runId = newId('r');
  const registry = new LeaseRegistry();
  const assembly = registry.mintAssembly(options.agent.id, agentCaps, timeoutMs + 120_000);
  const { lease, bearer } = registry.mintRun(assembly.lease, { runId, socketId: runId, ttlMs: timeoutMs + 30_000 });

  // 5. Run directory (outside the workspace, private under $COMIS_HOME/runs; the jail sees it read-only).
  // As root, each workspace gets its own stable unprivileged uid (so agents never share a process count).
  const root = process.getuid?.() === 0;
  const workspacePath = ensureWorkspace(options.agent.workspace);
  const hostUid = root ? jail.deriveJailUid(workspacePath) : (process.getuid?.() ?? 65534);
  const workspaceReal = jail.prepareWritableDir(workspacePath, hostUid);
  const { path: runDir, sdkDir, resultsDir, writesDir, sockDir, fileMode } = await prepareRunDir(options.home, runId, { root });
  await installSdk(sdkDir, fileMode);
  writeFileSync(join(sdkDir, prepared.fileName), prepared.code, { mode: fileMode });

  const audit: AuditRow[] = [];
  const budget = { remainingBytes: limits.resultRunMb * 1024 * 1024 };
  const results = createResultStore(resultsDir, { budget, maxFileBytes: limits.resultFileMb * 1024 * 1024 });
  const ctx: ToolContext = {
    runId,
    agentId: options.agent.id,
    workspaceReal,
    jailWorkspace: JAIL_WORKSPACE,
    writesDir,
    maxReadBytes: limits.resultFileMb * 1024 * 1024,
    budget,
    results,
  };
  // DuckDB slicing (ResultRef.sql/.jsonpath): one hardened, jailed child per query, loaded on first use.
  let slicer: SliceQueryRunner | undefined;
  const getSlicer = async (): Promise<SliceQueryRunner> => {
    if (!slicer) {
      const { createSliceQueryRunner } = await import('../resultref/duckdb/run-slice-query.js');
      slicer = createSliceQueryRunner({ resultsDir });
    }
    return slicer;
  };
  const sliceFailure = (r: { error: string; code: string }): unknown => {
    // An absent DuckDB degrades honestly to an {error}; anything else is a refusal the script sees thrown.
    if (r.code === 'duckdb_missing') return { error: r.error };
    throw new CapCallError(r.code, r.error);
  };
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
    socket = await listenCapSocket({
      dir: sockDir,
      clientUid: hostUid,
      handler: createDispatcher({
        registry,
        socketId: runId,
        agentId: options.agent.id,
        surfaces: { write: options.agent.config.autonomy.write },
        tools: {
          read: (args) => readTool(ctx, args as ReadArgs),
          grep: (args) => grepTool(ctx, args as GrepArgs),
          write: (args) => writeTool(ctx, args as WriteArgs),
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
        { kind: 'rw', source: workspaceReal, target: JAIL_WORKSPACE },
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
    });
    mark('spawned');
    // A script that slices with SQL gets a DuckDB child started while it runs.
    if (/\.(sql|jsonpath)\s*\(/.test(prepared.code)) void getSlicer().then((x) => x.warm(), () => undefined);
    // Logged after the spawn, so loading the logger overlaps the jail's own start.
    emit({ type: 'run:started', runId, leaseId: lease.leaseId, sessionKey: options.sessionKey, agentId: options.agent.id, language: options.language });
    const timer = setTimeout(() => {
      failureClass ??= 'timeout';
      child.kill();
    }, timeoutMs);
    const onAbort = (): void => child.kill();
    if (options.signal?.aborted) child.kill();
    else options.signal?.addEventListener('abort', onAbort, { once: true });
    const keepHead = Math.floor(DEFAULT_REENTRY_CHARS * 0.6);
    const keepTail = DEFAULT_REENTRY_CHARS - keepHead;
    child.stdout.on('data', (chunk: Buffer) => {
      stdoutBytes += chunk.length;
      if (stdoutBytes > limits.stdoutCapBytes) {
        failureClass ??= 'stdout_cap';
        child.kill();
        return;
      }
      stdoutBuf += chunk.toString('utf8');
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
      stderrBuf = tailOf(stderrBuf + chunk.toString('utf8'), STDERR_TAIL_CHARS * 4);
    });
    const exit = await child.exited;
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', onAbort);
    mark('exited');
    exitCode = exit.code ?? (exit.signal ? 128 : null);
    if (exit.killedBy === 'quota' && !failureClass) {
      // No failure class of its own (the stored enum is closed): a non-zero exit that says why.
      failureClass = 'nonzero_exit';
      stderrBuf += `\ncomis: the run was killed: its workspace passed autonomy.limits.workspaceMb (${limits.workspaceMb} MiB allocated) or workspaceInodes (${limits.workspaceInodes} entries), or held a directory comis could not measure.\n`;
    }
    if (!failureClass) {
      if (exit.code === 0) failureClass = undefined;
      else if (/^bwrap: /m.test(stderrBuf) && stdoutBytes === 0 && audit.length === 0) failureClass = 'spawn_fail';
      else failureClass = 'nonzero_exit';
    }
  } catch (err) {
    if (err instanceof ComisError) throw err;
    failureClass = 'spawn_fail';
    stderrBuf += `\n${(err as Error).message}`;
  } finally {
    if (teeFd !== undefined) closeSync(teeFd);
    registry.revoke(assembly.lease.leaseId);
    await socket?.close();
    await slicer?.close();
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

/** boundStdout's shape for a tee'd run, whose buffer already dropped `omittedChars` between head and tail. */
function boundTeedStdout(kept: string, omittedChars: number): { text: string; truncated: boolean } {
  const head = Math.floor(DEFAULT_REENTRY_CHARS * 0.6);
  const tail = DEFAULT_REENTRY_CHARS - head;
  const omitted = omittedChars + kept.length - head - tail;
  return { text: `${kept.slice(0, head)}\n[… ${omitted} characters of stdout omitted by comis …]\n${kept.slice(kept.length - tail)}`, truncated: true };
}
