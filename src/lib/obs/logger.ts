/**
 * The comis log: structured JSON lines (pino) in `$COMIS_HOME/logs/comis.log`,
 * never on stdout. Lazy by contract: importing this module loads nothing and
 * opens nothing; {@link getLogger} is what requires pino and opens the file,
 * so commands that never log (`--help`, `sdk emit`) pay nothing.
 *
 * Bounded: when the file is over `maxBytes` (10 MiB) at open, or would grow
 * past it while writing, it is renamed to `comis.log.1` (replacing the old
 * one) and a fresh file is started; the log never takes more than about
 * twice `maxBytes`.
 *
 * Security property: every line passes the output guard twice before it
 * reaches the disk. The arguments of every log call are deep-redacted first
 * (strings, nested objects, arrays and Error messages and stacks), and the
 * serialized line is parsed, deep-redacted and scanned again at the
 * destination, which also covers child-logger bindings, keys and
 * JSON-escaped forms. A secret registered with the guard (lease bearers,
 * configured API keys) therefore never appears in a log file. The helpers
 * {@link logRunEvent} and {@link logCommandStart} are allowlists: they log
 * ids, names, counts and closed enums, never stdout, stderr, arguments,
 * results or flag values.
 */
import { closeSync, fstatSync, mkdirSync, openSync, renameSync, statSync, writeSync, chmodSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

import type { Logger, LoggerOptions } from 'pino';

import { comisHome, logsDir } from '../config/paths.js';
import { causeChain, type ErrorLink } from '../errors.js';
import { redactSecrets, redactValue } from '../redact/output-guard.js';

export type { Logger } from 'pino';

export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export const DEFAULT_LOG_LEVEL: LogLevel = 'info';
export const DEFAULT_LOG_MAX_BYTES = 10 * 1024 * 1024;
export const LOG_FILE_NAME = 'comis.log';

const LEVEL_VALUE: Record<LogLevel, number> = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: Infinity };

export interface LoggingOptions {
  /** $COMIS_HOME (default: from the environment). */
  home?: string;
  /** `--verbose`: at least debug. */
  verbose?: boolean;
  /** Where COMIS_LOG_LEVEL is read (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** Rotation bound of the log file (default 10 MiB). */
  maxBytes?: number;
}

/**
 * The level from `COMIS_LOG_LEVEL` and `--verbose`: the more verbose of the
 * two wins (`--verbose` means at least `debug`). An unknown value falls back
 * to `info` and is reported in `problem`, for the caller to warn about.
 */
export function resolveLogLevel(options: { verbose?: boolean; env?: NodeJS.ProcessEnv } = {}): { level: LogLevel; problem?: string } {
  const raw = (options.env ?? process.env).COMIS_LOG_LEVEL?.trim().toLowerCase();
  let level: LogLevel = DEFAULT_LOG_LEVEL;
  let problem: string | undefined;
  if (raw) {
    if ((LOG_LEVELS as readonly string[]).includes(raw)) level = raw as LogLevel;
    else problem = `COMIS_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}; using ${DEFAULT_LOG_LEVEL}.`;
  }
  if (options.verbose && LEVEL_VALUE[level] > LEVEL_VALUE.debug) level = 'debug';
  return problem === undefined ? { level } : { level, problem };
}

// ------------------------------------------------------------ redaction

const MAX_DEPTH = 8;

/** Deep-redacts a log argument; Errors become `{type, message, stack, code}`. */
export function scrubLogValue(value: unknown, depth = 0, seen: WeakSet<object> = new WeakSet()): unknown {
  if (typeof value === 'string') return redactSecrets(value);
  if (value === null || typeof value !== 'object') return typeof value === 'function' ? '[Function]' : value;
  if (seen.has(value)) return '[Circular]';
  if (depth >= MAX_DEPTH) return '[Object]';
  seen.add(value);
  if (value instanceof Error) {
    const err = value as Error & { code?: unknown; cause?: unknown };
    const out: Record<string, unknown> = { type: err.name, message: redactSecrets(err.message) };
    if (err.stack) out.stack = redactSecrets(err.stack);
    if (typeof err.code === 'string' || typeof err.code === 'number') out.code = err.code;
    if (err.cause !== undefined) out.cause = scrubLogValue(err.cause, depth + 1, seen);
    return out;
  }
  if (Buffer.isBuffer(value) || ArrayBuffer.isView(value)) return `[${value.constructor.name} ${(value as ArrayBufferView).byteLength} bytes]`;
  if (Array.isArray(value)) return value.map((v) => scrubLogValue(v, depth + 1, seen));
  if (value instanceof Map) return scrubLogValue(Object.fromEntries(value), depth + 1, seen);
  if (value instanceof Set) return scrubLogValue([...value], depth + 1, seen);
  if (value instanceof Date) return value.toISOString();
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[redactSecrets(k)] = scrubLogValue(v, depth + 1, seen);
  return out;
}

