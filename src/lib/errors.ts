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

/**
 * Wraps anything thrown that is not a ComisError as an INTERNAL one (a bug in
 * comis), keeping the thrown value as its `cause`: the original stack and
 * its own cause chain stay reachable for `--verbose` and the log
 * ({@link causeChain}), while the message a user sees stays the original's.
 */
export function internalError(err: unknown): ComisError {
  if (err instanceof ComisError) return err;
  return new ComisError('INTERNAL', err instanceof Error ? err.message || String(err) : String(err), {
    hint: 'This is a bug in comis. Run again with --verbose and report the output.',
    cause: err,
  });
}

/** One link of a cause chain, as printed by --verbose and logged. */
export interface ErrorLink {
  name: string;
  message: string;
  code?: string | number;
  stack?: string;
}

/** Causes followed at most: a chain longer than this is cut, and a cycle ends it. */
export const MAX_CAUSE_DEPTH = 8;

/**
 * The causes below `err` (its `cause`, that one's `cause`, …), outermost
 * first, bounded and cycle-safe. A thrown non-Error becomes a link with its
 * string form. Not redacted: callers pass every string through the output
 * guard before it leaves.
 */
export function causeChain(err: unknown): ErrorLink[] {
  const out: ErrorLink[] = [];
  const seen = new Set<unknown>([err]);
  let next = err instanceof Error ? (err as { cause?: unknown }).cause : undefined;
  while (next !== undefined && out.length < MAX_CAUSE_DEPTH && !seen.has(next)) {
    seen.add(next);
    if (next instanceof Error) {
      const link: ErrorLink = { name: next.name, message: next.message };
      const code = (next as { code?: unknown }).code;
      if (typeof code === 'string' || typeof code === 'number') link.code = code;
      if (next.stack) link.stack = next.stack;
      out.push(link);
      next = (next as { cause?: unknown }).cause;
    } else {
      out.push({ name: typeof next, message: String(next) });
      next = undefined;
    }
  }
  return out;
}
