/**
 * The body of `comis run`, without the terminal: load config and plan, open
 * the store, run the plan while storing its events, and return the result.
 * Also the read-only `--follow` tail of a run another process is executing.
 */
import { ComisError } from '../errors.js';
import type { CoordinatorEvent } from './events.js';
import type { ChildDetail, PlanRunResult } from './coordinator.js';

export interface ExecuteRunInput {
  planFile: string;
  agent?: string | undefined;
  session?: string | undefined;
  concurrency?: number | undefined;
  progressIntervalMs?: number | undefined;
  onEvent: (event: CoordinatorEvent) => void;
  /** A failed child's stderr tail, for the live renderers only (never stored). */
  onChildDetail?: (detail: ChildDetail) => void;
  signal?: AbortSignal;
  /** A store problem costs the record, never the run. */
  onWarning?: (message: string) => void;
}

export async function executeRunPlan(input: ExecuteRunInput): Promise<PlanRunResult> {
  const { loadPlan } = await import('./plan.js');
  const { loadConfig, resolveAgent } = await import('../config/load.js');
  const plan = await loadPlan(input.planFile);
  const loaded = await loadConfig();
  const lead = resolveAgent(loaded, input.agent ?? plan.lead);
  const sessionKey = input.session ?? `s-${Date.now().toString(36)}-${Math.random().toString(16).slice(2, 8)}`;
  const { openStore } = await import('../store/store.js');
  const { createPlanEventLog } = await import('./event-log.js');
  let store: ReturnType<typeof openStore> | undefined;
  let log: ReturnType<typeof createPlanEventLog> | undefined;
  try {
    store = openStore({ home: loaded.home });
    log = createPlanEventLog(store.db);
    // Pending sends a crash left in the outbox are delivered before the plan starts.
    await (await import('../orchestrate/outbox-sweep.js')).sweepOnOpen(store);
  } catch (err) {
    input.onWarning?.(`the run is not recorded in the store: ${(err as Error).message}`);
  }
  const guarded =
    <A extends unknown[]>(fn: ((...a: A) => void) | undefined) =>
    (...a: A) => {
      try {
        fn?.(...a);
      } catch (err) {
        input.onWarning?.(`store write failed: ${(err as Error).message}`);
      }
    };
  const append = guarded(log?.append);
  const { runPlan } = await import('./coordinator.js');
  const connection = store;
  try {
    return await runPlan({
      plan,
      lead,
      home: loaded.home,
      sessionKey,
      concurrency: input.concurrency,
      progressIntervalMs: input.progressIntervalMs,
      signal: input.signal,
      // The children's jail uid registry uses the connection the plan is recorded on.
      ...(connection ? { store: async () => connection } : {}),
      onEvent: (e) => {
        append(e);
        input.onEvent(e);
      },
      onChildRun: guarded(log?.recordChildRun),
      onChildRefused: guarded(log?.recordChildRefusal),
      onChildDetail: input.onChildDetail,
    });
  } finally {
    store?.close();
  }
}

export async function executeFollow(input: { planRunId: string; onEvent: (event: CoordinatorEvent) => void; signal?: AbortSignal; pollMs?: number }): Promise<'success' | 'failure' | 'interrupted' | 'running'> {
  const { comisHome, storePath } = await import('../config/paths.js');
  const { existsSync } = await import('node:fs');
  const path = storePath(comisHome());
  const notFound = (): ComisError =>
    new ComisError('NOT_FOUND', `No plan run ${/^[a-z]-[0-9a-f]{1,32}$/.test(input.planRunId) ? input.planRunId : '(invalid id)'} in the store.`, {
      hint: 'Pass the plan run id that `comis run` printed (p-…), with the same COMIS_HOME.',
    });
  if (!existsSync(path)) throw notFound();
  const { openStore } = await import('../store/store.js');
  const { followPlanRun, planRunExists } = await import('./event-log.js');
  const store = openStore({ path, readonly: true });
  try {
    if (store.version < 4 || !planRunExists(store.db, input.planRunId)) throw notFound();
    return await followPlanRun({ db: store.db, planRunId: input.planRunId, onEvent: input.onEvent, signal: input.signal, pollMs: input.pollMs });
  } finally {
    store.close();
  }
}
