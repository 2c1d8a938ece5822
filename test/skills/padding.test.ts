import { describe, expect, it } from 'vitest';

import { scanSkillContent } from '../../src/lib/skills/scanner.js';

const isPadding = (c: string): boolean => c === ' ' || c === '\t' || c === '\u00a0' || c === '\u3000' || c === '\r';

/** The runs of 40 or more blank lines, as a walk over every line finds them: [start of the first, start of the line after the last]. */
function blankLineRuns(text: string): [number, number][] {
  const runs: [number, number][] = [];
  const lines = text.split('\n');
  let offset = 0;
  let runStart = -1;
  let count = 0;
  lines.forEach((line, k) => {
    // The last piece has no line feed: never a blank line of a run.
    if (k < lines.length - 1 && [...line].every(isPadding)) {
      if (runStart < 0) runStart = offset;
      count += 1;
    } else {
      if (count >= 40) runs.push([runStart, offset]);
      runStart = -1;
      count = 0;
    }
    offset += line.length + 1;
  });
  return runs;
}

/** Texts of blank lines (with padding and carriage returns in them) around words, from a fixed seed. */
function texts(): string[] {
  const parts = ['\n', '\n', '\r\n', ' ', '\t', '\u00a0', '\u3000', 'x', 'word', '\n'.repeat(39), '\n'.repeat(40), ' \n'.repeat(20), 'é'];
  let seed = 19;
  const next = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % n;
  };
  const out = ['\n'.repeat(40), `${'\n'.repeat(39)}x`, `x${'\n'.repeat(41)}`, `x\n${' \n'.repeat(40)}y`, `${'\n'.repeat(40)} `];
  for (let t = 0; t < 400; t++) {
    let text = '';
    for (let k = next(40); k > 0; k--) text += parts[next(parts.length)]!;
    out.push(text);
  }
  return out;
}

describe('padding: runs of blank lines', () => {
  it('reports the runs a walk over every line finds, where it finds them', () => {
    let runs = 0;
    for (const text of texts()) {
      const expected = blankLineRuns(text).slice(0, 10);
      const found = scanSkillContent(text, { kind: 'script', path: 'x.sh' })
        .findings.filter((f) => f.ruleId === 'HIDE_PADDING' && f.message.includes('blank lines'))
        .map((f) => [f.position, f.endPosition]);
      expect(found, JSON.stringify(text)).toEqual(expected);
      runs += found.length;
    }
    expect(runs).toBeGreaterThan(100);
  });
});