/** The destination-side pass: parse, deep-redact, re-serialize, and scan the text once more. */
export function redactLogLine(line: string): string {
  const trimmed = line.endsWith('\n') ? line.slice(0, -1) : line;
  let text: string;
  try {
    text = JSON.stringify(redactValue(JSON.parse(trimmed) as unknown));
  } catch {
    text = trimmed.replace(/\n/g, '\\n');
  }
  return `${redactSecrets(text)}\n`;
}

// ------------------------------------------------------------ destination

/**
 * A synchronous, size-bounded, redacting file destination: nothing is lost
 * when the process exits right after a log call, and a failing disk never
 * fails the command (writes are dropped).
 */
export class BoundedLogFile {
  private fd: number | undefined;
  private size = 0;

  constructor(
    readonly path: string,
    readonly maxBytes: number = DEFAULT_LOG_MAX_BYTES,
  ) {
    try {
      if (statSync(path).size >= maxBytes) renameSync(path, `${path}.1`);
    } catch {
      /* absent: created below */
    }
    this.open();
  }

  private open(): void {
    try {
      this.fd = openSync(this.path, 'a', 0o600);
      try {
        chmodSync(this.path, 0o600);
      } catch {
        /* not ours to change: keep writing */
      }
      this.size = fstatSync(this.fd).size;
    } catch {
      this.fd = undefined;
    }
  }

  private rotate(): void {
    this.close();
    try {
      renameSync(this.path, `${this.path}.1`);
    } catch {
      /* another process rotated it first */
    }
    this.open();
  }

  write(chunk: string): void {
    const line = Buffer.from(redactLogLine(chunk), 'utf8');
    if (this.fd !== undefined && this.size > 0 && this.size + line.length > this.maxBytes) this.rotate();
    if (this.fd === undefined) return;
    try {
      writeSync(this.fd, line);
      this.size += line.length;
    } catch {
      /* disk full or gone: logging never fails a command */
    }
  }

  close(): void {
    if (this.fd === undefined) return;
    try {
      closeSync(this.fd);
    } catch {
      /* already closed */
    }
    this.fd = undefined;
  }
}

// ------------------------------------------------------------ the logger

interface LoggerState {
  options: LoggingOptions;
  level: LogLevel;
  logger?: Logger;
  file?: BoundedLogFile;
  destination?: { write(chunk: string): void };
}

const state: LoggerState = { options: {}, level: resolveLogLevel().level };
const require = createRequire(import.meta.url);

/**
 * Sets home, level and bound for the process's logger. Cheap: loads nothing.
 * Call it once early (the base command's init); a logger already created
 * takes the new level. Returns the level problem, if any, to warn about.
 */
export function configureLogging(options: LoggingOptions): string | undefined {
  state.options = { ...state.options, ...options };
  const resolved = resolveLogLevel({ verbose: state.options.verbose ?? false, env: state.options.env ?? process.env });
  state.level = resolved.level;
  if (state.logger) state.logger.level = resolved.level;
  return resolved.problem;
}

/** Whether a line at `level` would be written, without creating the logger. */
export function isLogLevelEnabled(level: Exclude<LogLevel, 'silent'>): boolean {
  return LEVEL_VALUE[level] >= LEVEL_VALUE[state.level];
}

/** The path of the log file for a home. */
export function logFilePath(home: string = comisHome()): string {
  return join(logsDir(home), LOG_FILE_NAME);
}

/**
 * The process's logger, created on first use: requires pino, creates
 * `$COMIS_HOME/logs/` (0700) and opens `comis.log` (0600). If the directory
 * cannot be created, the logger discards lines rather than fail the command.
 */
export function getLogger(): Logger {
  if (state.logger) return state.logger;
  const destination = openDestination();
  const pino = require('pino') as typeof import('pino');
  const options: LoggerOptions = {
    level: state.level,
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    // Errors are already turned into plain redacted objects by the hook below.
    serializers: { err: (value: unknown) => value },
    formatters: {
      bindings: (bindings) => scrubLogValue(bindings) as Record<string, unknown>,
    },
    hooks: {
      logMethod(args, method) {
        const [first, ...rest] = args as unknown[];
        const head = first instanceof Error ? { err: scrubLogValue(first) } : scrubLogValue(first);
        method.apply(this, [head, ...rest.map((a) => scrubLogValue(a))] as Parameters<typeof method>);
      },
    },
  };
  const logger = pino(options, destination);
  state.logger = logger;
  return logger;
}

/**
 * The log file, opened once per process. Only a command that configured logging with its
 * home writes one: library callers (embedding, tests) that never did get a destination that
 * discards, so nothing falls back to writing into the user's real ~/.comis behind their back.
 */
