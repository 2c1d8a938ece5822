/**
 * `.jsonpath(expr)` for ResultRefs: a deliberately small JSONPath subset
 * compiled to one DuckDB `json_extract` query over the ref's file. No eval
 * and no JSONPath library: the expression is parsed here into segments and
 * re-emitted in DuckDB's own path syntax, then quoted as a SQL literal.
 *
 * Accepted (and nothing else):
 * - `$` — the whole document;
 * - `.name` — a member whose name is letters, digits, `_`, `$` or `-` (not
 *   starting with a digit or `-`);
 * - `["any key"]` / `['any key']` — a member by exact name (escapes `\\`,
 *   `\"`, `\'`; no control characters; not empty and not `*`, which DuckDB's
 *   path syntax cannot address);
 * - `[3]` — an array element; `[-1]` — counted from the end;
 * - `[*]` — every array element; `.*` — every object member (the result is
 *   an array; as in DuckDB, `[*]` matches only arrays and `.*` only objects).
 * No recursive descent (`..`), filters, slices or unions.
 *
 * Document: the ref is read with `read_json_objects(…, format='unstructured')`.
 * A file holding one JSON value is that value; a file holding several (JSONL)
 * is the array of them, in file order, so `$[0].id` is the first record.
 *
 * Security property: `refPath` must be a plain relative path under
 * `results/` (no `..`, no quotes or control characters), and both it and the
 * path are emitted as SQL string literals with quotes doubled. The compiled
 * query passes the slicer's pre-filter like any other.
 */

export const MAX_JSONPATH_CHARS = 1024;
export const MAX_JSONPATH_SEGMENTS = 64;

export type JsonPathSegment =
  | { kind: 'member'; name: string }
  | { kind: 'index'; index: number }
  /** `[*]` (array elements) or `.*` (object members): DuckDB matches each only on its own kind. */
  | { kind: 'wildcard'; of: 'array' | 'object' };

/** An expression or ref path the compiler refuses; `code` is stable. */
export class JsonPathError extends Error {
  readonly code = 'jsonpath_invalid';
  constructor(message: string) {
    super(message);
    this.name = 'JsonPathError';
  }
}

const DOT_NAME = /^[A-Za-z_$][A-Za-z0-9_$-]*/;

function parseBracketString(expr: string, at: number): { name: string; end: number } {
  const quote = expr[at]!;
  let name = '';
  let i = at + 1;
  for (;;) {
    if (i >= expr.length) throw new JsonPathError(`unterminated quoted name at offset ${at}`);
    const c = expr[i]!;
    if (c === quote) break;
    if (c === '\\') {
      const n = expr[i + 1];
      if (n !== '\\' && n !== '"' && n !== "'") throw new JsonPathError(`unsupported escape at offset ${i}`);
      name += n;
      i += 2;
      continue;
    }
    if (c.charCodeAt(0) < 0x20 || c === '\u007f') throw new JsonPathError(`control character in a name at offset ${i}`);
    name += c;
    i++;
  }
  if (expr[i + 1] !== ']') throw new JsonPathError(`expected ] at offset ${i + 1}`);
  return { name, end: i + 2 };
}

