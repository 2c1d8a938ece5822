/**
 * The fast path of `comis orchestrate`: argument parsing with node's own
 * `parseArgs` from the same flag table as the oclif command, skipping the
 * ~80 ms of loading oclif. Anything it does not fully understand (help,
 * unknown or invalid flags, a wrong number of arguments) falls back to the
 * oclif command, so usage errors and help text come from one place.
 */
import { parseArgs } from 'node:util';

import { redactSecrets } from '../lib/redact/output-guard.js';
import { ORCHESTRATE_FLAGS, type FlagSpec, type OrchestrateInput } from './orchestrate-flags.js';
import { internalError } from '../lib/errors.js';
import { formatJson, successEnvelope, writeError } from './output.js';

type ParseOptions = Record<string, { type: 'string' | 'boolean'; short?: string }>;

function parseInput(argv: string[]): { input: OrchestrateInput; json: boolean } | undefined {
  const options: ParseOptions = { json: { type: 'boolean' }, verbose: { type: 'boolean' } };
  for (const [name, spec] of Object.entries(ORCHESTRATE_FLAGS) as [string, FlagSpec][]) {
    options[name] = { type: spec.type === 'boolean' ? 'boolean' : 'string', ...(spec.char ? { short: spec.char } : {}) };
  }
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
  } catch {
    return undefined;
  }
  const v = parsed.values as Record<string, string | boolean | undefined>;
  // --resume and `orchestrate replay <runId>` have their own rules: oclif's command handles them.
  if (parsed.positionals.length !== 1 || argv.includes('--') || v.resume !== undefined || parsed.positionals[0] === 'replay') return undefined;
  const flag = (name: keyof typeof ORCHESTRATE_FLAGS): string | undefined => {
    const spec = ORCHESTRATE_FLAGS[name] as FlagSpec;
    const value = v[name];
    if (typeof value === 'string') return value;
    return spec.env ? process.env[spec.env] : undefined;
  };
  const lang = flag('lang');
  if (lang !== undefined && !ORCHESTRATE_FLAGS.lang.options.includes(lang as never)) return undefined;
  const timeoutText = flag('timeout-ms');
  let timeoutMs: number | undefined;
  if (timeoutText !== undefined) {
    if (!/^\d+$/.test(timeoutText)) return undefined;
    timeoutMs = Number(timeoutText);
    if (timeoutMs > ORCHESTRATE_FLAGS['timeout-ms'].max) return undefined;
  }
  return {
    input: {
      script: parsed.positionals[0]!,
      lang: lang as OrchestrateInput['lang'],
      agent: flag('agent'),
      session: flag('session'),
      timeoutMs,
      yes: v.yes === true,
      raw: v.raw === true,
      quiet: v.quiet === true,
      noRepair: v['no-repair'] === true,
    },
    json: v.json === true,
  };
}

/** Runs `comis orchestrate` without oclif when the arguments are plain; false means "use oclif". */
export async function tryFastOrchestrate(argv: string[]): Promise<boolean> {
  const parsed = parseInput(argv);
  if (!parsed) return false;
  const warnings: string[] = [];
  const addWarning = (message: string): void => {
    const text = redactSecrets(message);
    warnings.push(text);
    if (!parsed.json) process.stderr.write(`Warning: ${text}\n`);
  };
  const { setupColor } = await import('./color.js');
  await setupColor(argv);
  const { configureLogging } = await import('../lib/obs/logger.js');
  const { comisHome } = await import('../lib/config/paths.js');
  const problem = configureLogging({ home: comisHome(), verbose: argv.includes('--verbose') });
  if (problem) addWarning(problem);
  try {
    const { executeOrchestrate } = await import('./orchestrate-main.js');
    const { result, exitStatus } = await executeOrchestrate(parsed.input, { json: parsed.json, addWarning });
    if (parsed.json) process.stdout.write(formatJson(successEnvelope(result, exitStatus, warnings)));
    process.exitCode = exitStatus;
  } catch (err) {
    const mapped = internalError(err);
    process.exitCode = writeError(mapped, parsed.json, false, argv.includes('--verbose'));
    // As the oclif path does: only a bug's message and cause chain reach the log.
    if (mapped.code === 'INTERNAL') {
      const { logCommandEnd } = await import('../lib/obs/logger.js');
      logCommandEnd('orchestrate', { exitCode: mapped.exitCode, error: { code: mapped.code, message: mapped.message, cause: mapped } });
    }
  }
  return true;
}
