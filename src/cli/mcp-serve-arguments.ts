/**
 * The arguments of the `orchestrate` tool that `comis mcp serve` offers, as
 * data (the JSON Schema the client sees) and as a check (what the server
 * enforces). The check does not trust the schema: a client may send anything,
 * and every refusal names the argument, what was wrong and what to send.
 *
 * The timeout rule is the CLI's (`--timeout-ms`): an integer, 0 for the
 * agent's configured timeout, else 100 to 600000; the same function decides
 * both (see resolveRequestedTimeout).
 */
import { ComisError } from '../lib/errors.js';
import { MAX_REQUEST_TIMEOUT_MS, MIN_TIMEOUT_MS, resolveRequestedTimeout } from '../lib/orchestrate/execute.js';
import type { ScriptLanguage } from '../lib/orchestrate/transpile.js';

export const SCRIPT_LANGUAGES = ['ts', 'js', 'py'] as const satisfies readonly ScriptLanguage[];
/**
 * The largest script accepted, in UTF-8 bytes. A script is a program a model
 * wrote, not data: data belongs in the workspace, where the script reads it.
 * Well under the stdio transport's 10 MiB message bound.
 */
export const MAX_SCRIPT_BYTES = 1024 * 1024;

export interface OrchestrateToolArgs {
  script: string;
  language: ScriptLanguage;
  /** Resolved: undefined means the agent's configured timeout. */
  timeoutMs: number | undefined;
}

/** The input schema of `orchestrate`, as published in tools/list. */
export const ORCHESTRATE_INPUT_SCHEMA = {
  type: 'object',
  properties: {
    script: {
      type: 'string',
      minLength: 1,
      description: `The whole program, at most ${MAX_SCRIPT_BYTES} bytes. It reaches tools only through comis_tools; print the answer to stdout.`,
    },
    language: { type: 'string', enum: [...SCRIPT_LANGUAGES], description: 'ts (TypeScript), js (JavaScript: ES module or CommonJS, told from its syntax) or py (Python 3).' },
    timeoutMs: {
      type: 'integer',
      minimum: 0,
      maximum: MAX_REQUEST_TIMEOUT_MS,
      description: `Wall-clock timeout in ms: ${MIN_TIMEOUT_MS} to ${MAX_REQUEST_TIMEOUT_MS}, or 0 (or absent) for the agent's configured timeout (default 60000).`,
    },
  },
  required: ['script', 'language'],
  additionalProperties: false,
} as const;

const KNOWN = new Set(Object.keys(ORCHESTRATE_INPUT_SCHEMA.properties));

function usage(message: string, hint: string): ComisError {
  return new ComisError('USAGE', `orchestrate: ${message}`, { hint: `Nothing was run. ${hint}` });
}

function kindOf(value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value;
}

/** Checks the arguments of one `orchestrate` call; throws a USAGE ComisError naming the argument. */
export function parseOrchestrateArgs(raw: unknown): OrchestrateToolArgs {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw usage(`the arguments must be an object, got ${kindOf(raw)}.`, 'Send {"script": "...", "language": "ts"}.');
  }
  const args = raw as Record<string, unknown>;
  // Names only, never values: an unknown key could be anything the client's model invented.
  const unknown = Object.keys(args).filter((k) => !KNOWN.has(k));
  if (unknown.length > 0) {
    const shown = unknown
      .slice(0, 5)
      .map((k) => JSON.stringify(k.slice(0, 40)))
      .join(', ');
    throw usage(`unknown argument${unknown.length === 1 ? '' : 's'} ${shown}.`, 'The arguments are script, language and timeoutMs.');
  }
  const { script, language, timeoutMs } = args;
  if (typeof script !== 'string') throw usage(`script must be a string, got ${kindOf(script)}.`, 'Pass the program text as script.');
  if (script.trim() === '') throw usage('script is empty.', 'Pass the program text as script.');
  const bytes = Buffer.byteLength(script, 'utf8');
  if (bytes > MAX_SCRIPT_BYTES) {
    throw usage(`script is ${bytes} bytes, over the ${MAX_SCRIPT_BYTES}-byte bound.`, 'Put data in the workspace and have the script read it with comis_tools.read.');
  }
  if (typeof language !== 'string' || !(SCRIPT_LANGUAGES as readonly string[]).includes(language)) {
    const got = typeof language === 'string' ? JSON.stringify(language.slice(0, 20)) : kindOf(language);
    throw usage(`language must be one of ${SCRIPT_LANGUAGES.join(', ')}, got ${got}.`, 'Pass language "ts", "js" or "py".');
  }
  let requested: number | undefined;
  if (timeoutMs !== undefined) {
    if (typeof timeoutMs !== 'number' || !Number.isInteger(timeoutMs)) {
      throw usage(`timeoutMs must be an integer, got ${typeof timeoutMs === 'number' ? String(timeoutMs) : kindOf(timeoutMs)}.`, `Pass ${MIN_TIMEOUT_MS} to ${MAX_REQUEST_TIMEOUT_MS}, or 0 for the default.`);
    }
    if (timeoutMs < 0 || timeoutMs > MAX_REQUEST_TIMEOUT_MS) {
      throw usage(`timeoutMs ${timeoutMs} is outside 0 to ${MAX_REQUEST_TIMEOUT_MS}.`, `Pass ${MIN_TIMEOUT_MS} to ${MAX_REQUEST_TIMEOUT_MS}, or 0 for the default.`);
    }
    requested = timeoutMs;
  }
  let resolved: number | undefined;
  try {
    resolved = resolveRequestedTimeout(requested, 'timeoutMs');
  } catch (err) {
    const e = err as ComisError;
    throw new ComisError('USAGE', `orchestrate: ${e.message}`, { hint: `Nothing was run. ${e.hint ?? ''}`.trim() });
  }
  return { script, language: language as ScriptLanguage, timeoutMs: resolved };
}
