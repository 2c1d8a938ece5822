/**
 * A tokenizer for DuckDB's SQL lexical grammar (the libpg_query scanner that
 * DuckDB 1.5 uses), written for one job: let the slicer's pre-filter see the
 * same words, strings and quoted identifiers that DuckDB will see, so a
 * keyword hidden in a comment, a string or a quoted identifier is classified
 * as DuckDB classifies it.
 *
 * Semantics (each rule checked against DuckDB 1.5.6 itself):
 * - whitespace is space, tab, LF, CR and FF; `--` comments end at LF or CR;
 *   `/* … *\/` comments nest;
 * - `'…'` strings double `''` and take backslash literally; `E'…'` strings
 *   take backslash escapes; `N'…'` is a plain string; `B'…'`/`X'…'` end at
 *   the first quote; `$$…$$` and `$tag$…$tag$` are dollar-quoted strings
 *   (tags are case-sensitive); `"…"` is a quoted identifier doubling `""`;
 * - unquoted identifiers are `[A-Za-z_][A-Za-z0-9_$]*` and compare
 *   case-insensitively.
 *
 * Security property: where DuckDB's scanner and this one could disagree, the
 * input is refused ({@link SqlLexError}) instead of guessed: NUL and other
 * control characters anywhere, non-ASCII characters outside quotes and
 * comments (DuckDB folds some Unicode spaces into whitespace before it
 * scans), `U&` Unicode-escape literals, unterminated strings, identifiers,
 * dollar quotes or comments, and a quote glued to a preceding word or number
 * (`1e'…'`, `x$a$…`), whose reading depends on scanner details.
 */

export type SqlTokenKind = 'word' | 'quoted_ident' | 'string' | 'number' | 'param' | 'op' | 'punct';

export interface SqlToken {
  kind: SqlTokenKind;
  /** The token's source text. */
  text: string;
  /**
   * `word`: lower-cased; `quoted_ident`: unquoted (`""` → `"`); `string`: the
   * decoded content (E-string escapes applied); otherwise the text.
   */
  value: string;
  /** Offset of the first character in the query. */
  start: number;
}

/** The query is not lexically clear enough to be judged. */
export class SqlLexError extends Error {
  readonly position: number;
  constructor(message: string, position: number) {
    super(message);
    this.name = 'SqlLexError';
    this.position = position;
  }
}

const PUNCT = new Set(['(', ')', ',', ';', '[', ']', '{', '}', '.', ':']);
const OP_CHARS = new Set(['+', '-', '*', '/', '<', '>', '=', '~', '!', '@', '#', '%', '^', '&', '|', '`', '?', '\\']);

function isWhitespace(c: string): boolean {
  return c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\f';
}
function isIdentStart(c: string | undefined): boolean {
  return c !== undefined && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c === '_');
}
function isDigit(c: string | undefined): boolean {
  return c !== undefined && c >= '0' && c <= '9';
}
function isIdentCont(c: string | undefined): boolean {
  return isIdentStart(c) || isDigit(c) || c === '$';
}
function isHex(c: string | undefined): boolean {
  return c !== undefined && /^[0-9A-Fa-f]$/.test(c);
}

/** Control characters DuckDB does not treat as whitespace (and NUL, which ends a C string early). */
function checkCharacters(sql: string): void {
  for (let i = 0; i < sql.length; i++) {
    const code = sql.charCodeAt(i);
    if ((code < 0x20 && code !== 0x09 && code !== 0x0a && code !== 0x0d && code !== 0x0c) || code === 0x7f) {
      throw new SqlLexError(`control character U+${code.toString(16).padStart(4, '0').toUpperCase()} is not allowed`, i);
    }
    if (code >= 0xd800 && code <= 0xdfff) {
      const next = sql.charCodeAt(i + 1);
      if (code <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        i++;
        continue;
      }
      throw new SqlLexError('malformed Unicode text', i);
    }
  }
}

