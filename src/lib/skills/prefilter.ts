/**
 * The literal prefilter of the scanner: one pass over a text with an
 * Aho-Corasick automaton over every rule's trigger literals, which yields,
 * per rule, the windows where a match can start. A rule's regex then runs
 * only in those windows, with the semantics of a scan of the whole text
 * (the regex sees the text around each window, far enough for every
 * character it can inspect), so the findings are those of the whole scan.
 *
 * Soundness rests on two properties, both checked by tests:
 * - every match of a rule contains one of its triggers (case-insensitively);
 * - {@link regexExtent}: how many characters a match can consume, and how far
 *   before and after its start the regex can look, computed from the pattern.
 *
 * Pure, linear: the automaton is a DFA (one table lookup per character).
 */

/** What one regex can touch relative to the start of a match attempt. */
export interface RegexExtent {
  /** Most characters a match consumes (Infinity for unbounded repetition). */
  len: number;
  /** Least characters a match consumes. */
  min: number;
  /** Furthest character inspected, exclusive, counted from the attempt's start (lookahead, `\b`, `$`). */
  reach: number;
  /** Characters inspected before the attempt's start (lookbehind, `\b`, `^`). */
  back: number;
}

const BRACES = /\{(\d+)(,(\d*))?\}/y;
const DIGITS = /\d+/y;

/**
 * A set of UTF-16 code units: one entry per ASCII code unit, and entry 128 for all the others
 * at once (a non-`u` case-insensitive regex never matches an ASCII letter with a non-ASCII one).
 */
type CharSet = Uint8Array;
const ANY_CHAR: CharSet = new Uint8Array(129).fill(1);
const NO_CHAR: CharSet = new Uint8Array(129);

function charSetOf(codes: Iterable<number>, other = false): CharSet {
  const set = new Uint8Array(129);
  for (const c of codes) set[c < 128 ? c : 128] = 1;
  if (other) set[128] = 1;
  return set;
}
function range(lo: number, hi: number): number[] {
  return Array.from({ length: Math.max(0, hi - lo + 1) }, (_, k) => lo + k);
}
const DIGIT_CHARS = range(48, 57);
const WORD_CHARS = [...range(65, 90), ...range(97, 122), ...DIGIT_CHARS, 95];
/** `\s`: the ASCII blanks, and non-ASCII ones (U+00A0, U+FEFF, U+2028, ...). */
const SPACE_CHARS = [9, 10, 11, 12, 13, 32];

function union(a: CharSet, b: CharSet): CharSet {
  if (a === NO_CHAR || b === ANY_CHAR || a === b) return b;
  if (b === NO_CHAR || a === ANY_CHAR) return a;
  const out = new Uint8Array(129);
  for (let k = 0; k < 129; k++) out[k] = a[k]! | b[k]!;
  return out;
}

function hasWordChar(set: CharSet): boolean {
  return WORD_CHARS.some((c) => set[c] === 1);
}

/** The set of `\d \w \s \D \W \S` (negations: every code unit they do not exclude, non-ASCII included). */
function classEscape(c: string): CharSet | undefined {
  const base = c === 'd' || c === 'D' ? DIGIT_CHARS : c === 'w' || c === 'W' ? WORD_CHARS : c === 's' || c === 'S' ? SPACE_CHARS : undefined;
  if (!base) return undefined;
  if (c === c.toLowerCase()) return charSetOf(base, c === 's');
  const set = new Uint8Array(129).fill(1);
  for (const k of base) set[k] = 0;
  return set;
}

/** One character of a regex source at `i` (escapes decoded), and where the next one starts; undefined code for a class escape. */
function charAt(src: string, i: number): { code: number | undefined; set: CharSet | undefined; next: number } {
  if (src[i] !== '\\') return { code: src.charCodeAt(i), set: undefined, next: i + 1 };
  const c = src[i + 1];
  if (c === undefined) throw new Error(`regex: trailing backslash in /${src}/`);
  const set = classEscape(c);
  if (set) return { code: undefined, set, next: i + 2 };
  const simple: Record<string, number> = { t: 9, n: 10, v: 11, f: 12, r: 13, '0': 0 };
  if (c in simple) return { code: simple[c], set: undefined, next: i + 2 };
  if (c === 'x' && /^[0-9a-fA-F]{2}$/.test(src.slice(i + 2, i + 4))) return { code: parseInt(src.slice(i + 2, i + 4), 16), set: undefined, next: i + 4 };
  if (c === 'u' && /^[0-9a-fA-F]{4}$/.test(src.slice(i + 2, i + 6))) return { code: parseInt(src.slice(i + 2, i + 6), 16), set: undefined, next: i + 6 };
  // Control escapes and anything else this scanner's rules do not use: any character (a superset).
  if (/[a-zA-Z1-9]/.test(c)) return { code: undefined, set: ANY_CHAR, next: c === 'c' ? i + 3 : i + 2 };
  return { code: c.charCodeAt(0), set: undefined, next: i + 2 }; // an identity escape: `\.`, `\/`, `\-`, ...
}

