/**
 * Unit tests of the SQL pre-filter's tokenizer, token by token: kinds, source
 * text, decoded values and offsets, and every refusal with its message and
 * position. The attack battery over the whole pre-filter (and the differential
 * test against DuckDB's own parser) is test/security/duckdb-prefilter.test.ts.
 */
import { describe, expect, it } from 'vitest';

import { SqlLexError, tokenizeSql, type SqlToken } from '../../src/lib/resultref/duckdb/sql-lexer.js';

/** Tokens as [kind, text, value, start]. */
function lex(sql: string): [string, string, string, number][] {
  return tokenizeSql(sql).map((t: SqlToken) => [t.kind, t.text, t.value, t.start]);
}

/** The SqlLexError that `sql` raises: its message and position. */
function lexError(sql: string): { message: string; position: number; name: string } {
  try {
    tokenizeSql(sql);
  } catch (err) {
    if (!(err instanceof SqlLexError)) throw err;
    return { message: err.message, position: err.position, name: err.name };
  }
  throw new Error(`tokenized, but must be refused: ${JSON.stringify(sql)}`);
}

/** The decoded value of the one string token of `sql`. */
function stringValue(sql: string): string {
  const strings = tokenizeSql(sql).filter((t) => t.kind === 'string');
  expect(strings).toHaveLength(1);
  return strings[0]!.value;
}

describe('sql lexer: words, numbers, operators and punctuation', () => {
  it('gives each token its kind, source text, value and offset', () => {
    expect(lex('SELECT a_1, "B" FROM t')).toEqual([
      ['word', 'SELECT', 'select', 0],
      ['word', 'a_1', 'a_1', 7],
      ['punct', ',', ',', 10],
      ['quoted_ident', '"B"', 'B', 12],
      ['word', 'FROM', 'from', 16],
      ['word', 't', 't', 21],
    ]);
    expect(tokenizeSql('')).toEqual([]);
  });

  it('separates tokens by space, tab, LF, CR and FF only', () => {
    for (const ws of [' ', '\t', '\n', '\r', '\f']) {
      expect(lex(`a${ws}b`), JSON.stringify(ws)).toEqual([
        ['word', 'a', 'a', 0],
        ['word', 'b', 'b', 2],
      ]);
    }
  });

  it('reads identifiers as [A-Za-z_][A-Za-z0-9_$]*, lower-cased', () => {
    expect(lex('a z A Z _ aZ_09$x')).toEqual([
      ['word', 'a', 'a', 0],
      ['word', 'z', 'z', 2],
      ['word', 'A', 'a', 4],
      ['word', 'Z', 'z', 6],
      ['word', '_', '_', 8],
      ['word', 'aZ_09$x', 'az_09$x', 10],
    ]);
    // The characters around the letter ranges are not letters: @ [ ` { are operators or punctuation.
    expect(lex('@a[b`c{').map(([kind, text]) => [kind, text])).toEqual([
      ['op', '@'],
      ['word', 'a'],
      ['punct', '['],
      ['word', 'b'],
      ['op', '`'],
      ['word', 'c'],
      ['punct', '{'],
    ]);
  });

  it('reads numbers: digits with _, one fraction, an exponent only when digits follow', () => {
    expect(lex('0 9 1_000 1.5 .5 1.e 12.34e5 1E+5 1e-5 1e')).toEqual([
      ['number', '0', '0', 0],
      ['number', '9', '9', 2],
      ['number', '1_000', '1_000', 4],
      ['number', '1.5', '1.5', 10],
      ['number', '.5', '.5', 14],
      ['number', '1.', '1.', 17],
      ['word', 'e', 'e', 19],
      ['number', '12.34e5', '12.34e5', 21],
      ['number', '1E+5', '1E+5', 29],
      ['number', '1e-5', '1e-5', 34],
      ['number', '1', '1', 39],
      ['word', 'e', 'e', 40],
    ]);
    // `..` is not a fraction; a sign without a digit after it is not an exponent.
    expect(lex('1..2').map(([kind, text]) => [kind, text])).toEqual([
      ['number', '1'],
      ['punct', '.'],
      ['number', '.2'],
    ]);
    expect(lex('1e+x').map(([kind, text]) => [kind, text])).toEqual([
      ['number', '1'],
      ['word', 'e'],
      ['op', '+'],
      ['word', 'x'],
    ]);
    expect(lex('1e-').map(([, text]) => text)).toEqual(['1', 'e', '-']);
    expect(lex('2e1x').map(([, text]) => text)).toEqual(['2e1', 'x']);
    expect(lex('1.5.5').map(([, text]) => text)).toEqual(['1.5', '.5']);
  });

  it('knows every punctuation and operator character, each one token', () => {
    const punct = '(),;[]{}.:';
    expect(lex(punct.split('').join(' ')).map(([kind, text]) => [kind, text])).toEqual(punct.split('').map((c) => ['punct', c]));
    const ops = '+-*/<>=~!@#%^&|`?\\';
    expect(lex(ops.split('').join(' ')).map(([kind, text]) => [kind, text])).toEqual(ops.split('').map((c) => ['op', c]));
    expect(lex('a<>b')).toEqual([
      ['word', 'a', 'a', 0],
      ['op', '<', '<', 1],
      ['op', '>', '>', 2],
      ['word', 'b', 'b', 3],
    ]);
  });

  it('reads $1 and $name as parameters and a lone $ as an operator', () => {
    expect(lex('$1 $23x $name $a1_ $ 1')).toEqual([
      ['param', '$1', '$1', 0],
      ['param', '$23', '$23', 3],
      ['word', 'x', 'x', 6],
      ['param', '$name', '$name', 8],
      ['param', '$a1_', '$a1_', 14],
      ['op', '$', '$', 19],
      ['number', '1', '1', 21],
    ]);
    expect(lex('$a')).toEqual([['param', '$a', '$a', 0]]);
  });
});