/** Decodes the body of an `E'…'` string the way DuckDB does (and refuses what DuckDB refuses). */
function decodeEscapeString(body: string, start: number): string {
  let out = '';
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (c === "'") {
      out += "'";
      i++; // the scanner only hands over doubled quotes here
      continue;
    }
    if (c !== '\\') {
      out += c;
      continue;
    }
    const n = body[i + 1];
    if (n === undefined) break;
    i++;
    switch (n) {
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'x': {
        let hex = '';
        while (hex.length < 2 && isHex(body[i + 1])) hex += body[++i];
        out += hex === '' ? 'x' : String.fromCharCode(parseInt(hex, 16));
        break;
      }
      case 'u':
      case 'U':
        throw new SqlLexError('Unicode escapes in strings are not accepted', start);
      default:
        if (n >= '0' && n <= '7') {
          let oct = n;
          while (oct.length < 3 && body[i + 1] !== undefined && body[i + 1]! >= '0' && body[i + 1]! <= '7') oct += body[++i];
          const code = parseInt(oct, 8);
          if (code === 0) throw new SqlLexError('NUL escapes in strings are not accepted', start);
          out += String.fromCharCode(code & 0xff);
        } else {
          out += n;
        }
    }
  }
  return out;
}

/**
 * Splits `sql` into tokens, dropping whitespace and comments.
 * Throws {@link SqlLexError} on anything it would have to guess about.
 */