function openDestination(): { write(chunk: string): void } {
  if (state.destination) return state.destination;
  const home = state.options.home;
  let destination: { write(chunk: string): void } = { write: () => undefined };
  if (home !== undefined) {
    try {
      mkdirSync(logsDir(home), { recursive: true, mode: 0o700 });
      state.file = new BoundedLogFile(logFilePath(home), state.options.maxBytes ?? DEFAULT_LOG_MAX_BYTES);
      destination = state.file;
    } catch {
      /* the directory cannot be made: discard rather than fail the command */
    }
  }
  state.destination = destination;
  return destination;
}

/**
 * One line of the allowlisted helpers below, in the very format the pino logger writes
 * (`{"level":30,"time":"<ISO>","pid":N,...fields,"msg":"..."}`), without loading pino: a
 * run logs a handful of lines, and pino's start-up cost more than the run's own bookkeeping
 * (~75 ms CPU on the 2-core bench machine). Once the pino logger exists (another caller asked
 * for it) lines go through it. The fields are deep-redacted here, and the destination
 * redacts the serialized line again, as for every pino line.
 */
function writeLine(level: Exclude<LogLevel, 'silent'>, fields: Record<string, unknown>, msg: string): void {
  if (state.logger) {
    state.logger[level](fields, msg);
    return;
  }
  const head = { level: LEVEL_VALUE[level], time: new Date().toISOString(), pid: process.pid };
  const line = { ...head, ...(scrubLogValue(fields) as Record<string, unknown>), msg: redactSecrets(msg) };
  openDestination().write(`${JSON.stringify(line)}\n`);
}

/** Closes the log file and forgets the logger (tests; a later call reopens). */
export function closeLogger(): void {
  state.file?.close();
  state.file = undefined;
  state.destination = undefined;
  state.logger = undefined;
}

// ------------------------------------------------------------ allowlisted helpers

const NAME = /^[A-Za-z0-9_.:*<>-]{1,96}$/;
const ID = /^[^\u0000-\u001f\u007f]{1,200}$/;
const name = (v: unknown): string | undefined => (typeof v === 'string' && NAME.test(v) ? v : undefined);
const id = (v: unknown): string | undefined => (typeof v === 'string' && ID.test(v) ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

function compact(obj: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined));
}

/** The names of the flags in an argv (`--since 30d` → `since`), never their values. */
export function flagNamesOf(argv: readonly string[]): string[] {
  const names = new Set<string>();
  for (const arg of argv) {
    if (arg === '--') break;
    const m = /^--?([A-Za-z][A-Za-z0-9-]*)/.exec(arg);
    if (m) names.add(m[1]!);
  }
  return [...names].sort();
}

/**
 * Logs that a command started (debug): its id and the NAMES of the flags
 * given, never their values or the arguments (a path or a session key is
 * the user's business, and a flag value may be a secret).
 */
export function logCommandStart(commandId: string, flagNames: readonly string[] = []): void {
  if (!isLogLevelEnabled('debug')) return;
  writeLine('debug', { event: 'command:start', command: name(commandId.replaceAll(' ', ':')) ?? '<invalid>', flags: flagNames.filter((f) => NAME.test(f)).sort() }, 'command started');
}

/**
 * The cause chain of an error as logged: each link's type, message, code and
 * stack (redacted again by the logger's hooks), outermost first, bounded.
 */
function causesForLog(err: unknown): ErrorLink[] {
  return causeChain(err).map((link) => ({ ...link, message: link.message.slice(0, 500), ...(link.stack ? { stack: link.stack.slice(0, 4000) } : {}) }));
}

/**
 * Logs how a command ended: debug on success, error with the error code and
 * (redacted) message on failure, and the cause chain of `error.cause` (the
 * caller passes it for a bug only: other errors can echo what the user typed).
 */
export function logCommandEnd(commandId: string, outcome: { exitCode: number; durationMs?: number; error?: { code: string; message: string; cause?: unknown } }): void {
  const command = name(commandId.replaceAll(' ', ':')) ?? '<invalid>';
  if (outcome.error) {
    if (!isLogLevelEnabled('error')) return;
    const causes = outcome.error.cause === undefined ? [] : causesForLog(outcome.error.cause);
    writeLine(
      'error',
      compact({
        event: 'command:error',
        command,
        exitCode: outcome.exitCode,
        durationMs: num(outcome.durationMs),
        code: name(outcome.error.code),
        message: outcome.error.message.slice(0, 500),
        causes: causes.length > 0 ? causes : undefined,
      }),
      'command failed',
    );
    return;
  }
  if (!isLogLevelEnabled('debug')) return;
  writeLine('debug', { event: 'command:end', command, exitCode: outcome.exitCode, durationMs: num(outcome.durationMs) }, 'command ended');
}

