/**
 * The slicer's SQL pre-filter: a fast, friendly first refusal that runs before
 * DuckDB is started. It accepts only one read-only query — a single `SELECT`,
 * `WITH … SELECT`, `VALUES`, `(SELECT …)`, `TABLE` or FROM-first query — and
 * refuses state-changing verbs, the readers and functions in
 * {@link DENIED_FUNCTIONS}, and URLs, judged on the tokens of
 * {@link tokenizeSql} (so comments, string tricks, quoted identifiers and
 * case change nothing).
 *
 * Security property: this is NOT the boundary. Strings built at run time
 * (`'rea' || 'd_text'`, a URL assembled by concatenation) cannot be judged
 * statically; the boundary is the engine's own confinement
 * (`allowed_directories`, `enable_external_access=false`,
 * `lock_configuration=true`) inside a jailed child process. The child also
 * re-applies {@link findDeniedInParseTree} to DuckDB's own parse of the query,
 * which removes any disagreement between this tokenizer and DuckDB's.
 */
import { SqlLexError, tokenizeSql, type SqlToken } from './sql-lexer.js';

/** Longest query accepted, in UTF-16 code units (the capability socket frame is 64 KiB). */
export const MAX_QUERY_CHARS = 64 * 1024;

/** Words that start a read-only query. */
const QUERY_STARTS = new Set(['select', 'with', 'values', 'from', 'table']);

/**
 * Unquoted words refused anywhere in the query: statement verbs that change
 * state, load code or reach outside. A column that happens to carry one of
 * these names must be written as a quoted identifier (`"load"`).
 */
export const DENIED_KEYWORDS: ReadonlySet<string> = new Set([
  'install',
  'load',
  'attach',
  'detach',
  'copy',
  'export',
  'import',
  'pragma',
  'set',
  'reset',
  'call',
  'create',
  'insert',
  'update',
  'delete',
  'drop',
  'alter',
  'truncate',
  'merge',
  'vacuum',
  'checkpoint',
  'use',
  'prepare',
  'execute',
  'deallocate',
  'begin',
  'commit',
  'rollback',
  'abort',
  'grant',
  'revoke',
]);

/**
 * Functions refused when called (a name, quoted or not, schema-qualified or
 * not, followed by `(`), with the reason shown to the script.
 */
export const DENIED_FUNCTIONS: Readonly<Record<string, string>> = {
  // Readers of arbitrary files or file metadata.
  read_text: 'reads raw files',
  read_blob: 'reads raw files',
  glob: 'lists files',
  read_duckdb: 'opens database files',
  sniff_csv: 'probes files',
  parquet_metadata: 'reads file metadata',
  parquet_schema: 'reads file metadata',
  parquet_file_metadata: 'reads file metadata',
  parquet_kv_metadata: 'reads file metadata',
  parquet_full_metadata: 'reads file metadata',
  parquet_bloom_probe: 'reads file metadata',
  // The host environment and the engine's settings (which hold host paths).
  getenv: 'reads the environment',
  current_setting: 'reads engine settings',
  which_secret: 'reads secrets',
  // Dynamic SQL: would run text the pre-filter never saw.
  query: 'runs dynamic SQL',
  query_table: 'runs dynamic SQL',
  json_execute_serialized_sql: 'runs dynamic SQL',
  // Engine state, logging and profiling (which can write files).
  checkpoint: 'changes engine state',
  force_checkpoint: 'changes engine state',
  enable_logging: 'changes engine state',
  disable_logging: 'changes engine state',
  truncate_duckdb_logs: 'changes engine state',
  enable_profiling: 'changes engine state',
  disable_profiling: 'changes engine state',
  enable_peg_parser: 'changes engine state',
  disable_peg_parser: 'changes engine state',
  // Scans of raw memory pointers.
  arrow_scan: 'scans raw memory',
  arrow_scan_dumb: 'scans raw memory',
};

/** Function-name prefixes refused: DuckDB's catalog/settings views and PRAGMA table functions. */
export const DENIED_FUNCTION_PREFIXES: readonly (readonly [string, string])[] = [
  ['duckdb_', 'reads engine internals'],
  ['pragma_', 'runs a PRAGMA'],
];

/** Why a called function is refused, or undefined when it is allowed. */
/**
 * The engine's catalog views read without parentheses (`FROM pg_settings`, `FROM
 * pragma_database_list`, `FROM duckdb_databases`, `information_schema.tables`): the same
 * internals as the functions refused above, so refused the same way, as table references in
 * DuckDB's parse. A query's own CTE or alias of such a name is refused too (rename it).
 */
export const DENIED_TABLE_PREFIXES: readonly string[] = ['duckdb_', 'pragma_', 'pg_'];
export const DENIED_SCHEMAS: readonly string[] = ['information_schema', 'pg_catalog'];

export function deniedTableReason(table: string, schema: string): string | undefined {
  const name = table.toLowerCase();
  const space = schema.toLowerCase();
  if (DENIED_SCHEMAS.includes(space) || DENIED_TABLE_PREFIXES.some((p) => name.startsWith(p))) {
    return `${space ? `${space}.` : ''}${name} is not allowed: it reads engine internals (a table of the query's own by that name must be renamed)`;
  }
  return undefined;
}