/** Both cases of the ASCII letters in `set` (an `i` regex without `u`). */
function foldCase(set: CharSet): CharSet {
  const out = set.slice();
  for (let c = 65; c <= 90; c++) if (set[c] || set[c + 32]) out[c] = out[c + 32] = 1;
  return out;
}

/** What the analysis knows of one part of a regex: its extent, and what the scanner's probes need. */
interface Part extends RegexExtent {
  /** Every code unit the first character a match consumes can be (a superset). */
  first: CharSet;
  /** Whether a match can consume nothing. */
  nullable: boolean;
  /**
   * Every match holds a trigger occurrence, one the automaton reports, starting at most this many
   * characters after the part's start; undefined when the analysis cannot show one.
   */
  lead: number | undefined;
  /** For one unquantified character (a literal, class or escape): the lower-case ASCII character it matches, whatever the case, if only that one. */
  lit?: string;
  /**
   * After every match, the character before the position reached is not an ASCII word character,
   * or there is none (a consumed non-word character, or `^`).
   */
  endsNonWord: boolean;
  /** A `\b` assertion. */
  boundary?: boolean;
  /** A `^` assertion. */
  caret?: boolean;
  /** Every non-empty match starts where no ASCII word character precedes (or none does). */
  afterNonWord?: boolean;
}

/** The triggers a lead is shown with, as `PrefilterRule` gives them. */
interface TriggerSet {
  triggers: readonly string[];
  all: ReadonlySet<string>;
  wordStart: ReadonlySet<string>;
}

/** What precedes a part: unknown, a `\b`, or a consumed non-word character. */
type Before = 'unknown' | 'boundary' | 'non-word';

const EMPTY_PART = { len: 0, min: 0, first: NO_CHAR, nullable: true, lead: undefined, endsNonWord: false } as const;

function sequence(items: readonly Part[], triggers: TriggerSet | undefined, before: Before): Part {
  let len = 0;
  let min = 0;
  let reach = 0;
  let back = 0;
  let first: CharSet = NO_CHAR;
  let nullable = true;
  let lead: number | undefined;
  for (const [k, item] of items.entries()) {
    if (lead === undefined && len !== Infinity) {
      if (triggerAt(items, k, triggers, contextAt(items, k, before))) lead = len;
      else if (item.lead !== undefined) lead = len + item.lead;
    }
    if (nullable) {
      first = union(first, item.first);
      nullable = item.nullable;
    }
    reach = Math.max(reach, len + item.reach);
    back = Math.max(back, item.back - min);
    len += item.len;
    min += item.min;
  }
  return { len, min, reach: Math.max(reach, len), back, first, nullable, lead, endsNonWord: contextAt(items, items.length, 'unknown') === 'non-word', afterNonWord: startsAfterNonWord(items, first, nullable) };
}

/**
 * Whether every non-empty match of a sequence starts after a non-word character or at the text's
 * start: a leading `^`, a leading `\b` before a word character, or a first consuming part that does.
 */
function startsAfterNonWord(items: readonly Part[], first: CharSet, nullable: boolean): boolean {
  let boundary = false;
  for (const item of items) {
    if (item.caret) return true;
    if (item.boundary) boundary = true;
    else if (item.len !== 0) return (boundary && !nullable && onlyWordChars(first)) || (!item.nullable && item.afterNonWord === true);
  }
  return false;
}

function onlyWordChars(set: CharSet): boolean {
  if (set[128] === 1) return false;
  for (let c = 0; c < 128; c++) if (set[c] === 1 && !WORD_CHARS.includes(c)) return false;
  return true;
}