/**
 * Logs a tool call that failed daemon-side with something other than a tool
 * error (a bug or a host fault), which the script sees only as the socket's
 * generic `internal`: here, and only here, the thrown error's type, code,
 * message, stack and cause chain are kept, for whoever debugs the host. The
 * tool name is the table's, never script text; the line passes the output
 * guard like every other.
 */
export function logToolFailure(failure: { runId: string; leaseId?: string; tool: string; error: unknown }): void {
  if (!isLogLevelEnabled('error')) return;
  const err = failure.error;
  const head: ErrorLink = err instanceof Error ? { name: err.name, message: err.message.slice(0, 500) } : { name: typeof err, message: String(err).slice(0, 500) };
  const code = err instanceof Error ? (err as { code?: unknown }).code : undefined;
  if (typeof code === 'string' || typeof code === 'number') head.code = code;
  if (err instanceof Error && err.stack) head.stack = err.stack.slice(0, 4000);
  writeLine('error', compact({ event: 'tool:failed', runId: id(failure.runId), leaseId: id(failure.leaseId), tool: name(failure.tool), error: head, causes: causesForLog(err) }), 'tool failed daemon-side');
}

/**
 * Any tagged event (the runner's `OrchestrateEvent` union fits as is). The
 * fields are read through an allowlist per type; anything else is logged by
 * type only.
 */
export interface RunEventLike {
  readonly type: string;
}

/**
 * Logs one orchestrate event, content-free by allowlist: `run:started` and
 * `run:finished` at info (ids, outcome, exit code, failure class, duration,
 * counts; never stdout or the stderr tail), `capability:audited` at info for
 * a deny and debug for an allow, `run:preflight` at debug (capabilities only).
 */
export function logRunEvent(tagged: RunEventLike): void {
  const event = tagged as RunEventLike & Record<string, unknown>;
  switch (event.type) {
    case 'run:started': {
      if (!isLogLevelEnabled('info')) return;
      writeLine('info', compact({ event: event.type, runId: id(event.runId), leaseId: id(event.leaseId), sessionKey: id(event.sessionKey), agentId: name(event.agentId), language: name(event.language) }), 'run started');
      return;
    }
    case 'capability:audited': {
      const deny = event.decision === 'deny';
      if (!isLogLevelEnabled(deny ? 'info' : 'debug')) return;
      const line = compact({ event: event.type, runId: id(event.runId), leaseId: id(event.leaseId), tool: name(event.tool), capability: name(event.capability), decision: deny ? 'deny' : 'allow', reason: name(event.reason) });
      if (deny) writeLine('info', line, 'capability denied');
      else writeLine('debug', line, 'capability allowed');
      return;
    }
    case 'run:preflight': {
      if (!isLogLevelEnabled('debug')) return;
      const footprint = (event.footprint ?? {}) as { capabilities?: unknown; tools?: unknown };
      const caps = Array.isArray(footprint.capabilities) ? footprint.capabilities.map(name).filter((c): c is string => c !== undefined) : [];
      const tools = Array.isArray(footprint.tools) ? footprint.tools.length : 0;
      writeLine('debug', { event: event.type, capabilities: caps, toolCount: tools }, 'run preflight');
      return;
    }
    case 'run:finished': {
      if (!isLogLevelEnabled('info')) return;
      const r = (event.result ?? {}) as Record<string, unknown>;
      const calls = Array.isArray(r.toolCalls) ? (r.toolCalls as { decision?: unknown; count?: unknown }[]) : [];
      const refs = (r.resultRefs ?? {}) as { count?: unknown; bytes?: unknown };
      writeLine(
        'info',
        compact({
          event: event.type,
          runId: id(r.runId),
          leaseId: id(r.leaseId),
          sessionKey: id(r.sessionKey),
          agentId: name(r.agentId),
          outcome: r.outcome === 'success' || r.outcome === 'failure' ? r.outcome : undefined,
          exitCode: r.exitCode === null ? null : num(r.exitCode),
          failureClass: name(r.failureClass),
          durationMs: num(r.durationMs),
          timeoutMs: num(r.timeoutMs),
          stdoutChars: typeof r.stdout === 'string' ? r.stdout.length : undefined,
          stdoutTruncated: typeof r.stdoutTruncated === 'boolean' ? r.stdoutTruncated : undefined,
          toolCallsAllowed: calls.filter((c) => c.decision === 'allow').reduce((n, c) => n + (num(c.count) ?? 0), 0),
          toolCallsDenied: calls.filter((c) => c.decision === 'deny').reduce((n, c) => n + (num(c.count) ?? 0), 0),
          resultRefCount: num(refs.count),
          resultRefBytes: num(refs.bytes),
        }),
        'run finished',
      );
      return;
    }
    default:
      if (!isLogLevelEnabled('debug')) return;
      writeLine('debug', { event: name(event.type) ?? '<other>' }, 'event');
  }
}