export function tokenizeSql(sql: string): SqlToken[] {
  checkCharacters(sql);
  const tokens: SqlToken[] = [];
  const n = sql.length;
  let i = 0;

  // A quote right after a word or number character (nothing between them)
  // is read differently by different scanner versions (`1e'…'`): refuse it.
  const gluedToWord = (at: number): boolean => at > 0 && isIdentCont(sql[at - 1]);

  const readQuoted = (from: number, quote: string, doubling: boolean, backslash: boolean, what: string): number => {
    let j = from;
    for (;;) {
      if (j >= n) throw new SqlLexError(`unterminated ${what}`, from);
      const c = sql[j]!;
      if (backslash && c === '\\') {
        j += 2;
        continue;
      }
      if (c === quote) {
        if (doubling && sql[j + 1] === quote) {
          j += 2;
          continue;
        }
        return j; // index of the closing quote
      }
      j++;
    }
  };

  while (i < n) {
    const c = sql[i]!;
    const next = sql[i + 1];

    if (isWhitespace(c)) {
      i++;
      continue;
    }
    if (c === '-' && next === '-') {
      while (i < n && sql[i] !== '\n' && sql[i] !== '\r') i++;
      continue;
    }
    if (c === '/' && next === '*') {
      const start = i;
      let depth = 0;
      for (;;) {
        if (i >= n) throw new SqlLexError('unterminated /* comment', start);
        if (sql[i] === '/' && sql[i + 1] === '*') {
          depth++;
          i += 2;
        } else if (sql[i] === '*' && sql[i + 1] === '/') {
          depth--;
          i += 2;
          if (depth === 0) break;
        } else {
          i++;
        }
      }
      continue;
    }
    if (c.charCodeAt(0) > 0x7f) {
      throw new SqlLexError('non-ASCII characters are only accepted inside quotes or comments', i);
    }

    // Prefixed string literals: E'…', N'…', B'…', X'…', and the refused U&'…' / U&"…".
    const upper = c.toUpperCase();
    if (upper === 'U' && next === '&' && (sql[i + 2] === "'" || sql[i + 2] === '"')) {
      throw new SqlLexError('U& Unicode-escape literals are not accepted', i);
    }
    if ((upper === 'E' || upper === 'N' || upper === 'B' || upper === 'X') && next === "'") {
      if (gluedToWord(i)) throw new SqlLexError('a string literal must not be glued to a word or number', i);
      const start = i;
      if (upper === 'E') {
        const close = readQuoted(i + 2, "'", true, true, 'quoted string');
        const body = sql.slice(i + 2, close);
        tokens.push({ kind: 'string', text: sql.slice(start, close + 1), value: decodeEscapeString(body, start), start });
        i = close + 1;
      } else if (upper === 'N') {
        const close = readQuoted(i + 2, "'", true, false, 'quoted string');
        tokens.push({ kind: 'string', text: sql.slice(start, close + 1), value: sql.slice(i + 2, close).replace(/''/g, "'"), start });
        i = close + 1;
      } else {
        const close = readQuoted(i + 2, "'", false, false, upper === 'B' ? 'bit string' : 'hex string');
        tokens.push({ kind: 'string', text: sql.slice(start, close + 1), value: sql.slice(i + 2, close), start });
        i = close + 1;
      }
      continue;
    }

    if (c === "'") {
      if (gluedToWord(i)) throw new SqlLexError('a string literal must not be glued to a word or number', i);
      const close = readQuoted(i + 1, "'", true, false, 'quoted string');
      tokens.push({ kind: 'string', text: sql.slice(i, close + 1), value: sql.slice(i + 1, close).replace(/''/g, "'"), start: i });
      i = close + 1;
      continue;
    }
    if (c === '"') {
      if (gluedToWord(i)) throw new SqlLexError('a quoted identifier must not be glued to a word or number', i);
      const close = readQuoted(i + 1, '"', true, false, 'quoted identifier');
      tokens.push({ kind: 'quoted_ident', text: sql.slice(i, close + 1), value: sql.slice(i + 1, close).replace(/""/g, '"'), start: i });
      i = close + 1;
      continue;
    }
    if (c === '$') {
      if (next !== undefined && next.charCodeAt(0) > 0x7f) {
        throw new SqlLexError('non-ASCII characters are only accepted inside quotes or comments', i + 1);
      }
      if (isDigit(next)) {
        let j = i + 1;
        while (isDigit(sql[j])) j++;
        tokens.push({ kind: 'param', text: sql.slice(i, j), value: sql.slice(i, j), start: i });
        i = j;
        continue;
      }
      if (next === '$' || isIdentStart(next)) {
        let j = i + 1;
        while (j < n && (isIdentStart(sql[j]) || isDigit(sql[j]))) j++;
        if (sql[j] === '$') {
          if (gluedToWord(i)) throw new SqlLexError('a dollar-quoted string must not be glued to a word or number', i);
          const delimiter = sql.slice(i, j + 1);
          const close = sql.indexOf(delimiter, j + 1);
          if (close === -1) throw new SqlLexError('unterminated dollar-quoted string', i);
          tokens.push({ kind: 'string', text: sql.slice(i, close + delimiter.length), value: sql.slice(j + 1, close), start: i });
          i = close + delimiter.length;
          continue;
        }
        if (sql[j] !== undefined && sql.charCodeAt(j) > 0x7f) {
          throw new SqlLexError('non-ASCII characters are only accepted inside quotes or comments', j);
        }
        tokens.push({ kind: 'param', text: sql.slice(i, j), value: sql.slice(i, j), start: i });
        i = j;
        continue;
      }
      tokens.push({ kind: 'op', text: '$', value: '$', start: i });
      i++;
      continue;
    }
    if (isDigit(c) || (c === '.' && isDigit(next))) {
      let j = i;
      while (isDigit(sql[j]) || sql[j] === '_') j++;
      if (sql[j] === '.' && sql[j + 1] !== '.') {
        j++;
        while (isDigit(sql[j]) || sql[j] === '_') j++;
      }
      if ((sql[j] === 'e' || sql[j] === 'E') && (isDigit(sql[j + 1]) || ((sql[j + 1] === '+' || sql[j + 1] === '-') && isDigit(sql[j + 2])))) {
        j += 2;
        while (isDigit(sql[j])) j++;
      }
      tokens.push({ kind: 'number', text: sql.slice(i, j), value: sql.slice(i, j), start: i });
      i = j;
      continue;
    }
    if (isIdentStart(c)) {
      let j = i + 1;
      while (j < n && isIdentCont(sql[j])) j++;
      if (j < n && sql.charCodeAt(j) > 0x7f) {
        throw new SqlLexError('non-ASCII characters are only accepted inside quotes or comments', j);
      }
      const text = sql.slice(i, j);
      tokens.push({ kind: 'word', text, value: text.toLowerCase(), start: i });
      i = j;
      continue;
    }
    if (PUNCT.has(c)) {
      tokens.push({ kind: 'punct', text: c, value: c, start: i });
      i++;
      continue;
    }
    if (OP_CHARS.has(c)) {
      tokens.push({ kind: 'op', text: c, value: c, start: i });
      i++;
      continue;
    }
    throw new SqlLexError(`unexpected character ${JSON.stringify(c)}`, i);
  }
  return tokens;
}
