/**
 * The long-running coordinator: runs a plan's children as isolated
 * orchestrate runs, at most `concurrency` at once and in DAG order, and
 * grows the lead's context by each child's bounded summary plus a ResultRef
 * drill-in line, never by the child's output.
 *
 * Security properties:
 * - Each child is its own orchestrate run, with its own lease, under a
 *   per-child agent id and workspace ($COMIS_HOME/workspaces/<lead>--<child>);
 *   it starts with no parent history unless the plan asks for the summary.
 * - A child's caps are exactly lead caps ∩ requested caps (the runner
 *   attenuates with `requestedCaps`); what the lead lacks is reported denied.
 * - The child's full stdout is streamed to a file (the runner's stdoutFile),
 *   then moved into the child's own workspace; the coordinator keeps only a
 *   bounded head and tail of it in memory.
 */
import { appendFileSync, chmodSync, closeSync, constants as fsConstants, copyFileSync, existsSync, mkdirSync, openSync, readFileSync, readSync, realpathSync, renameSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';

import { intersectCapabilities, PROFILE_CAPABILITIES } from '../capabilities/capabilities.js';
import { newId } from '../capabilities/lease.js';
import type { ResolvedAgent } from '../config/load.js';
import { workspacesDir } from '../config/paths.js';
import { copyTreeInto, makeDir, openRoot, procPath, type Handle } from '../confine/index.js';
import { ComisError } from '../errors.js';
import { assertGetsOrchestrate } from '../policy/surface.js';
import { removeTree } from '../orchestrate/run-dir.js';
import type { OrchestrateOutcome } from '../orchestrate/runner.js';
import type { RefusalRecord } from '../store/runs.js';
import type { Store } from '../store/store.js';
import { detectKind } from '../resultref/materialize.js';
import { CHILD_STATES, type ChildState, type CoordinatorEvent, type PlannedChild, type ResultRefInfo } from './events.js';
import type { Plan, PlanChild } from './plan.js';
import { DEFAULT_PROGRESS_INTERVAL_MS, startProgressFork } from './progress.js';
import { childStderrTail } from './stderr-tail.js';
import { announce, boundSummary, summarizeStdout } from './summary.js';

export const DEFAULT_CONCURRENCY = 2;
/** Children prepared (lease, run dir, socket) beyond the free jail slots, waiting to spawn. */
const PREPARED_AHEAD = 1;
export const RESULTS_DIR_NAME = 'comis-results';

export interface RunPlanOptions {
  plan: Plan;
  lead: ResolvedAgent;
  home: string;
  sessionKey: string;
  concurrency?: number;
  progressIntervalMs?: number;
  onEvent?: (event: CoordinatorEvent) => void;
  /** Each finished child run's record, to store (content-free). */
  onChildRun?: (outcome: OrchestrateOutcome) => void;
  /** A child refused before it started (pre-flight, policy, approval): its content-free record, to store as a refused run. */
  onChildRefused?: (refusal: RefusalRecord) => void;
  /**
   * A failed child's redacted, terminal-escaped stderr tail, right after its
   * child:finished event. Content, so never an event (events are stored and
   * content-free): only the live renderers of this process get it.
   */
  onChildDetail?: (detail: ChildDetail) => void;
  /** Aborting stops the plan: queued children never start, running ones are killed. */
  signal?: AbortSignal;
  /**
   * The caller's store connection, for the children's jail uid registry (as root); the caller
   * closes it. Without one, the plan opens its own on first use and closes it at the end.
   */
  store?: () => Promise<Store>;
  planRunId?: string;
}

export interface ChildReport extends PlannedChild {
  state: ChildState;
  runId: string | undefined;
  durationMs: number;
  stepsExecuted: number;
  failureClass?: string | undefined;
  errorCode?: string | undefined;
  /** The bounded summary the lead received. */
  summary: string;
  resultRef?: (ResultRefInfo & { path: string }) | undefined;
  /** A failed or timed-out child's last stderr (≤ 2,000 chars): secrets redacted, control characters shown as text. */
  stderrTail?: string | undefined;
}

export interface ChildDetail {
  type: 'child:detail';
  childId: string;
  runId: string | undefined;
  stderrTail: string;
}

export interface PlanRunResult {
  planRunId: string;
  sessionKey: string;
  planName: string;
  leadAgentId: string;
  outcome: 'success' | 'failure' | 'interrupted';
  durationMs: number;
  totals: Record<ChildState, number>;
  /** The lead's context: only the announcements (summary + drill-in line) of its children, in `file` (never kept in memory). */
  leadContext: { chars: number; file: string };
  children: ChildReport[];
}

/** A valid agent id for a child, derived from the lead's: `<lead>--<child>` (hashed down when too long). */
export function childAgentId(leadId: string, childId: string): string {
  const plain = `${leadId}--${childId}`;
  if (plain.length <= 64) return plain;
  const hash = createHash('sha256').update(plain).digest('hex').slice(0, 8);
  return `${leadId.slice(0, 64 - childId.length - 2 - 9)}-${hash}--${childId}`;
}

function emptyTotals(): Record<ChildState, number> {
  return Object.fromEntries(CHILD_STATES.map((s) => [s, 0])) as Record<ChildState, number>;
}

/** Reads at most `max` bytes of a file's head. */
function headOf(path: string, max: number): string {
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.alloc(max);
    const n = readSync(fd, buf, 0, max, 0);
    return buf.subarray(0, n).toString('utf8');
  } finally {
    closeSync(fd);
  }
}

