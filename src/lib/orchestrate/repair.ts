/**
 * The one-shot repair of a failed run (seed 000 "One-shot repair"): when a
 * script exits non-zero on a recoverable error (./repair-class.ts), the
 * agent's model is asked ONCE for the whole corrected script, which goes
 * through the same pre-flight and runs EXACTLY once more, in the same jail,
 * capability set and per-run lease. Whatever happens then, it is over: a
 * repaired run that fails again, a refused repaired script, a model that
 * does not answer usefully, all leave the ORIGINAL failure standing.
 *
 * Class-gated, with no other toggle (the seed's rule): on for `nano` and
 * `small` models and a model with no class, off for `mid` and `frontier`.
 * With no model configured there is nothing to ask. `--no-repair` turns it
 * off for one run (debugging).
 *
 * Recorded content-free: {attempted, class, outcome}, closed enums only.
 *
 * Loaded only when a run has failed; the model client (undici) only when a
 * repair is actually attempted.
 */
import type { ModelConfig } from '../config/model-schema.js';
import { redactSecrets } from '../redact/output-guard.js';
import type { MethodDigest, RepairLanguage } from '../model/repair-prompt.js';
import type { RepairOutcome, RepairRecord } from '../store/runs.js';
import { classifyRepair } from './repair-class.js';

export type { RepairRecord } from '../store/runs.js';

/** The most time the model round (all attempts and waits) may take; the run's lease covers it. */
export const REPAIR_BUDGET_MS = 120_000;

export type RepairGate = 'on' | 'class_off' | 'no_model' | 'disabled';

/** Whether an agent's failed runs get a repair, from its model class (and --no-repair). */
export function repairGate(model: Pick<ModelConfig, 'class'> | undefined, noRepair: boolean): RepairGate {
  if (noRepair) return 'disabled';
  if (!model) return 'no_model';
  return model.class === 'mid' || model.class === 'frontier' ? 'class_off' : 'on';
}

/** What the runner knows of the failed first attempt (content-free facts and the redacted stderr tail). */
export interface FirstAttempt {
  failureClass: string | undefined;
  exitCode: number | null;
  denied: boolean;
  /** Redacted, as it would be shown. */
  stderrTail: string;
}

export interface RepairInput {
  model: ModelConfig | undefined;
  noRepair: boolean;
  language: RepairLanguage;
  /** The original script, as the user gave it (before transpiling). */
  source: string;
  first: FirstAttempt;
  /** The SDK methods the agent holds, for the prompt. */
  methods: () => Promise<MethodDigest[]>;
  /** Host path → the name the script sees (workspace → /workspace): applied to the tail before it leaves. */
  pathMap: readonly (readonly [host: string, jail: string])[];
  /** Ends the model round early (the run was aborted). */
  signal?: AbortSignal | undefined;
  /** Tests and benchmarks: the model's per-attempt backoff base. */
  backoffMs?: number;
}

export interface RepairHooks<R> {
  /** The same pre-flight as the original run: true when the repaired script may run. */
  preflight: (source: string) => Promise<boolean>;
  /** Runs the repaired script once, in the same jail, capability set and lease. */
  rerun: (source: string) => Promise<R>;
  succeeded: (result: R) => boolean;
  /** Content-free notes (the model error's code) for the log. */
  onModelError?: (code: string, message: string) => void;
}

/**
 * Decides and, when it applies, performs the repair. Returns the record and,
 * when the repaired script ran, its result (the caller uses it only when the
 * outcome is `repaired`).
 */
export async function attemptRepair<R>(input: RepairInput, hooks: RepairHooks<R>): Promise<{ record: RepairRecord; rerun?: R }> {
  const verdict = classifyRepair(input.first);
  const cls = verdict.recoverable ? verdict.cls : null;
  if (!verdict.recoverable) return { record: { attempted: false, class: null, outcome: 'not_recoverable' } };
  const gate = repairGate(input.model, input.noRepair);
  if (gate !== 'on') return { record: { attempted: false, class: cls, outcome: gate } };
  const model = input.model!;
  const record = (outcome: RepairOutcome): RepairRecord => ({ attempted: true, class: cls, outcome });

  const [{ chatComplete, ModelError }, { buildRepairMessages, extractScript }] = await Promise.all([import('../model/client.js'), import('../model/repair-prompt.js')]);
  const apiKey = model.apiKeyEnv === undefined ? undefined : process.env[model.apiKeyEnv];
  if (model.apiKeyEnv !== undefined && !apiKey) {
    hooks.onModelError?.('model_not_configured', `the environment variable ${model.apiKeyEnv} (model.apiKeyEnv) is not set`);
    return { record: record('model_error') };
  }
  let stderrTail = input.first.stderrTail;
  for (const [host, jail] of input.pathMap) if (host.length > 1) stderrTail = stderrTail.split(host).join(jail);
  const messages = buildRepairMessages({
    language: input.language,
    script: input.source,
    errorClass: verdict.cls,
    exitCode: input.first.exitCode,
    stderrTail: redactSecrets(stderrTail),
    methods: await input.methods(),
  });
  let content: string;
  try {
    const answer = await chatComplete({ baseUrl: model.baseUrl, name: model.name, apiKey, timeoutMs: model.timeoutMs }, messages, {
      budgetMs: REPAIR_BUDGET_MS,
      signal: input.signal,
      ...(input.backoffMs === undefined ? {} : { backoffMs: input.backoffMs }),
    });
    content = answer.content;
  } catch (err) {
    if (!(err instanceof ModelError)) throw err;
    hooks.onModelError?.(err.code, err.message);
    return { record: record('model_error') };
  }
  const script = extractScript(content, input.language);
  if (script === undefined || script.trim() === input.source.trim()) return { record: record('no_fix') };
  if (!(await hooks.preflight(script))) return { record: record('refused') };
  const rerun = await hooks.rerun(script);
  return { record: record(hooks.succeeded(rerun) ? 'repaired' : 'rerun_failed'), rerun };
}
