/**
 * How long a JSON document is once indented, before anything indents it (web_fetch writes a big JSON
 * page to its ResultRef as `JSON.stringify(value, null, 2)`). No imports: the tool module loads it at
 * start-up.
 */
const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * The byte length of `JSON.stringify(value, null, 2)` for the value whose compact form
 * (`JSON.stringify(value)`) is `compact`, without building it: one scan that adds each non-empty
 * container's newlines and indentation and the space after each member's colon. Indentation grows
 * with the depth, so a small deep document can be hundreds of times its size indented; web_fetch
 * asks this before it indents a page.
 */
export function indentedJsonLength(compact: Buffer): number {
  let extra = 0;
  let depth = 0;
  const n = compact.length;
  for (let i = 0; i < n; i++) {
    const c = compact[i]!;
    if (c === QUOTE) {
      // Past the string: its escapes hide no quote, and nothing in it is structure.
      for (i++; i < n && compact[i] !== QUOTE; i++) if (compact[i] === BACKSLASH) i++;
    } else if (c === 0x5b || c === 0x7b) {
      const next = compact[i + 1];
      if (next === 0x5d || next === 0x7d)
        i++; // [] and {} stay as they are
      else extra += 1 + 2 * ++depth;
    } else if (c === 0x2c) extra += 1 + 2 * depth;
    else if (c === 0x5d || c === 0x7d) extra += 1 + 2 * --depth;
    else if (c === 0x3a) extra += 1;
  }
  return n + extra;
}
