/**
 * How every command's outcome is written: the `--json` envelopes, human
 * error text, and the mapping of errors to exit codes. Free of oclif so the
 * fast paths of bin/comis.js render exactly like the oclif commands do.
 */
import { causeChain, type ComisError, ExitCode, type ExitCodeValue } from '../lib/errors.js';
import { redactSecrets, redactValue } from '../lib/redact/output-guard.js';
import { errStyle } from './color.js';

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

export function successEnvelope<T>(result: T, exitStatus: ExitCodeValue, warnings: string[]): JsonSuccess<T> {
  return { status: exitStatus === ExitCode.OK ? 'ok' : 'fail', result: redactValue(result), warnings };
}

export function formatJson(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

/**
 * Writes an error for a human (stderr) or a machine (stdout JSON; one line
 * when the command streams NDJSON); returns the exit code. With `verbose`,
 * the error's cause chain (each cause's stack, or its name and message)
 * follows on stderr, redacted, in both modes: stdout JSON keeps its shape.
 */
export function writeError(err: ComisError, json: boolean, ndjson = false, verbose = false): ExitCodeValue {
  const message = redactSecrets(err.message);
  const hint = err.hint === undefined ? undefined : redactSecrets(err.hint);
  if (json) {
    const body: JsonFailure = { status: 'error', error: { code: err.code, message } };
    if (hint) body.error.hint = hint;
    if (err.details) body.error.details = redactValue(err.details);
    process.stdout.write(ndjson ? `${JSON.stringify(body)}\n` : formatJson(body));
  } else {
    const style = errStyle();
    process.stderr.write(`${style.bad(`Error [${err.code}]:`)} ${message}\n${hint ? `${style.dim('Hint:')} ${hint}\n` : ''}`);
  }
  if (verbose) process.stderr.write(formatCauses(err));
  return err.exitCode;
}

/** The `Caused by:` lines of --verbose: one per link of the chain, with its stack when it has one. */
export function formatCauses(err: unknown): string {
  return causeChain(err)
    .map((link) => {
      const head = `${link.name}: ${link.message}${link.code === undefined ? '' : ` (${link.code})`}`;
      // A stack starts with "Name: message"; print the head once, then the frames.
      const frames = link.stack?.split('\n').filter((line) => /^\s+at /.test(line)) ?? [];
      return `${errStyle().dim('Caused by:')} ${redactSecrets([head, ...frames].join('\n'))}\n`;
    })
    .join('');
}