/** Parses the accepted JSONPath subset; throws {@link JsonPathError}. */
export function parseJsonPath(expr: unknown): JsonPathSegment[] {
  if (typeof expr !== 'string') throw new JsonPathError('the JSONPath must be a string');
  if (expr.length > MAX_JSONPATH_CHARS) throw new JsonPathError(`the JSONPath is longer than ${MAX_JSONPATH_CHARS} characters`);
  if (!expr.startsWith('$')) throw new JsonPathError('a JSONPath must start with $');
  const segments: JsonPathSegment[] = [];
  let i = 1;
  while (i < expr.length) {
    const c = expr[i]!;
    if (c === '.') {
      if (expr[i + 1] === '.') throw new JsonPathError('recursive descent (..) is not supported');
      if (expr[i + 1] === '*') {
        segments.push({ kind: 'wildcard', of: 'object' });
        i += 2;
      } else {
        const m = DOT_NAME.exec(expr.slice(i + 1));
        if (!m) throw new JsonPathError(`expected a name after . at offset ${i}; use ["…"] for other names`);
        segments.push({ kind: 'member', name: m[0] });
        i += 1 + m[0].length;
      }
    } else if (c === '[') {
      const n = expr[i + 1];
      if (n === '"' || n === "'") {
        const { name, end } = parseBracketString(expr, i + 1);
        segments.push({ kind: 'member', name });
        i = end;
      } else if (n === '*') {
        if (expr[i + 2] !== ']') throw new JsonPathError(`expected ] at offset ${i + 2}`);
        segments.push({ kind: 'wildcard', of: 'array' });
        i += 3;
      } else {
        const m = /^(-?)(0|[1-9][0-9]{0,8})\]/.exec(expr.slice(i + 1));
        if (!m) throw new JsonPathError(`expected an index, a quoted name or * inside [ ] at offset ${i}`);
        const value = Number(m[2]);
        if (m[1] === '-' && value === 0) throw new JsonPathError('index -0 is not valid; use -1 for the last element');
        segments.push({ kind: 'index', index: m[1] === '-' ? -value : value });
        i += 1 + m[0].length;
      }
    } else {
      throw new JsonPathError(`unexpected ${JSON.stringify(c)} at offset ${i}`);
    }
    if (segments.length > MAX_JSONPATH_SEGMENTS) throw new JsonPathError(`the JSONPath has more than ${MAX_JSONPATH_SEGMENTS} steps`);
  }
  return segments;
}

/** DuckDB's path syntax for the segments (`$."a".b[0]`, `$[#-1]`, `$.*`). */
export function toDuckDbPath(segments: readonly JsonPathSegment[]): string {
  let out = '$';
  for (const s of segments) {
    if (s.kind === 'wildcard') {
      out += s.of === 'array' ? '[*]' : '.*';
    } else if (s.kind === 'index') {
      out += s.index < 0 ? `[#${s.index}]` : `[${s.index}]`;
    } else {
      if (s.name === '' || s.name === '*') throw new JsonPathError(`the member name ${JSON.stringify(s.name)} cannot be addressed`);
      out += `."${s.name.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
    }
  }
  return out;
}

/** Quotes a SQL string literal (single quotes doubled). */
function sqlString(text: string): string {
  return `'${text.replace(/'/g, "''")}'`;
}

/**
 * Checks a ResultRef path: relative to the run workspace, under `results/`,
 * plain segments only. Returns it unchanged; throws {@link JsonPathError}.
 */
export function checkRefPath(refPath: unknown): string {
  if (typeof refPath !== 'string' || refPath.length === 0 || refPath.length > 512) throw new JsonPathError('the ref path must be a non-empty string');
  if (!refPath.startsWith('results/')) throw new JsonPathError('the ref path must start with results/');
  if (!/^[A-Za-z0-9._\-/]+$/.test(refPath)) throw new JsonPathError('the ref path has characters a ResultRef never has');
  const parts = refPath.split('/');
  if (parts.some((p) => p === '' || p === '.' || p === '..')) throw new JsonPathError('the ref path must not contain empty, . or .. segments');
  return refPath;
}

/**
 * Compiles `expr` over the ref at `refPath` (`results/ref-1.json`) into one
 * SQL query whose single row has one column, `value`, holding the extracted
 * JSON (null when the path matches nothing; an array for wildcards).
 * Throws {@link JsonPathError} on an invalid expression or ref path.
 */
export function compileJsonPath(expr: string, refPath: string): string {
  const path = toDuckDbPath(parseJsonPath(expr));
  const file = sqlString(checkRefPath(refPath));
  const doc = `SELECT CASE WHEN count(*) = 1 THEN any_value(json) ELSE to_json(list(json ORDER BY ordinality)) END AS doc ` + `FROM read_json_objects(${file}, format = 'unstructured', maximum_object_size = 67108864) WITH ORDINALITY`;
  return `SELECT json_extract(doc, ${sqlString(path)}) AS value FROM (${doc})`;
}
