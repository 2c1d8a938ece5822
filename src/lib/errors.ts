/**
 * The one error taxonomy of comis. Every failure a user can meet is a
 * {@link ComisError} with a stable string `code`, a message that says what is
 * wrong and where, and a `hint` that says what to do next. The base command is
 * the single place that turns them into exit codes and `--json` output.
 *
 * Security property: messages never carry secret values (config values, lease
 * bearers); callers name the key or the file, not the content.
 */

/** Exit codes, documented in docs/exit-codes.md. */
export const ExitCode = {
  /** The command did what was asked and the answer is positive. */
  OK: 0,
  /** The command ran, and the answer is negative: no working jail, findings at or above the threshold, a failed run. */
  FAILURE: 1,
  /** Usage, input or configuration error: nothing was run. */
  USAGE: 2,
  /** No working sandbox provider: orchestrate refuses rather than run unjailed. */
  NO_SANDBOX: 3,
  /** The agent lacks a capability the script needs, or an approval was refused. */
  DENIED: 4,
  /** A bug in comis itself. */
  INTERNAL: 70,
} as const;
export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode];

export type ErrorCode =
  | 'USAGE'
  | 'INPUT_INVALID'
  | 'CONFIG_INVALID'
  | 'CONFIG_UNREADABLE'
  | 'AGENT_UNKNOWN'
  | 'IO_ERROR'
  | 'STORE_ERROR'
  | 'SANDBOX_UNAVAILABLE'
  | 'INTERPRETER_MISSING'
  | 'CAPABILITY_DENIED'
  | 'APPROVAL_REQUIRED'
  | 'APPROVAL_REFUSED'
  | 'SDK_DRIFT'
  | 'NOT_FOUND'
  | 'INTERNAL';

const defaultExit: Record<ErrorCode, ExitCodeValue> = {
  USAGE: ExitCode.USAGE,
  INPUT_INVALID: ExitCode.USAGE,
  CONFIG_INVALID: ExitCode.USAGE,
  CONFIG_UNREADABLE: ExitCode.USAGE,
  AGENT_UNKNOWN: ExitCode.USAGE,
  IO_ERROR: ExitCode.USAGE,
  STORE_ERROR: ExitCode.FAILURE,
  SANDBOX_UNAVAILABLE: ExitCode.NO_SANDBOX,
  INTERPRETER_MISSING: ExitCode.NO_SANDBOX,
  CAPABILITY_DENIED: ExitCode.DENIED,
  APPROVAL_REQUIRED: ExitCode.DENIED,
  APPROVAL_REFUSED: ExitCode.DENIED,
  SDK_DRIFT: ExitCode.FAILURE,
  NOT_FOUND: ExitCode.USAGE,
  INTERNAL: ExitCode.INTERNAL,
};

export interface ComisErrorOptions {
  hint?: string;
  exitCode?: ExitCodeValue;
  /** Extra machine-readable facts for `--json` (never secrets). */
  details?: Record<string, unknown>;
  cause?: unknown;
}

export class ComisError extends Error {
  readonly code: ErrorCode;
  readonly hint: string | undefined;
  readonly exitCode: ExitCodeValue;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, options: ComisErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ComisError';
    this.code = code;
    this.hint = options.hint;
    this.exitCode = options.exitCode ?? defaultExit[code];
    this.details = options.details;
  }
}

export function isComisError(err: unknown): err is ComisError {
  return err instanceof ComisError;
}

/** A short, secret-free description of an unknown thrown value. */
export function describeError(err: unknown): string {
  if (err instanceof Error) return err.message;
  return String(err);
}
