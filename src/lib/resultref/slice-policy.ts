/**
 * The one table of what a ResultRef slice may not do, written by the SDK
 * emitter into every flavour (TS/JS and Python), so the refusals cannot
 * drift between languages.
 *
 * jq runs in the jail on the ref alone (no environment, the payload on
 * stdin), and the SDK refuses, before spawning jq, any filter that names a
 * builtin reaching for modules, files, the environment or the program, or
 * one of jq's special variables. SQL and JSONPath are not checked here: they
 * run daemon-side, where the SQL lexer/policy and DuckDB's own confinement
 * decide (resultref/duckdb).
 */

/** jq builtins a slice filter may not name (matched as whole words). */
export const JQ_FORBIDDEN_BUILTINS = ['import', 'include', 'modulemeta', 'get_search_list', 'get_prog_origin', 'get_jq_origin', 'input_filename', 'env', 'halt_error', 'input_line_number'] as const;

/** jq special variables a slice filter may not read (`$NAME`). */
export const JQ_FORBIDDEN_VARIABLES = ['ENV', '__loc__', '__prog_args'] as const;

/**
 * The refusal as one regular expression source that means the same in
 * JavaScript and Python `re` (only `\b`, `\$`, groups and alternation), so
 * the emitter can write it verbatim into both SDKs.
 */
export const JQ_FORBIDDEN_SOURCE = `\\b(${JQ_FORBIDDEN_BUILTINS.join('|')})\\b|\\$(${JQ_FORBIDDEN_VARIABLES.join('|')})\\b`;

/** True when the SDK refuses this jq filter (code `jq_refused`). */
export function jqFilterRefused(expr: string): boolean {
  return new RegExp(JQ_FORBIDDEN_SOURCE).test(expr);
}
