/**
 * `comis orchestrate --resume <runId>`: checks the durable run's row (after
 * the start-up sweep settled it), reads its pinned bytes, and runs them as a
 * new run with a new lease attenuated like the first: under today's config,
 * narrowed to what the original run held (its ceiling, pinned with its
 * bytes), so a config narrowed since applies and one widened since does not. A resume that cannot
 * start turns the row into an orphan (resume_prestart_failed) rather than
 * leaving it resumable forever.
 */
import { ComisError } from '../lib/errors.js';
import type { RecordedRunOptions } from '../lib/orchestrate/execute.js';
import type { OrchestrateOutcome } from '../lib/orchestrate/runner.js';

type Base = Pick<RecordedRunOptions, 'source' | 'displayName' | 'language' | 'agent' | 'home' | 'sessionKey' | 'resumeOf' | 'requestedCaps'>;

export async function prepareResume(runId: string, agentFlag: string | undefined): Promise<{ run: (start: (o: Base) => Promise<OrchestrateOutcome>) => Promise<OrchestrateOutcome>; approve: (footprint: unknown) => Promise<boolean> }> {
  const { loadConfig, resolveAgent } = await import('../lib/config/load.js');
  const { durableRuns } = await import('../lib/config/durability.js');
  const { openStore } = await import('../lib/store/store.js');
  const { getDurableRun, endDurableRun, reclaimArtifacts } = await import('../lib/store/durable-runs.js');
  const { narrowToCeiling, readPinnedScript } = await import('../lib/orchestrate/durable.js');
  const loaded = await loadConfig();
  const store = openStore({ home: loaded.home });
  const orphan = (): void => {
    const s = openStore({ home: loaded.home });
    try {
      if (getDurableRun(s.db, runId)?.status === 'resumable') {
        endDurableRun(s.db, runId, { status: 'orphaned', reason: 'resume_prestart_failed' });
        reclaimArtifacts(loaded.home, runId);
      }
    } finally {
      s.close();
    }
  };
  let row: ReturnType<typeof getDurableRun>;
  try {
    row = getDurableRun(store.db, runId);
  } finally {
    store.close();
  }
  if (!row || row.kind !== 'orchestrate') throw new ComisError('NOT_FOUND', `No durable orchestrate run ${runId}.`, { hint: '`comis explain` lists resumable and orphaned runs.' });
  if (row.status !== 'resumable') {
    const why = row.status === 'orphaned' ? `orphaned (${row.reason ?? 'unknown'})` : row.status === 'resumed' ? `already resumed by ${row.resumedBy}` : row.status;
    throw new ComisError('USAGE', `Run ${runId} is not resumable: it is ${why}.`, { hint: 'Only a durable run that timed out or was interrupted with a checkpoint can be resumed, once.' });
  }
  if (agentFlag !== undefined && agentFlag !== row.agentId) {
    throw new ComisError('USAGE', `Run ${runId} belongs to agent "${row.agentId}", not "${agentFlag}".`, { hint: 'A resumed run runs as the agent of the original run; drop --agent.' });
  }
  const agent = resolveAgent(loaded, row.agentId);
  if (!durableRuns(agent.config.autonomy)) {
    throw new ComisError('USAGE', `Agent "${row.agentId}" no longer has durable runs on.`, { hint: `Set agents.${row.agentId}.autonomy.durability {enabled: true, orchestrateResume: true} to resume it.` });
  }
  const pinned = readPinnedScript(loaded.home, runId);
  const { askApproval } = await import('./approval.js');
  return {
    approve: askApproval(false, agent.id) as (footprint: unknown) => Promise<boolean>,
    run: async (start) => {
      try {
        // Attenuated exactly like the first, and never past it: the narrower of the original run's surface and today's config.
        return await start({
          source: pinned.source,
          displayName: pinned.displayName,
          language: pinned.language,
          agent: pinned.ceiling ? narrowToCeiling(agent, pinned.ceiling) : agent,
          home: loaded.home,
          sessionKey: row.sessionKey,
          resumeOf: runId,
          ...(pinned.ceiling ? { requestedCaps: pinned.ceiling.caps } : {}),
        });
      } catch (err) {
        orphan();
        throw err;
      }
    },
  };
}
