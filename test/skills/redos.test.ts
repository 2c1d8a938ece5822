import { describe, expect, it } from 'vitest';

import { RULES } from '../../src/lib/skills/rules.js';
import { scanSkillContent } from '../../src/lib/skills/scanner.js';

/**
 * ReDoS immunity: every rule's worst case (rules.ts `worstCase`), and the
 * classic ones below, repeated to 1 MB; the whole scan (all rules, all
 * views) must finish. The ceiling is a correctness bound against
 * super-linear behaviour, not a benchmark (bench/skill-scan.mjs reports times).
 */
const ONE_MB = 1024 * 1024;
const CEILING_MS = 20_000;

const EXTRA: [string, string][] = [
  ['unclosed <!--', '<!--'],
  ['$( repeated', '$('],
  ['long curl ... | lines', `curl -s https://x.example/${'a'.repeat(500)} `],
  ['near-base64 runs', 'QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0123456789abcdefghijklmnopqrstuv='],
  ['backtick runs', '``` ` `` '],
  ['blank lines of spaces', `${' '.repeat(250)}\n`],
];

function fill(unit: string): string {
  return unit.repeat(Math.ceil(ONE_MB / unit.length)).slice(0, ONE_MB);
}

const cases: [string, string][] = [...RULES.filter((r) => r.kind !== 'artifact' && r.kind !== 'spec').map((r): [string, string] => [r.id, r.worstCase]), ...EXTRA];

describe('ReDoS: 1 MB of each worst case', () => {
  it.each(cases)('%s', (_id, unit) => {
    const text = fill(unit);
    for (const kind of ['markdown', 'script'] as const) {
      const start = performance.now();
      const result = scanSkillContent(text, { kind, path: kind === 'script' ? 'run.sh' : undefined });
      const elapsed = performance.now() - start;
      expect(elapsed, `${kind} scan took ${elapsed.toFixed(0)} ms`).toBeLessThan(CEILING_MS);
      expect(Array.isArray(result.findings)).toBe(true);
    }
  });
});