/**
 * Moves the child's full stdout into `<child workspace>/comis-results/`.
 *
 * The workspace is jail-writable, and the child's jail is not the only one
 * that may be running in it: a run of the same plan started meanwhile (same
 * lead and child ids, so the same workspace and, as root, the same jail uid)
 * can swap `comis-results` or the names in it for links at any moment. So
 * nothing here acts on a path inside the workspace: the workspace is held
 * open (O_PATH), `comis-results` is looked up in it without following (a
 * planted link or file is removed, a directory made in its place) and held
 * open too, and every name in it is reached as
 * `/proc/self/fd/<held dir>/<name>`: a swap after the check changes nothing
 * we touch. The planted names `<runId>.stdout` and `<runId>.results` (the
 * child can learn its run id from its mounts) are removed first with
 * {@link removeTree}, which never follows a link; the copy across devices is
 * exclusive. The mode and the kind are settled on the scratch file, which
 * only comis writes, before the move: no chmod or read follows a name the
 * jail could have replaced.
 */
export async function materializeChildOutput(teePath: string, keptResults: string, workspace: string, runId: string, home: string, agentId: string): Promise<ResultRefInfo & { path: string }> {
  mkdirSync(workspace, { recursive: true, mode: 0o700 });
  chmodSync(teePath, 0o644);
  const bytes = statSync(teePath).size;
  const kind = bytes === 0 ? 'text' : detectKind(headOf(teePath, 2048));
  const name = `${runId}.stdout`;
  const resultsName = `${runId}.results`;
  const root = openRoot(workspace);
  try {
    const dir = resultsDirIn(root, agentId);
    try {
      await removeTree(procPath(dir.fd, name));
      await removeTree(procPath(dir.fd, resultsName));
      const target = procPath(dir.fd, name);
      try {
        renameSync(teePath, target);
      } catch {
        copyFileSync(teePath, target, fsConstants.COPYFILE_EXCL);
        rmSync(teePath, { force: true });
      }
      // The child's ResultRefs and writes, kept by the runner, sit beside its stdout.
      if (existsSync(keptResults)) {
        const resultsTarget = procPath(dir.fd, resultsName);
        try {
          renameSync(keptResults, resultsTarget);
        } catch {
          // Across devices: a copy that makes and holds every directory, so a name swapped mid-copy is never followed.
          copyTreeInto(keptResults, dir, resultsName);
          rmSync(keptResults, { recursive: true, force: true });
        }
      }
    } finally {
      closeSync(dir.fd);
    }
  } finally {
    closeSync(root.fd);
  }
  return { ref: `workspaces/${agentId}/${RESULTS_DIR_NAME}/${name}`, bytes, kind, path: join(realpathSync(workspace), RESULTS_DIR_NAME, name) };
}

/** `comis-results` in the held workspace, held open: a real directory (a planted file or link is removed and a directory made). */
function resultsDirIn(root: Handle, agentId: string): Handle {
  try {
    return makeDir(root, RESULTS_DIR_NAME, 0o755); // the directory, made or found (never through a link)
  } catch {
    /* a file or a link at the name: unlink removes the name itself */
  }
  try {
    unlinkSync(procPath(root.fd, RESULTS_DIR_NAME));
  } catch {
    /* gone meanwhile, or a directory now: makeDir takes it if it is one */
  }
  try {
    return makeDir(root, RESULTS_DIR_NAME, 0o755);
  } catch {
    throw new ComisError('IO_ERROR', `The results directory of ${agentId} is not a directory.`);
  }
}