/** What precedes items[k] of a sequence that `before` precedes (zero-width items change nothing). */
function contextAt(items: readonly Part[], k: number, before: Before): Before {
  for (let j = k - 1; j >= 0; j--) {
    const item = items[j]!;
    if (item.boundary) return 'boundary';
    if (item.endsNonWord) return 'non-word';
    if (item.len !== 0) return 'unknown';
  }
  return before;
}

/** The first set of items[k...], or undefined when they can match nothing. */
function firstFrom(items: readonly Part[], k: number): CharSet | undefined {
  let first: CharSet = NO_CHAR;
  for (let j = k; j < items.length; j++) {
    first = union(first, items[j]!.first);
    if (!items[j]!.nullable) return first;
  }
  return undefined;
}

/**
 * Whether items[k...] begin with one of the triggers: one single-character part per trigger
 * character, each matching only that character (in either case); or such parts for all but the
 * last character, and the last any character the rest of the sequence can start with, when each
 * of those ends a trigger (EXEC_BACKTICK's "`b", "`c", ... after a backtick). A word-start trigger
 * counts after something that makes the occurrence a word start.
 */
function triggerAt(items: readonly Part[], k: number, triggers: TriggerSet | undefined, context: Before): boolean {
  if (!triggers) return false;
  const usable = (t: string): boolean => !triggers.wordStart.has(t) || context === 'non-word' || (context === 'boundary' && WORD_CHARS.includes(t.charCodeAt(0)));
  return triggers.triggers.some((t) => {
    const last = t.length - 1;
    for (let j = 0; j < last; j++) if (items[k + j]?.lit !== t[j]) return false;
    if (items[k + last]?.lit === t[last]) return usable(t);
    // The family of triggers t minus its last character + c, for every c the rest can start with.
    if (items[k + last]?.lit !== undefined) return false;
    const rest = firstFrom(items, k + last);
    if (!rest || rest[128] === 1) return false;
    const prefix = t.slice(0, last);
    for (let c = 0; c < 128; c++) {
      if (rest[c] === 0) continue;
      const member = prefix + String.fromCharCode(c).toLowerCase();
      if (!triggers.all.has(member) || !usable(member)) return false;
    }
    return true;
  });
}

/** The union of the parts' first sets, in one new array (an alternation of a hundred host names makes one, not a hundred). */
function firstOfAll(items: readonly Part[]): CharSet {
  const out = new Uint8Array(129);
  for (const item of items) for (let k = 0; k < 129; k++) out[k]! |= item.first[k]!;
  return out;
}

function alternation(items: readonly Part[]): Part {
  if (items.length === 1) return items[0]!;
  return {
    len: Math.max(...items.map((i) => i.len)),
    min: Math.min(...items.map((i) => i.min)),
    reach: Math.max(...items.map((i) => i.reach)),
    back: Math.max(...items.map((i) => i.back)),
    first: firstOfAll(items),
    nullable: items.some((i) => i.nullable),
    lead: items.every((i) => i.lead !== undefined) ? Math.max(...items.map((i) => i.lead!)) : undefined,
    endsNonWord: items.every((i) => i.endsNonWord),
    afterNonWord: items.every((i) => i.afterNonWord === true),
  };
}

function repeat(atom: Part, lo: number, hi: number): Part {
  if (hi === 0) return { ...EMPTY_PART, reach: 0, back: 0 };
  const len = atom.len === 0 ? 0 : hi === Infinity ? Infinity : atom.len * hi;
  const before = hi === Infinity ? (atom.len === 0 ? 0 : Infinity) : atom.len * (hi - 1);
  return {
    len,
    min: atom.min * lo,
    reach: Math.max(len, before + atom.reach),
    back: atom.back,
    first: atom.first,
    nullable: lo === 0 || atom.nullable,
    // The first repetition's trigger, when there is one.
    lead: lo >= 1 ? atom.lead : undefined,
    endsNonWord: lo >= 1 && atom.endsNonWord,
    afterNonWord: atom.afterNonWord,
  };
}

/**
 * The extent of a JavaScript regex (no `u`/`v` flag: one character is one
 * UTF-16 code unit), from its source. Over-approximates: an unknown
 * construct throws rather than guess.
 */
export function regexExtent(re: RegExp): RegexExtent {
  const { len, min, reach, back } = analyze(re, undefined);
  return { len, min, reach, back };
}

