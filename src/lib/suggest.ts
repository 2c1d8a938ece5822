/**
 * "Did you mean …?" for mistyped commands and flags: the nearest candidate by
 * edit distance, or nothing when none is close enough to be a likely typo.
 * No dependency: the candidate lists are a dozen short words.
 */

/** Optimal string alignment distance: Levenshtein plus adjacent transpositions ("explian" → 1). */
export function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}

/** A typo, not a different word: at most 1 edit for short words, about a third of the length for longer ones. */
function closeEnough(distance: number, typed: string): boolean {
  return distance <= Math.max(1, Math.floor(typed.length / 3));
}

/** The candidate nearest to `typed` (ties: the first in the list), if close enough. */
export function nearest(typed: string, candidates: readonly string[]): string | undefined {
  let best: { c: string; d: number } | undefined;
  for (const c of candidates) {
    const d = editDistance(typed, c);
    if (best === undefined || d < best.d) best = { c, d };
  }
  return best && best.d > 0 && closeEnough(best.d, typed) ? best.c : undefined;
}

/**
 * The command meant by the words typed (`['skil', 'scan', 'x']`), among
 * colon-separated ids (`skill:scan`). Each id is compared with as many typed
 * words as it has; a two-word id also matches its last word alone, so
 * `comis probe` suggests `jail probe`. Returns the id with spaces.
 */
export function suggestCommand(words: readonly string[], ids: readonly string[]): string | undefined {
  let best: { id: string; d: number; typed: string } | undefined;
  for (const id of ids) {
    const parts = id.split(':');
    const forms = [parts.join(' ')];
    if (parts.length > 1) forms.push(parts[parts.length - 1]!);
    for (const form of forms) {
      const n = form.split(' ').length;
      if (words.length < n) continue;
      const typed = words.slice(0, n).join(' ');
      const d = typed === form && form !== parts.join(' ') ? 0.5 : editDistance(typed, form);
      if (best === undefined || d < best.d) best = { id: parts.join(' '), d, typed };
    }
  }
  return best && best.d > 0 && closeEnough(best.d, best.typed) ? best.id : undefined;
}
