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
const ZERO: RegexExtent = { len: 0, min: 0, reach: 0, back: 0 };
const ONE: RegexExtent = { len: 1, min: 1, reach: 1, back: 0 };
const BOUNDARY: RegexExtent = { len: 0, min: 0, reach: 1, back: 1 };

function sequence(items: readonly RegexExtent[]): RegexExtent {
  let len = 0;
  let min = 0;
  let reach = 0;
  let back = 0;
  for (const item of items) {
    reach = Math.max(reach, len + item.reach);
    back = Math.max(back, item.back - min);
    len += item.len;
    min += item.min;
  }
  return { len, min, reach: Math.max(reach, len), back };
}

function alternation(items: readonly RegexExtent[]): RegexExtent {
  if (items.length === 1) return items[0]!;
  return {
    len: Math.max(...items.map((i) => i.len)),
    min: Math.min(...items.map((i) => i.min)),
    reach: Math.max(...items.map((i) => i.reach)),
    back: Math.max(...items.map((i) => i.back)),
  };
}

function repeat(atom: RegexExtent, lo: number, hi: number): RegexExtent {
  if (hi === 0) return ZERO;
  const len = atom.len === 0 ? 0 : hi === Infinity ? Infinity : atom.len * hi;
  const before = hi === Infinity ? (atom.len === 0 ? 0 : Infinity) : atom.len * (hi - 1);
  return { len, min: atom.min * lo, reach: Math.max(len, before + atom.reach), back: atom.back };
}

/**
 * The extent of a JavaScript regex (no `u`/`v` flag: one character is one
 * UTF-16 code unit), from its source. Over-approximates: an unknown
 * construct throws rather than guess.
 */
export function regexExtent(re: RegExp): RegexExtent {
  if (re.unicode || re.flags.includes('v')) throw new Error(`regexExtent: /${re.source}/${re.flags} has the u or v flag`);
  const src = re.source;
  let i = 0;
  const groups: RegexExtent[] = []; // by capture number - 1
  let groupCount = 0;

  const fail = (what: string): never => {
    throw new Error(`regexExtent: ${what} at ${i} in /${src}/`);
  };

  function parseDisjunction(): RegexExtent {
    const alts = [parseAlternative()];
    while (src[i] === '|') {
      i += 1;
      alts.push(parseAlternative());
    }
    return alternation(alts);
  }

  function parseAlternative(): RegexExtent {
    const items: RegexExtent[] = [];
    while (i < src.length && src[i] !== '|' && src[i] !== ')') {
      const atom = parseAtom();
      items.push(parseQuantifier(atom));
    }
    return sequence(items);
  }

  function parseQuantifier(atom: RegexExtent): RegexExtent {
    const c = src[i];
    let out: RegexExtent;
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

  function parseClass(): RegexExtent {
    i += 1; // [
    if (src[i] === '^') i += 1;
    if (src[i] === ']') i += 1; // `[]...]` is not JS, but `[^]` / `[]` are: handled below
    while (i < src.length && src[i] !== ']') i += src[i] === '\\' ? 2 : 1;
    if (src[i] !== ']') fail('unterminated class');
    i += 1;
    return ONE;
  }

  function parseEscape(): RegexExtent {
    i += 1; // backslash
    const c = src[i];
    if (c === undefined) return fail('trailing backslash');
    if (c === 'b' || c === 'B') {
      i += 1;
      return BOUNDARY;
    }
    if (/[1-9]/.test(c)) {
      DIGITS.lastIndex = i;
      const m = DIGITS.exec(src)!;
      i += m[0].length;
      return groups[Number(m[0]) - 1] ?? fail('forward or unknown back-reference');
    }
    if (c === 'k' && src[i + 1] === '<') return fail('named back-reference');
    if (c === 'x') i += 3;
    else if (c === 'u') i += 5;
    else if (c === 'c') i += 2;
    else i += 1;
    return ONE;
  }

  function parseAtom(): RegexExtent {
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
        const inner = parseDisjunction();
        if (src[i] !== ')') fail('unterminated group');
        i += 1;
        if (index >= 0) groups[index] = inner;
        if (kind === 'ahead') return { len: 0, min: 0, reach: inner.reach, back: inner.back };
        // A lookbehind matches backwards from here: it inspects its own length (and its own lookarounds) before.
        if (kind === 'behind') return { len: 0, min: 0, reach: inner.reach, back: (inner.len === Infinity ? Infinity : inner.len) + inner.back };
        return inner;
      }
      case '[':
        return parseClass();
      case '\\':
        return parseEscape();
      case '^':
        i += 1;
        return { len: 0, min: 0, reach: 0, back: 1 };
      case '$':
        i += 1;
        return { len: 0, min: 0, reach: 1, back: 0 };
      case '*':
      case '+':
      case '?':
        return fail('nothing to repeat');
      default:
        i += 1;
        return ONE;
    }
  }

  const out = parseDisjunction();
  if (i !== src.length) fail('unbalanced )');
  return out;
}

/** A rule for the prefilter: its lower-case trigger literals. */
export interface PrefilterRule {
  triggers: readonly string[];
  /** Those of `triggers` that count only at a word start: where no ASCII word character ([A-Za-z0-9_]) precedes them. */
  wordStart?: readonly string[];
}

/** True for the code units of ASCII word characters ([A-Za-z0-9_], what `\b` and `\w` see without the `u` flag). */
function isWordCode(c: number): boolean {
  return (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 95;
}

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
   * text, and without a range test first it runs about 8% faster.
   */
  private readonly classes: Uint8Array;
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
   * state * width, is 0 until known, else 1 + 2 * (the next state's row) + (1 when that state has no
   * output). One load per character, no multiplication, no look-up of outputs where there are none:
   * the scan runs over every character of a text, and this halves its cost.
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

  constructor(rules: readonly PrefilterRule[]) {
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
    this.dfa = new Int32Array(states * width);
    this.fail = new Int32Array(states);
    this.parent = parent;
    this.edge = edge;
    this.ownOuts = outs;
    this.outRules = new Array<Int32Array | undefined>(states);
    this.outLengths = new Array<Int32Array | undefined>(states);
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
    const entry = 1 + 2 * t * this.width + (this.hasOutputs(t) ? 0 : 1);
    this.dfa[row + c] = entry;
    return entry;
  }

  /**
   * Calls `hit(rule, start, end)` for every trigger occurrence in text[from, to)
   * (for each rule, the longest of its triggers ending at `end`, and the longest of its
   * word-start triggers if that one is at a word start). A word-start trigger at
   * text[0] counts: what precedes a slice of a view is unknown here.
   */
  scan(text: string, from: number, to: number, hit: (rule: number, start: number, end: number) => void): void {
    const { dfa, classes, width, outRules, outLengths } = this;
    let row = 0;
    for (let i = from; i < to; i++) {
      const k = classes[text.charCodeAt(i)]!;
      let entry = dfa[row + k]!;
      if (entry === 0) entry = this.dfaEntry(row, k);
      row = (entry - 1) >> 1;
      if ((entry & 1) === 0) continue;
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
