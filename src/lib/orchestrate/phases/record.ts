/**
 * Phase 8, record: the caller-facing result and the content-free record the
 * caller stores (the runner itself never writes the store).
 */
import { redactSecrets } from '../../redact/output-guard.js';
import { estimateSavings, type ResultStore } from '../../resultref/materialize.js';
import { foldToolCalls, type AuditRow, type RunRecord } from '../../store/runs.js';
import type { OrchestrateOptions, OrchestrateOutcome, OrchestrateResult } from '../runner.js';
import { tailOf } from '../stdout.js';
import type { RunVerdict } from './collect.js';
import type { StdoutCollector } from './collect.js';
import { STDERR_TAIL_CHARS } from './constants.js';

export interface RecordPhase {
  options: Pick<OrchestrateOptions, 'sessionKey' | 'agent' | 'language' | 'parentRunId'>;
  runId: string;
  leaseId: string;
  timeoutMs: number;
  started: number;
  verdict: RunVerdict;
  stdout: StdoutCollector;
  audit: AuditRow[];
  results: ResultStore;
}

export function recordRun(p: RecordPhase): OrchestrateOutcome {
  const { options, verdict, results } = p;
  const durationMs = Date.now() - p.started;
  const failureClass = verdict.failureClass;
  const outcome = failureClass === undefined ? 'success' : 'failure';
  const bounded = p.stdout.bounded();
  const toolCalls = foldToolCalls(p.audit);
  const result: OrchestrateResult = {
    runId: p.runId,
    leaseId: p.leaseId,
    sessionKey: options.sessionKey,
    agentId: options.agent.id,
    language: options.language,
    outcome,
    exitCode: verdict.exitCode,
    durationMs,
    timeoutMs: p.timeoutMs,
    stdout: bounded.text,
    stdoutTruncated: bounded.truncated,
    toolCalls,
    resultRefs: { count: results.materialized.count, bytes: results.materialized.bytes },
  };
  const savings = estimateSavings(results.materialized.bytes, bounded.text.length);
  if (savings) result.savings = savings;
  if (failureClass) {
    result.failureClass = failureClass;
    result.stderrTail = redactSecrets(tailOf(verdict.stderr, STDERR_TAIL_CHARS));
  }
  const record: RunRecord = {
    runId: p.runId,
    sessionKey: options.sessionKey,
    agentId: options.agent.id,
    leaseId: p.leaseId,
    parentRunId: options.parentRunId,
    language: options.language,
    startedAt: p.started,
    endedAt: p.started + durationMs,
    durationMs,
    outcome,
    exitCode: verdict.exitCode,
    failureClass,
    stdoutChars: bounded.text.length,
    toolCalls,
    resultRefs: result.resultRefs,
    savings,
  };
  return { public: result, record, audit: p.audit };
}
