import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { simpleFrontmatterPairs, validateSkillFrontmatter } from '../../src/lib/skills/frontmatter.js';
import { findFrontmatter } from '../../src/lib/skills/markdown-regions.js';
import { corpusAvailable, corpusDir } from './corpus.js';
import { CASES, type Case } from './rule-cases.js';

/**
 * Most frontmatters are one-line `key: value` pairs, which validateSkillFrontmatter reads
 * without the YAML parser (and without loading it). Whatever it reads must be what the YAML
 * parser reads: every result here is compared with the YAML-only reference.
 */
function same(content: string, directoryName = 'demo'): void {
  expect(validateSkillFrontmatter(content, { directoryName })).toEqual(validateSkillFrontmatter(content, { directoryName, yamlOnly: true }));
}

const fm = (body: string): string => `---\n${body}---\n\n# Body\n`;

/** Frontmatters at the edge of the fast path: each is read by it or refused to YAML, never read differently. */
const EDGES = [
  'name: demo\ndescription: A demo skill.\n',
  'name: demo\ndescription:    Padded value with trailing spaces   \n',
  'name: demo\n\n\ndescription: blank lines between\n   \n',
  'name: "demo"\ndescription: \'single quoted\'\n',
  'name: demo\ndescription: "double, with: colon and # hash"\n',
  'name: demo\ndescription: a: b\n',
  'name: demo\ndescription: trailing colon:\n',
  'name: demo\ndescription: text # comment\n',
  'name: demo\ndescription: C# and http://x.example/a:b\n',
  'name: demo\ndescription: "escaped \\" quote"\n',
  "name: demo\ndescription: 'it''s'\n",
  'name: demo\ndescription: "a" # c\n',
  'name: demo\ndescription: true\n',
  'name: demo\ndescription: Null\n',
  'name: demo\ndescription: ~\n',
  'name: demo\ndescription: 1.5\n',
  'name: demo\ndescription: .inf\n',
  'name: demo\ndescription: -x\n',
  'name: demo\ndescription: 0x1F\n',
  'name: demo\ndescription: yes\n',
  'true: demo\n',
  'name: demo\nname: again\n',
  'name: Demo_Skill\ndescription: x\n',
  'name: demo\nversion: 1.0\n',
  'name: demo\ndescription:\n',
  'name: demo\ndescription: \n',
  'name: demo\ndescription: >\n  folded\n',
  'name: demo\nmetadata:\n  a: b\n',
  'name: demo\nmetadata:\n    skill-author: K-Dense Inc.\n',
  'name: demo\nmetadata:\n  author: x\n  version: "1.0"\ncompatibility: y\n',
  'name: demo\nmetadata:\n  a: b\n\n  c: d\n\nlicense: MIT\n',
  'name: demo\nmetadata:\n  a: b\n  \n  c: d\n',
  'name: demo\nmetadata:\n  a: b\n  a: c\n',
  'name: demo\nmetadata:\n  a: b  \n',
  'name: demo\nmetadata:\n  a: b\n   c: d\n',
  'name: demo\nmetadata:\n  a: b\n c: d\n',
  'name: demo\nmetadata:\n  a:\n    b: c\n',
  'name: demo\nmetadata:\n  version: 1.0\n',
  'name: demo\nmetadata:\n  flag: true\n',
  'name: demo\nmetadata:\n  a: b # c\n',
  'name: demo\nmetadata:\n  # c\n  a: b\n',
  'name: demo\nmetadata:\n  __proto__: x\n',
  'name: demo\nmetadata:\n  true: x\n',
  'name: demo\nmetadata:\n',
  'name: demo\nmetadata:\nlicense: MIT\n',
  'name: demo\nmetadata: \n  a: b\n',
  'name: demo\nmetadata:\n  a: b',
  'metadata:\n  a: b\nmetadata:\n  c: d\n',
  'name: demo\nmetadata:\n  - a\n',
  'name: demo\ndescription:\n  a: b\n',
  'name: demo\nallowed-tools:\n  Read: x\n',
  'name: demo\nallowed-tools:\n  - Read\n',
  'name: demo\ndescription: first\n  continued\n',
  '  name: demo\n',
  'name: demo\r\ndescription: crlf\r\n',
  'name: demo\ndescription: tab\there\n',
  'name: demo\ndescription: [a, b]\n',
  'name: demo\ndescription: {a: b}\n',
  'name: demo\ndescription: &a anchored\n',
  'name: demo\ndescription: !tag x\n',
  'name: demo\ndescription: `tick`\n',
  'name: demo\ndescription: @at\n',
  'name: demo\ndescription: %pct\n',
  'name: demo\ndescription: unicode — “quotes” 中文 ✅\n',
  'name: demo\ndescription: ctrl\u0007char\n',
  'name: demo\ndescription: bom\ufeffinside\n',
  'name: demo\ndescription: nel\u0085inside\n',
  `name: demo\n${'k'.repeat(1100)}: long key\n`,
  `name: demo\ndescription: ${'long '.repeat(400)}\n`,
  '# comment\nname: demo\n',
  'name : demo\n',
  'name:demo\n',
  '',
  '\n',
];

describe('frontmatter fast path', () => {
  it('reads edge cases as the YAML parser does, or leaves them to it', () => {
    for (const body of EDGES) same(fm(body));
  });

  it('reads every rule case as the YAML parser does', () => {
    for (const { tp, tn } of Object.values(CASES)) for (const c of [...tp, ...tn] as Case[]) same(typeof c === 'string' ? c : c.text);
  });

  it('handles the common one-line frontmatter itself (not only by falling back)', () => {
    const content = fm('name: demo\ndescription: "A demo skill."\nlicense: MIT\n');
    const block = findFrontmatter(content)!;
    expect(simpleFrontmatterPairs(content.slice(block.contentStart, block.contentEnd), block.contentStart)?.map((p) => p.key)).toEqual(['name', 'description', 'license']);
    expect(simpleFrontmatterPairs('metadata:\n  a: b\n', 0)?.map((p) => [p.key, p.value, p.valueRange])).toEqual([['metadata', { a: 'b' }, [12, 17]]]);
    expect(simpleFrontmatterPairs('metadata:\n  a:\n    b: c\n', 0)).toBeUndefined();
  });

  it.skipIf(!corpusAvailable())('reads every frontmatter of the dev corpus as the YAML parser does, most of them itself', () => {
    const dir = corpusDir;
    const files = readFileSync(join(dir, 'manifest.tsv'), 'utf8')
      .trim()
      .split('\n')
      .slice(1)
      .map((l) => l.split('\t')[0]!);
    let withFrontmatter = 0;
    let fast = 0;
    for (const file of files) {
      const content = readFileSync(join(dir, file), 'utf8');
      same(content);
      const block = findFrontmatter(content.slice(0, 200_000));
      if (!block) continue;
      withFrontmatter += 1;
      if (simpleFrontmatterPairs(content.slice(block.contentStart, block.contentEnd), block.contentStart)) fast += 1;
    }
    expect(withFrontmatter).toBeGreaterThan(100);
    expect(fast / withFrontmatter).toBeGreaterThan(0.6);
  });
});