/** What the scanner's probes of a rule need, beyond its extent (see {@link regexStarts}). */
export interface RegexStarts extends RegexExtent {
  /**
   * Every match has one of the given triggers (an occurrence the automaton reports: a word-start
   * one at a word start) starting at most `lead` characters after the match's own start; undefined
   * when the analysis cannot show it.
   */
  lead: number | undefined;
  /**
   * The ASCII characters a non-empty match can start with, and U+0080 when it can start with a
   * non-ASCII one; undefined when a match can be empty (no first character to test).
   */
  first: string | undefined;
  /** Every non-empty match starts where no ASCII word character precedes it (or at the text's start). */
  afterNonWord: boolean;
}

/**
 * The extent of a regex ({@link regexExtent}, the same parser), how near its start every match
 * holds a trigger, and what it can start with. Sound, not exact: a trigger is recognised only as
 * one unquantified character per trigger character, in sequence (or a family, see triggerAt).
 */
export function regexStarts(re: RegExp, triggers: readonly string[], wordStart: readonly string[] = []): RegexStarts {
  const part = analyze(re, { triggers, all: new Set(triggers), wordStart: new Set(wordStart) });
  let first: string | undefined;
  if (!part.nullable) {
    first = '';
    for (let c = 0; c < 129; c++) if (part.first[c] === 1) first += String.fromCharCode(c);
  }
  return { len: part.len, min: part.min, reach: part.reach, back: part.back, lead: part.lead, first, afterNonWord: part.afterNonWord === true };
}

/** A {@link RegexStarts} `first` as the table a probe reads: entry c for ASCII c, entry 128 for the rest. */
export function firstTable(first: string): Uint8Array {
  return charSetOf([...first].map((ch) => ch.charCodeAt(0)));
}

/** The part of one literal character, by code unit and case-insensitivity: most of a pattern, made once. */
const LITERALS = new Map<number, Part>();
/** The part of a class or a character escape, by its source text and case-insensitivity. */
const CHAR_PARTS = new Map<string, Part>();

function literalPart(code: number, ignoreCase: boolean): Part {
  const key = ignoreCase ? -1 - code : code;
  let part = LITERALS.get(key);
  if (!part) {
    const set = charSetOf([code]);
    part = charPart(ignoreCase ? foldCase(set) : set);
    LITERALS.set(key, part);
  }
  return part;
}

/** One character of the code units `set` (case already folded). */
function charPart(set: CharSet): Part {
  let lit: string | undefined;
  if (set[128] === 0) {
    for (let c = 0; c < 128 && lit !== ''; c++) if (set[c] === 1) lit = lit === undefined || lit === String.fromCharCode(c).toLowerCase() ? String.fromCharCode(c).toLowerCase() : '';
  }
  return { len: 1, min: 1, reach: 1, back: 0, first: set, nullable: false, lead: undefined, lit: lit || undefined, endsNonWord: !hasWordChar(set) };
}

