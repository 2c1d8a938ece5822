/**
 * Fast paths of bin/comis.js for the read-only commands users run most:
 * `comis explain --last`, `comis jail probe` and `comis fleet [--since X]`,
 * each optionally with `--json`, and nothing else. Loading oclif costs more than either answer;
 * these exact argument lists need no parser. Any other argument list (another
 * flag, a key, `--help`) falls back to the oclif command, which shares the
 * same body (explain-main.ts, probe-main.ts), so output, envelopes, exit
 * codes and logging are the same either way.
 */
import { comisHome } from '../lib/config/paths.js';
import { ExitCode, internalError, type ExitCodeValue } from '../lib/errors.js';
import { redactSecrets } from '../lib/redact/output-guard.js';
import { formatJson, successEnvelope, writeError } from './output.js';

type Body = (json: boolean) => Promise<{ result: unknown; exitStatus: ExitCodeValue }>;

const BODIES: Record<string, { id: string; body: Body }> = {
  'explain --last': {
    id: 'explain',
    body: async (json) => {
      const { explainMain } = await import('./explain-main.js');
      return { result: await explainMain({ limit: 200 }, json), exitStatus: ExitCode.OK };
    },
  },
  'jail probe': {
    id: 'jail:probe',
    body: async (json) => {
      const { probeMain } = await import('./probe-main.js');
      const { report, exitStatus } = await probeMain(json, false);
      return { result: report, exitStatus };
    },
  },
};

const DEFAULT_SINCE = '24h'; // Fleet's --since default (the oclif flag's, and obs/fleet.ts's)

/**
 * `fleet`, `fleet --since X` or `fleet --since=X` (then the optional `--json`
 * is already off): the body, or undefined for any other list. A value that
 * looks like a flag goes to oclif, which says what is wrong with it.
 */
function fleetBody(rest: readonly string[]): { id: string; body: Body } | undefined {
  if (rest[0] !== 'fleet') return undefined;
  let since: string | undefined = DEFAULT_SINCE;
  if (rest.length === 3 && rest[1] === '--since') since = rest[2];
  else if (rest.length === 2 && rest[1]!.startsWith('--since=')) since = rest[1]!.slice('--since='.length);
  else if (rest.length !== 1) since = undefined;
  if (since === undefined || since === '' || since.startsWith('-')) return undefined;
  const value = since;
  return {
    id: 'fleet',
    body: async (json) => {
      const { fleetMain } = await import('./fleet-main.js');
      return { result: await fleetMain({ since: value }, json), exitStatus: ExitCode.OK };
    },
  };
}

/** Runs the command when `argv` is one of the fast argument lists; false means "use oclif". */
export async function tryFastCommand(argv: readonly string[]): Promise<boolean> {
  const json = argv[argv.length - 1] === '--json';
  const rest = json ? argv.slice(0, -1) : argv;
  if (rest.includes('--json')) return false;
  const fast = rest[0] === 'fleet' ? fleetBody(rest) : !rest.some((a) => a.includes(' ')) ? BODIES[rest.join(' ')] : undefined;
  if (!fast) return false;
  const startedAt = Date.now();
  const warnings: string[] = [];
  const { setupColor } = await import('./color.js');
  await setupColor(argv);
  const { configureLogging, flagNamesOf, logCommandEnd, logCommandStart } = await import('../lib/obs/logger.js');
  const problem = configureLogging({ home: comisHome(), verbose: false });
  if (problem) {
    const text = redactSecrets(problem);
    warnings.push(text);
    if (!json) process.stderr.write(`Warning: ${text}\n`);
  }
  const flags = argv.slice(fast.id.split(':').length);
  logCommandStart(fast.id, flagNamesOf(flags));
  try {
    const { result, exitStatus } = await fast.body(json);
    if (json) process.stdout.write(formatJson(successEnvelope(result, exitStatus, warnings)));
    if (exitStatus !== ExitCode.OK) process.exitCode = exitStatus;
    logCommandEnd(fast.id, { exitCode: exitStatus, durationMs: Date.now() - startedAt });
  } catch (err) {
    const mapped = internalError(err);
    process.exitCode = writeError(mapped, json);
    logCommandEnd(fast.id, { exitCode: mapped.exitCode, durationMs: Date.now() - startedAt, error: { code: mapped.code, message: mapped.code === 'INTERNAL' ? mapped.message : '' } });
  }
  return true;
}
