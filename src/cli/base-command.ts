import { Command, Errors, Flags } from '@oclif/core';

import { comisHome } from '../lib/config/paths.js';
import { setupColor } from './color.js';
import { ComisError, ExitCode, internalError, type ExitCodeValue } from '../lib/errors.js';
import { configureLogging, flagNamesOf, logCommandEnd, logCommandStart } from '../lib/obs/logger.js';
import { redactSecrets } from '../lib/redact/output-guard.js';
import { nearest } from '../lib/suggest.js';
import { successEnvelope, writeError, type JsonSuccess } from './output.js';

export type { JsonSuccess } from './output.js';

/**
 * The one catch of comis. Commands return a typed result and throw
 * {@link ComisError}s; this class maps both to exit codes, to human text on
 * stderr, and to the `--json` envelopes (see ./output.ts). Every string that
 * leaves goes through the output guard.
 */
export abstract class BaseCommand extends Command {
  static override enableJsonFlag = true;

  /** Commands whose --json output is an NDJSON stream write their errors as one line too. */
  static ndjson = false;

  static override baseFlags = {
    verbose: Flags.boolean({
      description: 'Log at debug level (also COMIS_LOG_LEVEL=debug).',
      helpGroup: 'GLOBAL',
      default: false,
    }),
    color: Flags.boolean({
      description: 'Colour human output: --color forces it, --no-color turns it off (default: on a terminal unless NO_COLOR is set; FORCE_COLOR forces it; never in --json).',
      helpGroup: 'GLOBAL',
      allowNo: true,
    }),
  };

  protected warnings: string[] = [];
  private exitStatus: ExitCodeValue = ExitCode.OK;
  private startedAt = 0;

  override async init(): Promise<void> {
    await super.init();
    this.startedAt = Date.now();
    await setupColor(this.argv);
    const problem = configureLogging({ home: comisHome(), verbose: this.argv.includes('--verbose') });
    if (problem) this.addWarning(problem);
    logCommandStart(this.id ?? '', flagNamesOf(this.argv));
  }

  /** Marks the run as completed with a negative answer (exit code 1 unless given). */
  protected setExitStatus(code: ExitCodeValue): void {
    this.exitStatus = code;
  }

  /** Records a warning: on stderr for humans, in the `warnings` array for `--json`. */
  protected addWarning(message: string): string {
    const text = redactSecrets(message);
    this.warnings.push(text);
    if (!this.jsonEnabled()) process.stderr.write(`Warning: ${text}\n`);
    return text;
  }

  protected override toSuccessJson(result: unknown): JsonSuccess<unknown> {
    return successEnvelope(result, this.exitStatus, this.warnings);
  }

  protected override async finally(err: Error | undefined): Promise<void> {
    if (!err) {
      if (this.exitStatus !== ExitCode.OK) process.exitCode = this.exitStatus;
      logCommandEnd(this.id ?? '', { exitCode: this.exitStatus, durationMs: Date.now() - this.startedAt });
    }
    await super.finally(err);
  }

  override async catch(err: Error & { exitCode?: number; oclif?: { exit?: number } }): Promise<void> {
    if (err instanceof Errors.ExitError) throw err;
    const mapped = toComisError(err, this.id ?? '', flagSpellings(this.constructor as typeof BaseCommand));
    process.exitCode = writeError(mapped, this.jsonEnabled(), (this.constructor as typeof BaseCommand).ndjson, this.argv.includes('--verbose'));
    // Only a bug's message and cause chain are logged: the others can echo what the user typed (a session key, a path).
    const bug = mapped.code === 'INTERNAL';
    logCommandEnd(this.id ?? '', { exitCode: mapped.exitCode, durationMs: Date.now() - this.startedAt, error: { code: mapped.code, message: bug ? mapped.message : '', ...(bug ? { cause: mapped } : {}) } });
  }
}

/** Every way to spell a flag of this command: `--name`, `--no-name` when negatable; `--json`, `--help`. */
function flagSpellings(command: typeof BaseCommand): string[] {
  const flags: Record<string, { allowNo?: boolean } | undefined> = { ...command.baseFlags, ...command.flags };
  const out = ['--json', '--help'];
  for (const [name, def] of Object.entries(flags)) {
    out.push(`--${name}`);
    if (def?.allowNo) out.push(`--no-${name}`);
  }
  return [...new Set(out)];
}

function toComisError(err: Error & { oclif?: { exit?: number } }, commandId: string, flags: readonly string[]): ComisError {
  if (err instanceof ComisError) return err;
  const isParseError = err instanceof Errors.CLIError && (err.oclif?.exit === 2 || /flag|argument|Expected/i.test(err.message));
  if (isParseError) {
    // oclif puts the reason on the lines after "Parsing --flag" (e.g. "Expected an integer … but
    // received: 0"): keep every line that says something, drop its generic "See more help" line.
    const lines = err.message
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '' && !/^See more help with/i.test(l));
    const first = lines.length > 1 && /^Parsing --/.test(lines[0]!) ? `${lines[0]}: ${lines.slice(1).join('; ')}` : (lines[0] ?? err.message);
    const help = `Run \`comis ${commandId.replaceAll(':', ' ')} --help\` to see the arguments and flags.`;
    // oclif: "Nonexistent flag: --chek" or "Nonexistent flags: --a, --b"
    const unknown = /^Nonexistent flags?: (.+)$/.exec(first)?.[1]?.split(', ') ?? [];
    const meant = unknown.map((f) => [f, nearest(f.split('=')[0]!, flags)] as const).filter((m): m is readonly [string, string] => m[1] !== undefined);
    const hint = meant.length > 0 ? `Did you mean ${meant.map(([, m]) => `\`${m}\``).join(', ')}? ${help}` : help;
    return new ComisError('USAGE', first, { hint });
  }
  return internalError(err);
}