function analyze(re: RegExp, triggers: TriggerSet | undefined): Part {
  if (re.unicode || re.flags.includes('v')) throw new Error(`regexExtent: /${re.source}/${re.flags} has the u or v flag`);
  const src = re.source;
  const fold = re.ignoreCase ? foldCase : (set: CharSet): CharSet => set;
  let i = 0;
  const groups: Part[] = []; // by capture number - 1
  let groupCount = 0;

  const fail = (what: string): never => {
    throw new Error(`regexExtent: ${what} at ${i} in /${src}/`);
  };
  const char = (set: CharSet): Part => charPart(fold(set));
  const assertion = (reach: number, back: number, boundary = false): Part => ({ ...EMPTY_PART, reach, back, boundary });

  function parseDisjunction(before: Before): Part {
    const alts = [parseAlternative(before)];
    while (src[i] === '|') {
      i += 1;
      alts.push(parseAlternative(before));
    }
    return alternation(alts);
  }

  function parseAlternative(before: Before): Part {
    const items: Part[] = [];
    while (i < src.length && src[i] !== '|' && src[i] !== ')') {
      const atom = parseAtom(contextAt(items, items.length, before));
      items.push(parseQuantifier(atom));
    }
    return sequence(items, triggers, before);
  }

  function parseQuantifier(atom: Part): Part {
    const c = src[i];
    let out: Part;
    if (c === '*') {
      i += 1;
      out = repeat(atom, 0, Infinity);
    } else if (c === '+') {
      i += 1;
      out = repeat(atom, 1, Infinity);
    } else if (c === '?') {
      i += 1;
      out = repeat(atom, 0, 1);
    } else if (c === '{') {
      BRACES.lastIndex = i;
      const m = BRACES.exec(src);
      if (!m) return atom; // a literal `{` (Annex B)
      i += m[0].length;
      const lo = Number(m[1]);
      const hi = m[2] === undefined ? lo : m[3] === '' ? Infinity : Number(m[3]);
      out = repeat(atom, lo, hi);
    } else return atom;
    if (src[i] === '?') i += 1; // lazy
    return out;
  }

  /** A class or escape's part, made once per source text and case-insensitivity (`\s{1,4}` is in most patterns, many times). */
  function cached(parse: () => Part): Part {
    const start = i;
    const part = parse();
    const key = `${re.ignoreCase ? 'i' : ''}${src.slice(start, i)}`;
    const known = CHAR_PARTS.get(key);
    if (known) return known;
    CHAR_PARTS.set(key, part);
    return part;
  }

  function parseClass(): Part {
    i += 1; // [
    const negated = src[i] === '^';
    if (negated) i += 1;
    let set: CharSet = new Uint8Array(129);
    while (i < src.length && src[i] !== ']') {
      const lo = charAt(src, i);
      i = lo.next;
      if (lo.code === undefined) {
        set = union(set, lo.set!);
        continue;
      }
      let hi = lo.code;
      if (src[i] === '-' && src[i + 1] !== ']' && i + 1 < src.length) {
        const end = charAt(src, i + 1);
        if (end.code !== undefined) {
          i = end.next;
          hi = end.code;
        }
      }
      set = union(set, charSetOf(range(lo.code, Math.min(hi, 127)), hi >= 128));
    }
    if (src[i] !== ']') fail('unterminated class');
    i += 1;
    if (negated) set = set.map((x, k) => (k === 128 ? 1 : 1 - x));
    return char(set);
  }

  function parseEscape(): Part {
    const c = src[i + 1];
    if (c === undefined) return fail('trailing backslash');
    if (c === 'b' || c === 'B') {
      i += 2;
      return assertion(1, 1, c === 'b');
    }
    if (/[1-9]/.test(c)) {
      i += 1;
      DIGITS.lastIndex = i;
      const m = DIGITS.exec(src)!;
      i += m[0].length;
      const group = groups[Number(m[0]) - 1] ?? fail('forward or unknown back-reference');
      // The text the group matched, in either case: any characters, possibly none.
      return { ...group, first: ANY_CHAR, nullable: true, lead: undefined, lit: undefined, endsNonWord: false, boundary: false, afterNonWord: false };
    }
    if (c === 'k' && src[i + 2] === '<') return fail('named back-reference');
    const one = charAt(src, i);
    if (!one.set) {
      i = one.next;
      return literalPart(one.code!, re.ignoreCase);
    }
    const key = `${re.ignoreCase ? 'i' : ''}${src.slice(i, one.next)}`;
    i = one.next;
    let part = CHAR_PARTS.get(key);
    if (!part) {
      part = char(one.set);
      CHAR_PARTS.set(key, part);
    }
    return part;
  }

  function parseAtom(before: Before): Part {
    const c = src[i]!;
    switch (c) {
      case '(': {
        i += 1;
        let kind: 'capture' | 'group' | 'ahead' | 'behind' = 'capture';
        if (src[i] === '?') {
          const next = src.slice(i, i + 3);
          if (next.startsWith('?:')) {
            kind = 'group';
            i += 2;
          } else if (next.startsWith('?=') || next.startsWith('?!')) {
            kind = 'ahead';
            i += 2;
          } else if (next === '?<=' || next === '?<!') {
            kind = 'behind';
            i += 3;
          } else if (next.startsWith('?<')) {
            const end = src.indexOf('>', i);
            if (end < 0) fail('bad group name');
            i = end + 1;
          } else fail('unknown group');
        }
        const index = kind === 'capture' ? groupCount++ : -1;
        const inner = parseDisjunction(kind === 'ahead' || kind === 'behind' ? 'unknown' : before);
        if (src[i] !== ')') fail('unterminated group');
        i += 1;
        if (index >= 0) groups[index] = inner;
        if (kind === 'ahead') return assertion(inner.reach, inner.back);
        // A lookbehind matches backwards from here: it inspects its own length (and its own lookarounds) before.
        if (kind === 'behind') return assertion(inner.reach, (inner.len === Infinity ? Infinity : inner.len) + inner.back);
        return inner;
      }
      case '[':
        return cached(parseClass);
      case '\\':
        return parseEscape();
      case '^':
        i += 1;
        // What precedes it is a line break, or nothing.
        return { ...assertion(0, 1), endsNonWord: true, caret: true };
      case '$':
        i += 1;
        return assertion(1, 0);
      case '*':
      case '+':
      case '?':
        return fail('nothing to repeat');
      case '.':
        i += 1;
        return char(ANY_CHAR);
      default:
        i += 1;
        return literalPart(c.charCodeAt(0), re.ignoreCase);
    }
  }

  const out = parseDisjunction('unknown');
  if (i !== src.length) fail('unbalanced )');
  return out;
}