describe('sql lexer: comments', () => {
  it('drops -- comments up to LF or CR', () => {
    expect(lex('a -- b\nc')).toEqual([
      ['word', 'a', 'a', 0],
      ['word', 'c', 'c', 7],
    ]);
    expect(lex('a -- b\rc').map(([, text]) => text)).toEqual(['a', 'c']);
    expect(lex('a -- b c')).toEqual([['word', 'a', 'a', 0]]);
    expect(lex('a - - b').map(([, text]) => text)).toEqual(['a', '-', '-', 'b']);
  });

  it('drops /* */ comments, which nest', () => {
    expect(lex('a /* b /* c */ d */ e')).toEqual([
      ['word', 'a', 'a', 0],
      ['word', 'e', 'e', 20],
    ]);
    expect(lex('a/**/b').map(([, text]) => text)).toEqual(['a', 'b']);
    expect(lex('a /* b */ c */').map(([, text]) => text)).toEqual(['a', 'c', '*', '/']);
    expect(lex('a / * b').map(([, text]) => text)).toEqual(['a', '/', '*', 'b']);
    expect(lexError('a /* /* */ b')).toEqual({ name: 'SqlLexError', message: 'unterminated /* comment', position: 2 });
    expect(lexError('/*/')).toMatchObject({ message: 'unterminated /* comment', position: 0 });
  });
});