/** Runs a plan to its end (or until aborted) and returns the lead's view of it. */
export async function runPlan(options: RunPlanOptions): Promise<PlanRunResult> {
  const { plan, lead, home, sessionKey } = options;
  const planRunId = options.planRunId ?? newId('p');
  const concurrency = Math.max(1, options.concurrency ?? plan.concurrency ?? DEFAULT_CONCURRENCY);
  const progressIntervalMs = options.progressIntervalMs ?? DEFAULT_PROGRESS_INTERVAL_MS;
  const emit = (event: CoordinatorEvent): void => options.onEvent?.(event);
  const started = Date.now();
  // A lead whose profile gets no orchestrate (assistant) runs no children either: refused before anything runs.
  assertGetsOrchestrate(lead);
  const leadCaps = PROFILE_CAPABILITIES[lead.config.autonomy.profile];
  const scratch = join(home, 'coordinator', planRunId);
  mkdirSync(scratch, { recursive: true, mode: 0o700 });
  // The lead's context grows on disk, one announcement a child: held in memory it grew the
  // coordinator by up to a summary (≤ 20,000 chars) a child for as long as the plan ran.
  const contextFile = join(scratch, 'lead-context.md');
  writeFileSync(contextFile, '', { mode: 0o600, flag: 'wx' });
  let leadContextChars = 0;

  const reports = new Map<string, ChildReport>();
  for (const c of plan.children) {
    const granted = intersectCapabilities(leadCaps, c.capabilities);
    reports.set(c.id, {
      childId: c.id,
      agentId: childAgentId(lead.id, c.id),
      dependsOn: c.dependsOn,
      requestedCaps: [...c.capabilities],
      grantedCaps: granted,
      deniedCaps: c.capabilities.filter((x) => !granted.includes(x)),
      state: 'queued',
      runId: undefined,
      durationMs: 0,
      stepsExecuted: 0,
      summary: '',
    });
  }
  emit({
    type: 'plan:started',
    planRunId,
    sessionKey,
    planName: plan.name,
    leadAgentId: lead.id,
    // The lead of a plan acts as a coordinator whatever its configured role: it only routes and reads summaries.
    leadRole: 'coordinator',
    concurrency,
    progressIntervalMs,
    children: [...reports.values()].map(({ childId, agentId, dependsOn, requestedCaps, grantedCaps, deniedCaps }) => ({ childId, agentId, dependsOn, requestedCaps, grantedCaps, deniedCaps })),
    timestamp: started,
  });

  const finish = (r: ChildReport, detail?: string): void => {
    const text = announce({ childId: r.childId, state: r.state, durationMs: r.durationMs, stepsExecuted: r.stepsExecuted, detail, summary: r.summary, resultRef: r.resultRef });
    appendFileSync(contextFile, text);
    leadContextChars += text.length;
    emit({
      type: 'child:finished',
      planRunId,
      childId: r.childId,
      runId: r.runId,
      agentId: r.agentId,
      state: r.state,
      durationMs: r.durationMs,
      stepsExecuted: r.stepsExecuted,
      failureClass: r.failureClass as never,
      errorCode: r.errorCode,
      summaryChars: r.summary.length,
      resultRef: r.resultRef ? { ref: r.resultRef.ref, bytes: r.resultRef.bytes, kind: r.resultRef.kind } : undefined,
      leadContextChars,
      timestamp: Date.now(),
    });
  };

  const { runOrchestrate } = await import('../orchestrate/runner.js');
  // One connection for every child: opening and closing one per child (SQLite's close checkpoints
  // the WAL) was about a third of the coordinator's CPU a child, as root. Not root, it never opens.
  let ownStore: Promise<Store> | undefined;
  const store =
    options.store ??
    ((): Promise<Store> => {
      ownStore ??= import('../store/store.js').then(({ openStore }) => openStore({ home, sweep: false }));
      return ownStore;
    });

  // Jail slots: at most `concurrency` children's jails run at once. A child's host side (workspace,
  // lease, run dir, socket) is prepared before it holds a slot, while the running children's jails
  // run, so a freed slot is refilled by a spawn, not by a whole preparation (~5 ms of this process's
  // CPU, ~10% of a trivial child's turn); the slot is handed on when the jail exits.
  const phases = new Map<string, 'preparing' | 'jail' | 'finishing'>();
  const inPhase = (phase: 'preparing' | 'jail' | 'finishing'): number => {
    let n = 0;
    for (const p of phases.values()) if (p === phase) n++;
    return n;
  };
  const slotWaiters: { childId: string; grant: () => void; refuse: (err: Error) => void }[] = [];
  let wake: (() => void) | undefined;
  const schedule = (): void => {
    wake?.();
    wake = undefined;
  };
  const stopped = (): Error => new Error('The plan was stopped before this child was spawned.');
  const releaser = (childId: string): (() => void) => {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      phases.set(childId, 'finishing');
      const next = slotWaiters.shift();
      if (next) {
        phases.set(next.childId, 'jail');
        next.grant();
      }
      schedule();
    };
  };
  const jailSlot = (childId: string): Promise<() => void> => {
    if (childSignal.aborted) return Promise.reject(stopped());
    if (inPhase('jail') < concurrency) {
      phases.set(childId, 'jail');
      schedule(); // one fewer being prepared: the next may start
      return Promise.resolve(releaser(childId));
    }
    return new Promise((resolve, reject) => slotWaiters.push({ childId, grant: () => resolve(releaser(childId)), refuse: reject }));
  };
  const refuseWaiters = (): void => {
    for (const w of slotWaiters.splice(0)) w.refuse(stopped());
  };
  // Children stop when the caller stops the plan, and when the plan fails (its bookkeeping threw):
  // runPlan then returns only once every child it started has ended, so none outlives it.
  const halt = new AbortController();
  const childSignal = options.signal ? AbortSignal.any([options.signal, halt.signal]) : halt.signal;
  childSignal.addEventListener('abort', refuseWaiters, { once: true });

  const runChild = async (child: PlanChild, r: ChildReport): Promise<void> => {
    r.state = 'running';
    const workspace = join(workspacesDir(home), r.agentId);
    mkdirSync(workspace, { recursive: true, mode: 0o700 });
    if (child.includeParentHistory === 'summary') {
      // Only the lead's context (announcements) so far, bounded: never a raw transcript.
      const parentSummary = join(realpathSync(workspace), 'parent_summary.md');
      rmSync(parentSummary, { force: true });
      writeFileSync(parentSummary, boundSummary(readFileSync(contextFile, 'utf8'), child.summaryMaxChars), { mode: 0o644, flag: 'wx' });
    }
    // Children do the heavy work the lead may not: they run as workers (the lead's
    // coordinator role narrows the lead only), under the lead's profile and tool policy.
    const agent: ResolvedAgent = { id: r.agentId, config: { ...lead.config, autonomy: { ...lead.config.autonomy, role: 'worker' } }, workspace, source: lead.source, agentWorkspaces: lead.agentWorkspaces };
    const teePath = join(scratch, `${child.id}.stdout`);
    const keptResults = join(scratch, `${child.id}.results`);
    rmSync(teePath, { force: true });
    rmSync(keptResults, { recursive: true, force: true });
    const t0 = Date.now();
    let steps = 0;
    let fork: { stop(): void } | undefined;
    let detail: string | undefined;
    try {
      const outcome = await runOrchestrate({
        source: child.source,
        displayName: child.displayName,
        language: child.language,
        agent,
        home,
        sessionKey,
        timeoutMs: child.timeoutMs,
        requestedCaps: r.grantedCaps,
        parentRunId: planRunId,
        stdoutFile: teePath,
        keepResultsDir: keptResults,
        signal: childSignal,
        store,
        jailSlot: () => jailSlot(child.id),
        onEvent: (e) => {
          if (e.type === 'capability:audited') steps++;
          else if (e.type === 'run:started') {
            r.runId = e.runId;
            emit({ type: 'child:started', planRunId, childId: child.id, runId: e.runId, agentId: r.agentId, timestamp: Date.now() });
            // Elapsed from the spawn: a child prepared ahead may have waited for its jail slot.
            fork = startProgressFork({ runId: e.runId, agentId: r.agentId, startedAt: Date.now(), intervalMs: progressIntervalMs, steps: () => steps, emit });
          }
        },
      });
      fork?.stop();
      options.onChildRun?.(outcome);
      const res = outcome.public;
      r.runId = res.runId;
      r.durationMs = res.durationMs;
      r.failureClass = res.failureClass;
      r.state = childSignal.aborted && res.outcome === 'failure' ? 'cancelled' : res.outcome === 'success' ? 'done' : res.failureClass === 'timeout' ? 'timed_out' : 'failed';
      if (r.state === 'cancelled') r.failureClass = undefined;
      else if (res.failureClass) detail = `${res.failureClass}${res.exitCode !== null && res.failureClass === 'nonzero_exit' ? `, exit ${res.exitCode}` : ''}`;
      if (r.state === 'failed' || r.state === 'timed_out') r.stderrTail = childStderrTail(res.stderrTail);
      r.summary = summarizeStdout(res.stdout, child.summaryMaxChars).text;
      try {
        r.resultRef = await materializeChildOutput(teePath, keptResults, workspace, res.runId, home, r.agentId);
      } catch {
        r.resultRef = undefined;
      }
    } catch (err) {
      fork?.stop();
      // A refusal before the start (RunRefusedError, not imported: the runner loads lazily) carries its record.
      const refusal = err instanceof ComisError ? (err as ComisError & { refusal?: RefusalRecord }).refusal : undefined;
      if (refusal) {
        r.runId = refusal.runId;
        options.onChildRefused?.(refusal);
      }
      r.state = 'failed';
      r.durationMs = Date.now() - t0;
      r.errorCode = err instanceof ComisError ? err.code : 'INTERNAL';
      detail = r.errorCode;
      r.summary = boundSummary(err instanceof Error ? err.message : String(err), child.summaryMaxChars);
    } finally {
      rmSync(teePath, { force: true });
    }
    r.stepsExecuted = steps;
    if (r.deniedCaps.length > 0) detail = [detail, `denied ${r.deniedCaps.join(', ')}`].filter(Boolean).join('; ');
    finish(r, detail);
    if (r.stderrTail !== undefined) options.onChildDetail?.({ type: 'child:detail', childId: r.childId, runId: r.runId, stderrTail: r.stderrTail });
  };

  // The scheduler: start ready children (deps done), in plan order, while no more than one is
  // prepared beyond the free jail slots; skip those whose deps failed. A child that reads the lead's
  // context so far (include_parent_history: summary) starts only once fewer than `concurrency`
  // children are in flight at all, as before: its context then holds every child finished by then.
  const running = new Map<string, Promise<void>>();
  const pending = [...plan.children];
  let thrown: { err: unknown } | undefined;
  const canStart = (child: PlanChild): boolean => {
    if (child.includeParentHistory === 'summary') return running.size < concurrency;
    return running.size < 2 * concurrency + PREPARED_AHEAD && inPhase('preparing') < concurrency - inPhase('jail') + PREPARED_AHEAD;
  };
  try {
    for (;;) {
      let changed = true;
      while (changed) {
        changed = false;
        for (let i = 0; i < pending.length; i++) {
          const child = pending[i]!;
          const r = reports.get(child.id)!;
          const depStates = child.dependsOn.map((d) => reports.get(d)!.state);
          const aborted = options.signal?.aborted === true;
          if (aborted || depStates.some((s) => s !== 'done' && s !== 'queued' && s !== 'running')) {
            r.state = aborted ? 'cancelled' : 'skipped';
            const failedDep = child.dependsOn.find((d) => !['done', 'queued', 'running'].includes(reports.get(d)!.state));
            r.summary = aborted ? 'not started: the plan was stopped' : `not started: dependency ${failedDep} did not succeed`;
            pending.splice(i--, 1);
            finish(r);
            changed = true;
          } else if (depStates.every((s) => s === 'done')) {
            // Ready, but no room yet: later children wait too, so children start in plan order.
            if (!canStart(child)) break;
            pending.splice(i--, 1);
            phases.set(child.id, 'preparing');
            const p = runChild(child, r)
              .catch((err: unknown) => {
                thrown ??= { err };
              })
              .finally(() => {
                running.delete(child.id);
                phases.delete(child.id);
                schedule();
              });
            running.set(child.id, p);
            changed = true;
          }
        }
      }
      if (running.size === 0) break;
      await new Promise<void>((resolve) => (wake = resolve));
      // A child's bookkeeping threw (the lead context could not be written…): the plan fails with it, as it did.
      if (thrown) {
        halt.abort();
        await Promise.allSettled(running.values());
        throw thrown.err;
      }
    }
  } finally {
    childSignal.removeEventListener('abort', refuseWaiters);
    if (ownStore) (await ownStore.catch(() => undefined))?.close();
  }

  const totals = emptyTotals();
  for (const r of reports.values()) totals[r.state]++;
  const outcome = options.signal?.aborted ? 'interrupted' : totals.done === plan.children.length ? 'success' : 'failure';
  const durationMs = Date.now() - started;
  emit({ type: 'plan:finished', planRunId, outcome, durationMs, totals, leadContextChars, timestamp: Date.now() });
  return {
    planRunId,
    sessionKey,
    planName: plan.name,
    leadAgentId: lead.id,
    outcome,
    durationMs,
    totals,
    leadContext: { chars: leadContextChars, file: contextFile },
    children: [...reports.values()],
  };
}