/** A rule for the prefilter: its lower-case trigger literals. */
export interface PrefilterRule {
  triggers: readonly string[];
  /** Those of `triggers` that count only at a word start: where no ASCII word character ([A-Za-z0-9_]) precedes them. */
  wordStart?: readonly string[];
}

/**
 * Runs the trigger pass records on the side (the base64 detector's candidates): where a run of at
 * least `min` of the ASCII characters `chars` starts. The pass reads every character anyway, and
 * counting a run beside the automaton's step costs a fraction of a search of its own.
 */
export interface RunClass {
  chars: string;
  min: number;
}

/** True for the code units of ASCII word characters ([A-Za-z0-9_], what `\b` and `\w` see without the `u` flag). */
export function isWordCode(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 95;
}

/** A DFA entry (TriggerAutomaton.dfa): the next row in the low bits, and two flags. */
const DFA_ROW = (1 << 29) - 1;
const DFA_KNOWN = 1 << 29;
const DFA_OUTPUTS = 1 << 30;

/**
 * Aho-Corasick over lower-case ASCII literals, as a DFA over the 128 ASCII
 * characters (letters folded); any other character is a mismatch, since no
 * non-`u` case-insensitive JavaScript regex matches an ASCII letter with a
 * non-ASCII character. The DFA's transitions are filled in as a scan first
 * takes them (from the trie and its failure links), so building it costs the
 * trie alone: a short command scanning one file visits a few hundred of them.
 */
export class TriggerAutomaton {
  /**
   * Character class of each UTF-16 code unit (upper-case letters share their lower case's); 0 for
   * characters no trigger has, every non-ASCII one among them. A table over all 65,536 code units
   * (64 KiB, once) rather than the 128 ASCII ones: the scan reads it for every character of a
   * text, and without a range test first it runs about 8% faster. Bit 7 (128) marks the characters
   * of the run class (classes are fewer than 128: one per distinct ASCII trigger character).
   */
  private readonly classes: Uint8Array;
  /** The run class's `min`; -1 without a run class (a run length is never -1). */
  private readonly runMin: number;
  private readonly width: number;
  /** The trie: goto[state * width + class] is the child + 1, 0 where it has no edge. */
  private readonly goto: Int32Array;
  /**
   * The DFA, filled on first use: next[state * width + class] is the next state + 1, 0 until
   * known (both tables start as the zeroed memory of a fresh array: no pass to fill them).
   */
  private readonly next: Int32Array;
  /**
   * The same DFA as the scan reads it, filled from `next` on first use: dfa[row + class], where a row is
   * state * width, is 0 until known, else DFA_KNOWN | the next state's row, | DFA_OUTPUTS when that
   * state has outputs. One load per character, no multiplication, no look-up of outputs where there
   * are none, and one AND from an entry to the next row: the scan runs over every character of a
   * text, each step waiting on the one before, and this halves its cost.
   */
  private readonly dfa: Int32Array;
  /**
   * Failure link of each state (the longest proper suffix that is a trie state) + 1, 0 until
   * known: computed on first need from the state's trie parent, as the DFA's transitions are.
   */
  private readonly fail: Int32Array;
  /** Trie parent of each state and the class of the edge from it (for the failure links). */
  private readonly parent: Int32Array;
  private readonly edge: Uint8Array;
  /** Rules (key rule * 2, +1 for a word-start trigger) -> length of the longest such trigger ending exactly at a state. */
  private readonly ownOuts: (Map<number, number> | undefined)[];
  /**
   * For each state, the rules (indices) with a trigger ending here, and that trigger's length,
   * negated for a word-start trigger (per rule the longest of each kind); its own and those of
   * its failure chain, filled on first need (undefined until then).
   */
  private readonly outRules: (Int32Array | undefined)[];
  private readonly outLengths: (Int32Array | undefined)[];

