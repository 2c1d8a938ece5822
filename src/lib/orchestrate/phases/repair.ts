/**
 * Phase 7½, repair (between classify and record; ../repair.ts decides): a
 * failed run of a `nano`/`small`-model agent whose stderr tail shows a
 * recoverable error gets ONE model request for the whole corrected script,
 * which goes through the same pre-flight (prepare, with the same options:
 * the same agent, capabilities, tool policy, surfaces and approvals) and runs
 * EXACTLY once more in the same envelope: the same run directory, the same
 * capability socket, the same per-run lease and bearer (its TTL was minted to
 * cover the repair: see lease.ts), the same jail uid, mounts and limits.
 *
 * The re-run's stdout replaces the first attempt's only when it succeeded;
 * otherwise the first attempt's verdict and stdout stand untouched (the
 * original error is what the caller sees). Audit events of both attempts
 * come through the same socket, so the run's tool tallies cover both.
 */
import { unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { resolveModel } from '../../config/model-resolve.js';
import { ComisError } from '../../errors.js';
import { getLogger } from '../../obs/logger.js';
import { redactSecrets } from '../../redact/output-guard.js';
import type { AuditRow, RepairRecord } from '../../store/runs.js';
import type { RunDirectory } from '../run-dir.js';
import { attemptRepair } from '../repair.js';
import { classifyRepair } from '../repair-class.js';
import type { OrchestrateOptions } from '../runner.js';
import { tailOf } from '../stdout.js';
import { classifyRun } from './classify.js';
import { collectRun, StdoutCollector, type RunVerdict } from './collect.js';
import { JAIL_RUN_DIR, JAIL_WORKSPACE, STDERR_TAIL_CHARS } from './constants.js';
import type { RunLease } from './lease.js';
import { prepareRun, type PreparedRun } from './prepare.js';
import type { AgentJail } from './run-dir.js';
import { spawnScript, type SpawnPhase } from './spawn.js';

export interface RepairPhase {
  options: OrchestrateOptions;
  prepared: PreparedRun;
  lease: RunLease;
  agentJail: AgentJail;
  dir: RunDirectory;
  socketPath: string;
  /** The audit rows so far (the first attempt's). */
  audit: readonly AuditRow[];
  /** The first attempt's verdict, classified as failed. */
  verdict: RunVerdict;
  limits: SpawnPhase['limits'] & { stdoutCapBytes: number };
}

export interface RepairedAttempt {
  verdict: RunVerdict;
  stdout: StdoutCollector;
}

export async function repairFailedRun(p: RepairPhase): Promise<{ record: RepairRecord; rerun?: RepairedAttempt }> {
  const { options, prepared, agentJail, dir } = p;
  let again: PreparedRun | undefined;
  const first = {
    failureClass: p.verdict.failureClass,
    exitCode: p.verdict.exitCode,
    denied: p.audit.some((a) => a.decision === 'deny'),
    stderrTail: redactSecrets(tailOf(p.verdict.stderr, STDERR_TAIL_CHARS)),
  };
  try {
    return await attemptRepair<RepairedAttempt>(
      {
        model: resolveModel(options.agent.config.model),
        noRepair: options.noRepair === true,
        language: options.language,
        source: options.source,
        first,
        methods: async () =>
          (await import('../repair-digest.js')).methodDigest({
            tools: prepared.surface.tools,
            caps: prepared.agentCaps,
            write: prepared.surface.write,
            mcpServers: prepared.surface.dropped.has('mcp') ? [] : (options.agent.config.autonomy.mcp?.allow ?? []),
          }),
        // The script sees /workspace and /run/comis; comis's own paths never leave the process.
        pathMap: [
          [dir.path, JAIL_RUN_DIR],
          [agentJail.workspaceReal, JAIL_WORKSPACE],
          [options.home, '$COMIS_HOME'],
        ],
        signal: options.signal,
      },
      {
        preflight: async (source) => {
          options.mark?.('repair-model');
          try {
            // The same pre-flight as the original, events and marks aside. With approvals on, a footprint
            // within the one already approved needs no second prompt; anything beyond it is asked again.
            const approved = new Set(prepared.footprint.tools);
            again = await prepareRun(
              {
                ...options,
                source,
                ...(options.approve ? { approve: async (fp) => (fp.tools.every((t) => approved.has(t)) ? true : options.approve!(fp)) } : {}),
              },
              () => undefined,
              () => undefined,
            );
            options.mark?.('repair-preflight');
            return true;
          } catch (err) {
            if (err instanceof ComisError) return false;
            throw err;
          }
        },
        rerun: async () => {
          const script = again!.script;
          // The run directory is comis's (the jail sees it read-only): replace the script file in place.
          const file = join(dir.sdkDir, script.fileName);
          try {
            unlinkSync(file);
          } catch {
            /* a first attempt of another file name */
          }
          writeFileSync(file, script.code, { mode: dir.fileMode, flag: 'wx' });
          const stdout = new StdoutCollector(p.limits.stdoutCapBytes);
          const verdict: RunVerdict = { exitCode: null, stderr: '' };
          try {
            const child = spawnScript({
              prepared: again!,
              language: options.language,
              limits: p.limits,
              runId: p.lease.runId,
              bearer: p.lease.bearer,
              agentJail,
              dir,
              socketPath: p.socketPath,
              surface: prepared.surface,
            });
            const exit = await collectRun(child, stdout, verdict, {
              timeoutMs: prepared.timeoutMs,
              ...(options.secondLineTimerMs === undefined ? {} : { secondLineTimerMs: options.secondLineTimerMs }),
              ...(options.signal ? { signal: options.signal } : {}),
            });
            classifyRun(exit, stdout.bytes, verdict, p.limits);
          } catch {
            // Whatever failed, the re-run did not succeed: the original error stands.
            verdict.failureClass = 'spawn_fail';
          }
          return { verdict, stdout };
        },
        succeeded: (r) => r.verdict.failureClass === undefined,
        onModelError: (code, message) => {
          getLogger().warn({ runId: p.lease.runId, repair: 'model_error', code }, message);
        },
      },
    );
  } catch (err) {
    // A bug in the repair path costs the repair, never the run: the original error stands.
    getLogger().error({ runId: p.lease.runId, repair: 'internal_error', err }, 'the one-shot repair failed');
    const verdict = classifyRepair(first);
    return { record: { attempted: true, class: verdict.recoverable ? verdict.cls : null, outcome: 'model_error' } };
  }
}
