import { Command, Errors, Flags } from '@oclif/core';

import { ComisError, ExitCode, type ExitCodeValue } from '../lib/errors.js';
import { redactSecrets, redactValue } from '../lib/obs/output-guard.js';

/** The `--json` envelope on success (or on a completed command with a negative answer). */
export interface JsonSuccess<T> {
  status: 'ok' | 'fail';
  result: T;
  warnings: string[];
}

/** The `--json` envelope on error. */
export interface JsonFailure {
  status: 'error';
  error: { code: string; message: string; hint?: string; details?: Record<string, unknown> };
}

/**
 * The one catch of comis. Commands return a typed result and throw
 * {@link ComisError}s; this class maps both to exit codes, to human text on
 * stderr, and to the `--json` envelopes above. Every string that leaves goes
 * through the output guard.
 */
export abstract class BaseCommand extends Command {
  static override enableJsonFlag = true;

  static override baseFlags = {
    verbose: Flags.boolean({
      description: 'Log at debug level (also COMIS_LOG_LEVEL=debug).',
      helpGroup: 'GLOBAL',
      default: false,
    }),
  };

  protected warnings: string[] = [];
  private exitStatus: ExitCodeValue = ExitCode.OK;

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
    return {
      status: this.exitStatus === ExitCode.OK ? 'ok' : 'fail',
      result: redactValue(result),
      warnings: this.warnings,
    };
  }

  protected override async finally(err: Error | undefined): Promise<void> {
    if (!err && this.exitStatus !== ExitCode.OK) process.exitCode = this.exitStatus;
    await super.finally(err);
  }

  override async catch(err: Error & { exitCode?: number; oclif?: { exit?: number } }): Promise<void> {
    if (err instanceof Errors.ExitError) throw err;
    const mapped = toComisError(err, this.id ?? '');
    process.exitCode = mapped.exitCode;
    const message = redactSecrets(mapped.message);
    const hint = mapped.hint === undefined ? undefined : redactSecrets(mapped.hint);
    if (this.jsonEnabled()) {
      const body: JsonFailure = { status: 'error', error: { code: mapped.code, message } };
      if (hint) body.error.hint = hint;
      if (mapped.details) body.error.details = redactValue(mapped.details);
      this.logJson(body);
      return;
    }
    let text = `Error [${mapped.code}]: ${message}\n`;
    if (hint) text += `Hint: ${hint}\n`;
    process.stderr.write(text);
  }
}

function toComisError(err: Error & { oclif?: { exit?: number } }, commandId: string): ComisError {
  if (err instanceof ComisError) return err;
  const isParseError =
    err instanceof Errors.CLIError && (err.oclif?.exit === 2 || /flag|argument|Expected/i.test(err.message));
  if (isParseError) {
    const first = err.message.split('\n')[0] ?? err.message;
    return new ComisError('USAGE', first, {
      hint: `Run \`comis ${commandId.replaceAll(':', ' ')} --help\` to see the arguments and flags.`,
    });
  }
  return new ComisError('INTERNAL', err.message || String(err), {
    hint: 'This is a bug in comis. Run again with --verbose and report the output.',
  });
}