  constructor(rules: readonly PrefilterRule[], runClass?: RunClass) {
    const classes = new Uint8Array(0x10000);
    let width = 1;
    let total = 1;
    for (const rule of rules) {
      for (const trigger of rule.triggers) {
        if (trigger.length === 0 || /[^\x00-\x7f]/.test(trigger) || trigger !== trigger.toLowerCase()) throw new Error(`trigger ${JSON.stringify(trigger)}: lower-case ASCII, non-empty`);
        total += trigger.length;
        for (let k = 0; k < trigger.length; k++) {
          const c = trigger.charCodeAt(k);
          if (classes[c] === 0) classes[c] = width++;
        }
      }
    }
    for (let c = 65; c <= 90; c++) classes[c] = classes[c + 32]!;
    if (width > 128) throw new Error('more than 127 distinct trigger characters');
    const goto = new Int32Array(total * width);
    // Key rule * 2 (+1 for a word-start trigger) -> length of the rule's longest trigger of that kind ending here.
    const outs: (Map<number, number> | undefined)[] = [undefined];
    const parent = new Int32Array(total);
    const edge = new Uint8Array(total);
    let states = 1;
    rules.forEach((rule, r) => {
      for (const w of rule.wordStart ?? []) if (!rule.triggers.includes(w)) throw new Error(`word-start trigger ${JSON.stringify(w)} is not one of the rule's triggers`);
      for (const trigger of rule.triggers) {
        let s = 0;
        for (let k = 0; k < trigger.length; k++) {
          const c = classes[trigger.charCodeAt(k)]!;
          const at = s * width + c;
          if (goto[at] === 0) {
            goto[at] = ++states;
            outs.push(undefined);
            parent[states - 1] = s;
            edge[states - 1] = c;
          }
          s = goto[at]! - 1;
        }
        const out = (outs[s] ??= new Map());
        const key = r * 2 + (rule.wordStart?.includes(trigger) ? 1 : 0);
        out.set(key, Math.max(out.get(key) ?? 0, trigger.length));
      }
    });
    this.classes = classes;
    this.width = width;
    this.goto = goto;
    this.next = new Int32Array(states * width);
    if (states * width > DFA_ROW) throw new Error('too many trigger states for the DFA');
    this.dfa = new Int32Array(states * width);
    this.fail = new Int32Array(states);
    this.parent = parent;
    this.edge = edge;
    this.ownOuts = outs;
    this.outRules = new Array<Int32Array | undefined>(states);
    this.outLengths = new Array<Int32Array | undefined>(states);
    // After the trie, whose edges are the classes alone.
    this.runMin = -1;
    if (runClass) {
      if (runClass.min < 1 || /[^\x00-\x7f]/.test(runClass.chars)) throw new Error('run class: ASCII characters, a minimum of at least 1');
      for (let k = 0; k < runClass.chars.length; k++) this.classes[runClass.chars.charCodeAt(k)]! |= 128;
      this.runMin = runClass.min;
    }
  }

  /** The failure link of state `t`, computed once: the parent's failure state stepped on t's edge. */
  private failOf(t: number): number {
    const known = this.fail[t]!;
    if (known !== 0) return known - 1;
    const s = this.parent[t]!;
    const f = t === 0 || s === 0 ? 0 : this.step(this.failOf(s), this.edge[t]!);
    this.fail[t] = f + 1;
    return f;
  }

  /** State `t`'s outputs (its own and its failure chain's), computed once; true when it has any. */
  private hasOutputs(t: number): boolean {
    let rules = this.outRules[t];
    if (rules === undefined) {
      const own = this.ownOuts[t];
      const merged = new Map(own);
      if (t !== 0) {
        const f = this.failOf(t);
        this.hasOutputs(f);
        const inheritedRules = this.outRules[f]!;
        const inheritedLengths = this.outLengths[f]!;
        // The failure chain's entries, each rule key once: a state's own trigger is the longer one.
        for (let k = 0; k < inheritedRules.length; k++) {
          const len = inheritedLengths[k]!;
          const key = inheritedRules[k]! * 2 + (len < 0 ? 1 : 0);
          if (!merged.has(key)) merged.set(key, Math.abs(len));
        }
      }
      rules = Int32Array.from(merged.keys(), (key) => key >> 1);
      this.outLengths[t] = Int32Array.from(merged.entries(), ([key, len]) => (key & 1 ? -len : len));
      this.outRules[t] = rules;
    }
    return rules.length > 0;
  }