export function deniedFunctionReason(name: string): string | undefined {
  const lower = name.toLowerCase();
  const direct = Object.prototype.hasOwnProperty.call(DENIED_FUNCTIONS, lower) ? DENIED_FUNCTIONS[lower] : undefined;
  if (direct) return direct;
  for (const [prefix, reason] of DENIED_FUNCTION_PREFIXES) if (lower.startsWith(prefix)) return reason;
  return undefined;
}

/**
 * True when a string names a URL (`scheme://…`: http(s), s3/s3a/s3n, gcs/gs,
 * r2, azure/az/abfss, hf, file, or any other). The slicer reads only files
 * under `results/`, so any `://` in a literal or identifier is refused.
 */
export function looksLikeUrl(text: string): boolean {
  return text.includes('://');
}

export type SqlCheck = { ok: true } | { ok: false; reason: string };

const ONLY_READ = 'only a single read-only SELECT query is accepted';

function refuse(reason: string): SqlCheck {
  return { ok: false, reason };
}

function nextSignificant(tokens: readonly SqlToken[], index: number): SqlToken | undefined {
  return tokens[index + 1];
}

/**
 * The pre-filter. Returns `{ok: true}` for a query it lets through to the
 * (confined) engine, else a short reason meant for the script's author.
 * Pure and synchronous; never starts DuckDB.
 */
export function checkSqlAllowed(sql: unknown): SqlCheck {
  if (typeof sql !== 'string') return refuse('the query must be a string');
  if (sql.trim() === '') return refuse('the query is empty');
  if (sql.length > MAX_QUERY_CHARS) return refuse(`the query is longer than ${MAX_QUERY_CHARS} characters`);

  let tokens: SqlToken[];
  try {
    tokens = tokenizeSql(sql);
  } catch (err) {
    if (err instanceof SqlLexError) return refuse(`the query cannot be read safely: ${err.message}`);
    throw err;
  }

  // One statement: semicolons only at the very end.
  let end = tokens.length;
  while (end > 0 && tokens[end - 1]!.text === ';') end--;
  if (end === 0) return refuse('the query is empty');
  if (tokens.slice(0, end).some((t) => t.text === ';')) return refuse(`multiple statements are not accepted: ${ONLY_READ}`);
  const body = tokens.slice(0, end);

  // The first word (after any opening parentheses) starts a query.
  let first = 0;
  while (first < body.length && body[first]!.text === '(') first++;
  const lead = body[first];
  if (!lead || lead.kind !== 'word' || !QUERY_STARTS.has(lead.value)) {
    const shown = lead && lead.kind === 'word' ? lead.text.toUpperCase() : 'this statement';
    return refuse(`${shown} is not allowed: ${ONLY_READ}`);
  }

  for (let i = 0; i < body.length; i++) {
    const t = body[i]!;
    if (t.kind === 'word' && DENIED_KEYWORDS.has(t.value)) {
      return refuse(`${t.text.toUpperCase()} is not allowed: ${ONLY_READ} (a column of that name must be double-quoted)`);
    }
    if ((t.kind === 'word' || t.kind === 'quoted_ident') && nextSignificant(body, i)?.text === '(') {
      const why = deniedFunctionReason(t.value);
      if (why) return refuse(`${t.value}() is not allowed: it ${why}`);
    }
    if ((t.kind === 'string' || t.kind === 'quoted_ident') && looksLikeUrl(t.value)) {
      return refuse('URLs are not allowed: the query may read only files under results/');
    }
  }

  // Literals glued together ('ht' \n 'tp://…', 'http:' || '//…', concat('s3:', '//…')):
  // judged on all of them joined in order. This over-refuses a query that
  // merely holds 'a:' and '//b'; a URL built from non-literals (chr(58)) is
  // the engine's and the jail's to refuse.
  const joined = body
    .filter((t) => t.kind === 'string')
    .map((t) => t.value)
    .join('');
  if (looksLikeUrl(joined)) return refuse('URLs are not allowed: the query may read only files under results/');
  return { ok: true };
}

/**
 * Walks DuckDB's own parse tree of a query (the JSON of `json_serialize_sql`)
 * and returns the first refusal reason, if any: a denied function in any
 * position, or a URL in any string (constants, table names, aliases). Shared
 * with the child process, which runs it against the engine's parser so that
 * the pre-filter's tokenizer cannot be out-argued by a lexical trick.
 */
export function findDeniedInParseTree(tree: unknown): string | undefined {
  const stack: unknown[] = [tree];
  let visited = 0;
  while (stack.length > 0) {
    const node = stack.pop();
    if (++visited > 1_000_000) return 'the query is too complex';
    if (typeof node === 'string') {
      if (looksLikeUrl(node)) return 'URLs are not allowed: the query may read only files under results/';
      continue;
    }
    if (node === null || typeof node !== 'object') continue;
    if (Array.isArray(node)) {
      for (const item of node) stack.push(item);
      continue;
    }
    const record = node as Record<string, unknown>;
    if (typeof record.function_name === 'string') {
      const why = deniedFunctionReason(record.function_name);
      if (why) return `${record.function_name.toLowerCase()}() is not allowed: it ${why}`;
    }
    if (record.type === 'BASE_TABLE' && typeof record.table_name === 'string') {
      const why = deniedTableReason(record.table_name, typeof record.schema_name === 'string' ? record.schema_name : '');
      if (why) return why;
    }
    for (const value of Object.values(record)) stack.push(value);
  }
  return undefined;
}
