/**
 * The body of `comis replay <runId>` and `comis orchestrate replay <runId>`:
 * finds the durable run, checks its recording is complete, re-spawns its
 * pinned bytes against the replay socket (src/lib/orchestrate/replay.ts), and
 * compares: each call in order, then the output.
 */
import { join } from 'node:path';

import { ComisError, ExitCode, type ExitCodeValue } from '../lib/errors.js';
import type { ReplayCall } from '../lib/orchestrate/replay.js';
import { escapeControls } from './terminal-text.js';

export interface ReplayReport {
  runId: string;
  replayRunId: string;
  verdict: 'identical' | 'replay_divergence' | 'output_differs';
  divergence?: { index: number; tool: string; recordedTool?: string; why: 'tool' | 'params' | 'extra_call' | 'missing_calls' };
  calls: ReplayCall[];
  recordedCalls: number;
  outcome: 'success' | 'failure';
  failureClass?: string;
  stdout: string;
  /** Absent when the original run's output was not kept. */
  stdoutMatches?: boolean;
  durationMs: number;
}

export async function replayMain(runId: string, json: boolean, timeoutMs: number | undefined): Promise<{ report: ReplayReport; exitStatus: ExitCodeValue }> {
  const { loadConfig, resolveAgent } = await import('../lib/config/load.js');
  const { openStore } = await import('../lib/store/store.js');
  const { getDurableRun } = await import('../lib/store/durable-runs.js');
  const { durableArea, readPinnedScript, readRecording, readRecordedStdout } = await import('../lib/orchestrate/durable.js');
  const loaded = await loadConfig();
  const store = openStore({ home: loaded.home });
  let row: ReturnType<typeof getDurableRun>;
  try {
    row = getDurableRun(store.db, runId);
  } finally {
    store.close();
  }
  if (!row || row.kind !== 'orchestrate')
    throw new ComisError('NOT_FOUND', `No durable orchestrate run ${runId} to replay.`, { hint: 'Only runs of an agent with autonomy.durability {enabled, orchestrateResume} are recorded; `comis explain` lists them.' });
  if (row.status === 'orphaned' || row.status === 'reclaimed') throw new ComisError('NOT_FOUND', `Run ${runId} cannot be replayed: it is ${row.status}${row.reason ? ` (${row.reason})` : ''} and its recording is gone.`);
  if (row.status === 'running') throw new ComisError('USAGE', `Run ${runId} is still running.`, { hint: 'Replay it once it has ended.' });
  const pinned = readPinnedScript(loaded.home, runId);
  const recording = readRecording(loaded.home, runId);
  if (!recording.complete) throw new ComisError('USAGE', `The recording of run ${runId} is incomplete (it passed its size bound), so a replay could not answer every call.`);
  const { createReplay } = await import('../lib/orchestrate/replay.js');
  const { runOrchestrate } = await import('../lib/orchestrate/runner.js');
  const log: import('../lib/orchestrate/replay.js').ReplayLog = { calls: [] };
  const agent = resolveAgent(loaded, row.agentId);
  const replay = createReplay(recording.calls, log, agent, recording.toolLists);
  const outcome = await runOrchestrate({
    source: pinned.source,
    displayName: pinned.displayName,
    language: pinned.language,
    agent,
    home: loaded.home,
    sessionKey: row.sessionKey,
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
    // The original run was approved; a replay acts on nothing.
    approve: async () => true,
    replayTools: replay.tools,
    replayMcp: replay.mcp,
    replayResultsFrom: join(durableArea(loaded.home, runId), 'results'),
  });
  const result = outcome.public;
  const original = readRecordedStdout(loaded.home, runId);
  let divergence: ReplayReport['divergence'] = log.divergence;
  if (!divergence && log.calls.length < recording.calls.length) {
    divergence = { index: log.calls.length, tool: '-', recordedTool: recording.calls[log.calls.length]!.tool, why: 'missing_calls' };
  }
  const stdoutMatches = original === undefined ? undefined : original === result.stdout;
  const report: ReplayReport = {
    runId,
    replayRunId: result.runId,
    verdict: divergence ? 'replay_divergence' : stdoutMatches === false ? 'output_differs' : 'identical',
    ...(divergence ? { divergence } : {}),
    calls: log.calls,
    recordedCalls: recording.calls.length,
    outcome: result.outcome,
    ...(result.failureClass ? { failureClass: result.failureClass } : {}),
    stdout: result.stdout,
    ...(stdoutMatches === undefined ? {} : { stdoutMatches }),
    durationMs: result.durationMs,
  };
  if (!json) {
    process.stdout.write(process.stdout.isTTY ? escapeControls(result.stdout) : result.stdout);
    const d = report.divergence;
    const line =
      report.verdict === 'identical'
        ? `comis: replay of ${runId} identical: ${log.calls.length} calls answered from the recording${stdoutMatches ? ', same output' : ''}, in ${result.durationMs} ms\n`
        : report.verdict === 'replay_divergence'
          ? `comis: replay_divergence at call ${d!.index}: ${d!.why === 'missing_calls' ? `the replay ended before the recorded ${d!.recordedTool}` : d!.why === 'extra_call' ? `${d!.tool}, which the recording does not have` : `${d!.tool}${d!.why === 'tool' ? ` where the recording has ${d!.recordedTool}` : ' with other params than recorded'}`} (comis replay ${runId} --json compares each call)\n`
          : `comis: replay of ${runId}: every call matched, but the output differs from the original run's\n`;
    process.stderr.write(line);
  }
  return { report, exitStatus: report.verdict === 'identical' ? ExitCode.OK : ExitCode.FAILURE };
}
