/**
 * One orchestrate run as a front end performs it: the timeout rule, the
 * runner, and the store around it (the run, or its content-free refusal,
 * recorded so `comis explain --last` shows it). `comis orchestrate` and
 * `comis mcp serve` both run scripts through {@link runAndRecord}: there is
 * one run path, whatever the caller speaks.
 */
import { ComisError } from '../errors.js';
import type { OrchestrateOptions, OrchestrateOutcome } from './runner.js';

/** The smallest timeout a run may have; 0 (and only 0) below it means "the configured default". */
export const MIN_TIMEOUT_MS = 100;
/** The largest timeout a caller may ask for (the runner clamps to the same bound). */
export const MAX_REQUEST_TIMEOUT_MS = 600_000;

/**
 * Seed 000: a non-positive timeout means the default; a positive one below
 * the floor is a mistake, not a wish. Returns the timeout to pass to the
 * runner (undefined: the agent's configured one). `name` is how the caller
 * spells the setting (`--timeout-ms`, `timeoutMs`), for the message.
 */
export function resolveRequestedTimeout(timeoutMs: number | undefined, name: string): number | undefined {
  if (timeoutMs !== undefined && timeoutMs > 0 && timeoutMs < MIN_TIMEOUT_MS) {
    throw new ComisError('USAGE', `${name} ${timeoutMs} is below the ${MIN_TIMEOUT_MS} ms minimum.`, {
      hint: `Pass ${MIN_TIMEOUT_MS} to ${MAX_REQUEST_TIMEOUT_MS}, or 0 for the agent's configured timeout (autonomy.limits.timeoutMs, default 60000).`,
    });
  }
  return timeoutMs === 0 ? undefined : timeoutMs;
}

/** A new session key, as `comis orchestrate` prints it when none was given. */
export function newSessionKey(): string {
  return `s-${Date.now().toString(36)}-${Math.random().toString(16).slice(2, 8)}`;
}

/** What a front end passes: the runner's own options (same names, same meaning), a resolved timeout and a warning sink. */
export type RecordedRunOptions = Pick<OrchestrateOptions, 'source' | 'displayName' | 'language' | 'agent' | 'home' | 'sessionKey' | 'approve' | 'approveMessage' | 'signal' | 'mark' | 'resumeOf' | 'noRepair' | 'requestedCaps'> & {
  /** Already resolved by {@link resolveRequestedTimeout} (undefined: the agent's default). */
  timeoutMs?: number | undefined;
  /** A store problem costs the record, never the output: it is reported here. */
  onWarning: (message: string) => void;
};

/**
 * Runs one script and records it. The store opens once the jail is spawned; a run
 * refused before it started (RunRefusedError, exit 4) has its refusal recorded
 * and is rethrown unchanged.
 */
export async function runAndRecord(options: RecordedRunOptions): Promise<OrchestrateOutcome> {
  const { runOrchestrate, RunRefusedError } = await import('./runner.js');
  // One store connection per run. As root the jail uid registry opens it before the spawn (the
  // uid is decided before the jail uses it); otherwise it opens once the jail is spawned (loading
  // SQLite then overlaps the jail's own start instead of delaying it), or at the end for a run that
  // never got that far (a refusal, a spawn failure): every run is recorded either way. A store
  // problem costs the record, never the output. Once the jail runs, the connection runs the
  // durable start-up sweep and probes the outbox (one indexed query) for sends a crash left pending.
  type Connection = { store: import('../store/store.js').Store; startupSweep: typeof import('../store/store.js').startupSweep };
  type Ready = Connection & {
    recordRun: typeof import('../store/runs.js').recordRun;
    recordRefusal: typeof import('../store/runs.js').recordRefusal;
    outboxPending: boolean;
  };
  let connection: Promise<Connection> | undefined;
  // Only the store module before the spawn: the record's and the outbox's modules load once the jail runs.
  const connect = (): Promise<Connection> => {
    connection ??= import('../store/store.js').then(({ openStore, startupSweep }) => ({ store: openStore({ home: options.home, sweep: false }), startupSweep }));
    connection.catch(() => undefined);
    return connection;
  };
  let storeReady: Promise<Ready> | undefined;
  const openTheStore = (): Promise<Ready> => {
    storeReady ??= Promise.all([connect(), import('../store/runs.js'), import('../store/outbox.js')]).then(([c, { recordRun, recordRefusal }, { hasPending }]) => {
      c.startupSweep(c.store);
      let outboxPending = true; // a probe that fails: the sweep looks for itself
      try {
        outboxPending = hasPending(c.store.db);
      } catch {
        /* the sweep's own connection finds out */
      }
      return { ...c, recordRun, recordRefusal, outboxPending };
    });
    storeReady.catch(() => undefined);
    return storeReady;
  };
  const store = async (write: (s: Ready) => void): Promise<void> => {
    try {
      const ready = await openTheStore();
      try {
        write(ready);
      } finally {
        ready.store.close();
      }
    } catch (err) {
      options.onWarning(`the run was not recorded in the store: ${(err as Error).message}`);
    }
  };
  // Sends a crash left pending are delivered while this run's jail runs (outbox-sweep.ts).
  let sweep: Promise<void> | undefined;
  const outcome = await runOrchestrate({
    source: options.source,
    displayName: options.displayName,
    language: options.language,
    agent: options.agent,
    home: options.home,
    sessionKey: options.sessionKey,
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    ...(options.mark ? { mark: options.mark } : {}),
    ...(options.approve ? { approve: options.approve } : {}),
    ...(options.approveMessage ? { approveMessage: options.approveMessage } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.resumeOf ? { resumeOf: options.resumeOf } : {}),
    ...(options.requestedCaps ? { requestedCaps: options.requestedCaps } : {}),
    ...(options.noRepair ? { noRepair: true } : {}),
    store: async () => (await connect()).store,
    onEvent: (event) => {
      if (event.type === 'run:started') {
        const ready = openTheStore();
        sweep ??= ready.then(
          (r) => (r.outboxPending ? sweepPending(options.home) : undefined),
          () => sweepPending(options.home),
        );
      }
    },
  }).catch(async (err: unknown) => {
    await sweep;
    if (err instanceof RunRefusedError) await store((s) => s.recordRefusal(s.store.db, err.refusal));
    else if (connection)
      await connection.then(
        (c) => c.store.close(),
        () => undefined,
      );
    throw err;
  });
  await store((s) => s.recordRun(s.store.db, outcome.record, outcome.audit));
  await sweep;
  return outcome;
}

/**
 * The outbox sweep on its own connection (it switches to synchronous = FULL and awaits
 * deliveries), started only when the run's connection saw something pending; never fails the run.
 */
async function sweepPending(home: string): Promise<void> {
  try {
    const [{ openStore }, { sweepOnOpen }] = await Promise.all([import('../store/store.js'), import('./outbox-sweep.js')]);
    const store = openStore({ home });
    try {
      await sweepOnOpen(store);
    } finally {
      store.close();
    }
  } catch {
    /* the next start sweeps again */
  }
}