describe('sql lexer: strings and quoted identifiers', () => {
  it("reads '…' with '' doubled and backslash literal", () => {
    expect(lex("'it''s' 'a\\'")).toEqual([
      ['string', "'it''s'", "it's", 0],
      ['string', "'a\\'", 'a\\', 8],
    ]);
    expect(lex("''")).toEqual([['string', "''", '', 0]]);
    expect(lex("''''")).toEqual([['string', "''''", "'", 0]]);
  });

  it('reads "…" as a quoted identifier with "" doubled', () => {
    expect(lex('"a""b" "x y"')).toEqual([
      ['quoted_ident', '"a""b"', 'a"b', 0],
      ['quoted_ident', '"x y"', 'x y', 7],
    ]);
  });

  it("reads N'…' like a plain string and B'…'/X'…' up to the first quote, in either case", () => {
    expect(lex("N'a''b' n'c'")).toEqual([
      ['string', "N'a''b'", "a'b", 0],
      ['string', "n'c'", 'c', 8],
    ]);
    expect(lex("B'10' b'1' X'ff' x'0\\'")).toEqual([
      ['string', "B'10'", '10', 0],
      ['string', "b'1'", '1', 6],
      ['string', "X'ff'", 'ff', 11],
      ['string', "x'0\\'", '0\\', 17],
    ]);
    expect(lex("B'1''0'").map(([kind, , value]) => [kind, value])).toEqual([
      ['string', '1'],
      ['string', '0'],
    ]);
    // The same letters not followed by a quote are words.
    expect(lex('e n b x u').map(([kind]) => kind)).toEqual(['word', 'word', 'word', 'word', 'word']);
  });

  it("decodes E'…' escapes as DuckDB does", () => {
    expect(lex("E'a\\nb' e'x'")).toEqual([
      ['string', "E'a\\nb'", 'a\nb', 0],
      ['string', "e'x'", 'x', 8],
    ]);
    expect(stringValue("E'\\b\\f\\n\\r\\t'")).toBe('\b\f\n\r\t');
    expect(stringValue("E'\\x41\\x4a\\xfF\\x414\\xg\\x'")).toBe('AJ\u00ffA4xgx');
    // Up to three octal digits, kept to a byte (DuckDB itself refuses the bytes over 0x7f with
    // a parse error; the lexer only has to decode what could spell a URL the same way).
    expect(stringValue("E'\\101\\7\\1234\\777\\8\\9'")).toBe('A\u0007S4\u00ff89');
    expect(stringValue("E'\\\\ \\' \\q ''x'")).toBe("\\ ' q 'x");
    expect(stringValue("E'it''s'")).toBe("it's");
  });

  it('reads $$…$$ and $tag$…$tag$ (case-sensitive tags) as strings', () => {
    expect(lex('$$a$b$$ $t1$x$T1$y$t1$ $_$z$_$')).toEqual([
      ['string', '$$a$b$$', 'a$b', 0],
      ['string', '$t1$x$T1$y$t1$', 'x$T1$y', 8],
      ['string', '$_$z$_$', 'z', 23],
    ]);
    expect(lex("$$ 'x' -- $$").map(([kind, , value]) => [kind, value])).toEqual([['string', " 'x' -- "]]);
  });

  it('takes non-ASCII text inside quotes and comments', () => {
    expect(lex("'ä😀' \"ü\" $$é$$ -- ñ\n/* 中 */ E'ö'").map(([, , value]) => value)).toEqual(['ä😀', 'ü', 'é', 'ö']);
  });
});

describe('sql lexer: edges found by mutation testing', () => {
  it('reads an operator before a digit, and a lone $ at the end', () => {
    expect(lex('2*3')).toEqual([
      ['number', '2', '2', 0],
      ['op', '*', '*', 1],
      ['number', '3', '3', 2],
    ]);
    expect(lex('(*)').map(([kind, text]) => [kind, text])).toEqual([
      ['punct', '('],
      ['op', '*'],
      ['punct', ')'],
    ]);
    expect(lex('a $')).toEqual([
      ['word', 'a', 'a', 0],
      ['op', '$', '$', 2],
    ]);
  });

  it('keeps _ separators in the fraction', () => {
    expect(lex('1.5_5 .2_0').map(([, text]) => text)).toEqual(['1.5_5', '.2_0']);
  });

  it('nests block comments only on /* and closes them only on */', () => {
    expect(lex('a /* x / y * z */ b').map(([, text]) => text)).toEqual(['a', 'b']);
    expect(lex('a /* x /y/ */ b').map(([, text]) => text)).toEqual(['a', 'b']);
    expect(lex('a /* x* */ b').map(([, text]) => text)).toEqual(['a', 'b']);
  });

  it('takes backslash literally in N-strings and quoted identifiers', () => {
    expect(lex("N'a\\' x").map(([kind, , value]) => [kind, value])).toEqual([
      ['string', 'a\\'],
      ['word', 'x'],
    ]);
    expect(lex('"a\\" x').map(([kind, , value]) => [kind, value])).toEqual([
      ['quoted_ident', 'a\\'],
      ['word', 'x'],
    ]);
  });

  it('ends an octal escape at the first non-octal character', () => {
    expect(stringValue("E'\\1 x\\12!'")).toBe('\u0001 x\n!');
  });

  it('refuses U& only as a prefix of a quote, and a quote after U as glued', () => {
    expect(lex("a&'x'").map(([kind, text]) => [kind, text])).toEqual([
      ['word', 'a'],
      ['op', '&'],
      ['string', "'x'"],
    ]);
    expect(lexError("Ux'y'")).toMatchObject({ message: 'a string literal must not be glued to a word or number', position: 2 });
    expect(lex('U "x"').map(([kind, , value]) => [kind, value])).toEqual([
      ['word', 'u'],
      ['quoted_ident', 'x'],
    ]);
  });

  it('pairs a high surrogate only with a low one', () => {
    expect(lexError("'\udc00\udc00'")).toMatchObject({ message: 'malformed Unicode text', position: 1 });
    expect(lexError("'\ud800\ue000'")).toMatchObject({ message: 'malformed Unicode text', position: 1 });
  });
});