  /** The DFA transition from state `s` on class `c`, computed once (trie edge, else the failure state's). */
  private step(s: number, c: number): number {
    const at = s * this.width + c;
    const known = this.next[at]!;
    if (known !== 0) return known - 1;
    const child = this.goto[at]!;
    const t = child !== 0 ? child - 1 : c === 0 || s === 0 ? 0 : this.step(this.failOf(s), c);
    this.next[at] = t + 1;
    return t;
  }

  /** The entry of `dfa` at `row` + `c`, computed once. */
  private dfaEntry(row: number, c: number): number {
    const t = this.step(row / this.width, c);
    const entry = DFA_KNOWN | (this.hasOutputs(t) ? DFA_OUTPUTS : 0) | (t * this.width);
    this.dfa[row + c] = entry;
    return entry;
  }

  /**
   * Calls `hit(rule, start, end)` for every trigger occurrence in text[from, to)
   * (for each rule, the longest of its triggers ending at `end`, and the longest of its
   * word-start triggers if that one is at a word start). A word-start trigger at
   * text[0] counts: what precedes a slice of a view is unknown here. With `runStarts`,
   * appends (ascending) the start of every maximal run of the run class's characters in
   * text[from, to) at least its `min` long (a run that begins before `from` is counted from there).
   */
  scan(text: string, from: number, to: number, hit: (rule: number, start: number, end: number) => void, runStarts?: number[]): void {
    const { dfa, classes, width, outRules, outLengths } = this;
    const runMin = runStarts ? this.runMin : -1;
    // The scan's state between `advance` and the characters it stops at: [row, run length].
    const cursor = new Int32Array(2);
    // The characters that need nothing but a step run in `advance`; it stops at each one that
    // needs more (a state with outputs, a transition not known yet, a run reaching its minimum),
    // which is applied here, whole.
    for (let i = advance(dfa, classes, runMin, text, from, to, cursor); i < to; i = advance(dfa, classes, runMin, text, i + 1, to, cursor)) {
      const v = classes[text.charCodeAt(i)]!;
      const run = (cursor[1]! + 1) & -(v >> 7);
      cursor[1] = run;
      if (run === runMin) runStarts!.push(i + 1 - runMin);
      const k = v & 127;
      let entry = dfa[cursor[0]! + k]!;
      if (entry === 0) entry = this.dfaEntry(cursor[0]!, k);
      const row = entry & DFA_ROW;
      cursor[0] = row;
      if ((entry & DFA_OUTPUTS) === 0) continue;
      const s = row / width;
      const rules = outRules[s]!;
      const lengths = outLengths[s]!;
      for (let k2 = 0; k2 < rules.length; k2++) {
        const len = lengths[k2]!;
        if (len > 0) hit(rules[k2]!, i + 1 - len, i + 1);
        else if (i + 1 + len === 0 || !isWordCode(text.charCodeAt(i + len))) hit(rules[k2]!, i + 1 + len, i + 1);
      }
    }
  }
}

/**
 * The automaton's steps over text[i, to) from the state in `cursor` ([row, run length]), for as
 * long as a character needs nothing else: returns the index of the first one that does (its
 * transition is not known yet, the state it enters has outputs, or the run it extends reaches
 * `runMin`), with `cursor` as it was before that character, or `to`, with `cursor` at the end.
 * It calls nothing: a loop with a call in it (the filling of a transition, a hit) kept its
 * values in memory across that call, and the pass over every character of the benign corpus
 * ran ~15% faster without.
 */
function advance(dfa: Int32Array, classes: Uint8Array, runMin: number, text: string, i: number, to: number, cursor: Int32Array): number {
  let row = cursor[0]!;
  let run = cursor[1]!;
  for (; i < to; i++) {
    const v = classes[text.charCodeAt(i)]!;
    const next = (run + 1) & -(v >> 7);
    const entry = dfa[row + (v & 127)]!;
    if ((entry & (DFA_KNOWN | DFA_OUTPUTS)) !== DFA_KNOWN || next === runMin) break;
    row = entry & DFA_ROW;
    run = next;
  }
  cursor[0] = row;
  cursor[1] = run;
  return i;
}