describe('sql lexer: refusals, with message and position', () => {
  it('refuses control characters other than tab, LF, CR and FF, and DEL', () => {
    for (let code = 0; code < 0x20; code++) {
      if (code === 0x09 || code === 0x0a || code === 0x0d || code === 0x0c) continue;
      const hex = code.toString(16).padStart(4, '0').toUpperCase();
      expect(lexError(`a ${String.fromCharCode(code)}`)).toEqual({ name: 'SqlLexError', message: `control character U+${hex} is not allowed`, position: 2 });
    }
    expect(lexError("'\u007f'")).toMatchObject({ message: 'control character U+007F is not allowed', position: 1 });
    // Inside quotes and comments too: DuckDB's C scanner ends at NUL.
    expect(lexError("'a\u0000' /* \u0001 */")).toMatchObject({ message: 'control character U+0000 is not allowed', position: 2 });
    expect(lex('~ ').map(([, text]) => text)).toEqual(['~']);
  });

  it('refuses malformed UTF-16 and takes well-formed surrogate pairs', () => {
    expect(lexError("'\ud800'")).toEqual({ name: 'SqlLexError', message: 'malformed Unicode text', position: 1 });
    expect(lexError("'\udbff")).toMatchObject({ message: 'malformed Unicode text', position: 1 });
    expect(lexError("'\udc00\ud800'")).toMatchObject({ message: 'malformed Unicode text', position: 1 });
    expect(lexError("'\udfff'")).toMatchObject({ message: 'malformed Unicode text', position: 1 });
    expect(lexError("'a\ud800a'")).toMatchObject({ message: 'malformed Unicode text', position: 2 });
    expect(lexError("'\ud83d\ud83d'")).toMatchObject({ message: 'malformed Unicode text', position: 1 });
    // The smallest and largest pairs, and one after another.
    expect(stringValue("'\ud800\udc00\udbff\udfff\ud83d\ude00'")).toBe('\ud800\udc00\udbff\udfff\ud83d\ude00');
    // A pair then a lone low surrogate: the pair is skipped whole, the low one is caught.
    expect(lexError("'\ud83d\ude00\ude00'")).toMatchObject({ message: 'malformed Unicode text', position: 3 });
    // Just outside the surrogate block.
    expect(stringValue("'\ud7ff\ue000'")).toBe('\ud7ff\ue000');
  });

  it('refuses non-ASCII characters outside quotes and comments, where they stand', () => {
    const msg = 'non-ASCII characters are only accepted inside quotes or comments';
    expect(lexError('a \u00a0b')).toEqual({ name: 'SqlLexError', message: msg, position: 2 });
    expect(lexError('ab\u00e4')).toEqual({ name: 'SqlLexError', message: msg, position: 2 });
    expect(lexError('$\u00e4')).toMatchObject({ message: msg, position: 1 });
    expect(lexError('$ab\u00e4')).toMatchObject({ message: msg, position: 3 });
    expect(lexError('\u0080')).toMatchObject({ message: msg, position: 0 });
    // The last ASCII character is not refused.
    expect(lex('a\u007e').map(([, text]) => text)).toEqual(['a', '~']);
  });

  it('refuses U& literals in either case, and nothing else that starts with U&', () => {
    expect(lexError("a U&'x'")).toEqual({ name: 'SqlLexError', message: 'U& Unicode-escape literals are not accepted', position: 2 });
    expect(lexError('u&"x"')).toMatchObject({ message: 'U& Unicode-escape literals are not accepted', position: 0 });
    expect(lex('U&x').map(([kind, text]) => [kind, text])).toEqual([
      ['word', 'U'],
      ['op', '&'],
      ['word', 'x'],
    ]);
    expect(lex("U& 'x'").map(([kind]) => kind)).toEqual(['word', 'op', 'string']);
  });

  it('refuses Unicode and NUL escapes in E-strings, at the string', () => {
    expect(lexError("a E'\\u0041'")).toEqual({ name: 'SqlLexError', message: 'Unicode escapes in strings are not accepted', position: 2 });
    expect(lexError("E'\\U00000041'")).toMatchObject({ message: 'Unicode escapes in strings are not accepted', position: 0 });
    expect(lexError("a E'\\0'")).toEqual({ name: 'SqlLexError', message: 'NUL escapes in strings are not accepted', position: 2 });
    expect(lexError("E'\\000'")).toMatchObject({ message: 'NUL escapes in strings are not accepted' });
  });

  it('refuses unterminated strings, identifiers and dollar quotes, at their start', () => {
    expect(lexError("a 'x")).toEqual({ name: 'SqlLexError', message: 'unterminated quoted string', position: 3 });
    expect(lexError("a 'x''")).toMatchObject({ message: 'unterminated quoted string', position: 3 });
    expect(lexError("E'x\\'")).toMatchObject({ message: 'unterminated quoted string', position: 2 });
    expect(lexError("N'x")).toMatchObject({ message: 'unterminated quoted string', position: 2 });
    expect(lexError("B'1")).toMatchObject({ message: 'unterminated bit string', position: 2 });
    expect(lexError("X'f")).toMatchObject({ message: 'unterminated hex string', position: 2 });
    expect(lexError('a "x')).toEqual({ name: 'SqlLexError', message: 'unterminated quoted identifier', position: 3 });
    expect(lexError('"x""')).toMatchObject({ message: 'unterminated quoted identifier' });
    expect(lexError('a $t$ x $T$')).toEqual({ name: 'SqlLexError', message: 'unterminated dollar-quoted string', position: 2 });
    expect(lexError('$$')).toMatchObject({ message: 'unterminated dollar-quoted string', position: 0 });
  });

  it('refuses a quote glued to a word or number', () => {
    expect(lexError("ab'x'")).toEqual({ name: 'SqlLexError', message: 'a string literal must not be glued to a word or number', position: 2 });
    expect(lexError("1E'x'")).toMatchObject({ message: 'a string literal must not be glued to a word or number', position: 1 });
    expect(lexError("a$'x'")).toMatchObject({ message: 'a string literal must not be glued to a word or number', position: 2 });
    expect(lexError('a_"x"')).toEqual({ name: 'SqlLexError', message: 'a quoted identifier must not be glued to a word or number', position: 2 });
    expect(lexError('9"x"')).toMatchObject({ message: 'a quoted identifier must not be glued to a word or number', position: 1 });
    expect(lexError('1$a$x$a$')).toEqual({ name: 'SqlLexError', message: 'a dollar-quoted string must not be glued to a word or number', position: 1 });
    // Not glued: after punctuation, an operator or a space, and at the very start.
    expect(lex("('x')").map(([kind]) => kind)).toEqual(['punct', 'string', 'punct']);
    expect(lex("+'x'").map(([kind]) => kind)).toEqual(['op', 'string']);
    expect(lex("'x'").map(([kind]) => kind)).toEqual(['string']);
    expect(lex('"x"').map(([kind]) => kind)).toEqual(['quoted_ident']);
    expect(lex("E'x'").map(([kind]) => kind)).toEqual(['string']);
    expect(lex("(E'x')").map(([kind]) => kind)).toEqual(['punct', 'string', 'punct']);
    expect(lex('$a$x$a$').map(([kind]) => kind)).toEqual(['string']);
    expect(lex('($a$x$a$)').map(([kind]) => kind)).toEqual(['punct', 'string', 'punct']);
  });

  it('is an Error carrying the position', () => {
    const err = (() => {
      try {
        tokenizeSql("'");
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    expect(err).toBeInstanceOf(Error);
    expect(err).toBeInstanceOf(SqlLexError);
    expect((err as SqlLexError).name).toBe('SqlLexError');
  });
});
