import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

import * as yaml from 'yaml';
import { describe, expect, it } from 'vitest';

import { findCycle, loadPlan, parsePlanText } from '../../src/lib/coordinator/plan.js';
import { announce, boundSummary, drillInLine, summarizeStdout } from '../../src/lib/coordinator/summary.js';
import { childAgentId } from '../../src/lib/coordinator/coordinator.js';
import { ComisError } from '../../src/lib/errors.js';
import { tempDir } from '../helpers/temp.js';

function problemOf(text: string): ComisError {
  try {
    parsePlanText(text, 'plan.yaml', yaml);
  } catch (err) {
    return err as ComisError;
  }
  throw new Error('expected an error');
}

describe('plans', () => {
  it('parses children, infers languages from script paths, applies defaults', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'a.py'), 'print("a")\n');
    writeFileSync(join(dir, 'plan.yaml'), 'children:\n  - id: a\n    script: a.py\n  - id: b\n    inline: console.log(1)\n    language: js\n    dependsOn: [a]\n    capabilities: [orch:read]\n');
    const plan = await loadPlan(join(dir, 'plan.yaml'));
    expect(plan.children.map((c) => [c.id, c.language, c.timeoutMs, c.summaryMaxChars, c.includeParentHistory])).toEqual([
      ['a', 'py', 60_000, 2000, 'none'],
      ['b', 'js', 60_000, 2000, 'none'],
    ]);
    expect(plan.children[0]!.source).toBe('print("a")\n');
    expect(plan.children[1]!.capabilities).toEqual(['orch:read']);
  });

  it('names file, line and key of an invalid field', () => {
    const err = problemOf('children:\n  - id: a\n    inline: x\n    language: js\n    timeoutMs: fast\n');
    expect(err.code).toBe('INPUT_INVALID');
    expect(err.message).toContain('plan.yaml:5 children[0].timeoutMs');
    const unknown = problemOf('children:\n  - id: a\n    inline: x\n    language: js\n    colour: red\n');
    expect(unknown.message).toContain('children[0].colour');
    expect(unknown.message).toContain('unknown key');
    const dep = problemOf('children:\n  - id: a\n    inline: x\n    language: js\n    dependsOn: [zz]\n');
    expect(dep.message).toMatch(/plan\.yaml:5 children\[0\]\.dependsOn\[0\]: unknown child "zz"/);
    expect(problemOf('children:\n  - id: a\n    language: js\n').message).toContain('exactly one of script');
  });

  it('cites the line of the offending key itself, not of its parent', () => {
    // Unknown keys: each on its own line (the parent child starts on line 2).
    const unknown = problemOf('name: p\nchildren:\n  - id: a\n    inline: x\n    language: js\n    colour: red\n    size: 3\n');
    expect(unknown.message).toContain('plan.yaml:6 children[0].colour: unknown key "colour"');
    expect(unknown.message).toContain('plan.yaml:7 children[0].size: unknown key "size"');
    expect(problemOf('children:\n  - id: a\n    inline: x\n    language: js\nconcurency: 2\n').message).toContain('plan.yaml:5 concurency: unknown key');
    // A key with no value, and an item of a block list.
    expect(problemOf('children:\n  - id: a\n    inline: x\n    language: js\n    timeoutMs:\n').message).toContain('plan.yaml:5 children[0].timeoutMs');
    expect(problemOf('children:\n  - id: a\n    inline: x\n    language: js\n    capabilities:\n      - orch:read\n      - orch:bogus\n').message).toContain('plan.yaml:7 children[0].capabilities[1]');
    // Inside a flow map, the line the key is on.
    expect(problemOf('children:\n  - {id: a, inline: x, language: js}\n  - {id: b, inline: x,\n     language: js, colour: red}\n').message).toContain('plan.yaml:4 children[1].colour');
  });

  it('refuses a cycle before anything runs', () => {
    const err = problemOf('children:\n  - {id: a, inline: x, language: js, dependsOn: [c]}\n  - {id: b, inline: x, language: js, dependsOn: [a]}\n  - {id: c, inline: x, language: js, dependsOn: [b]}\n');
    expect(err.message).toContain('cycle: a → c → b → a');
    expect(
      findCycle([
        { id: 'x', dependsOn: [] },
        { id: 'y', dependsOn: ['x'] },
      ]),
    ).toBeUndefined();
  });

  it('derives valid child agent ids', () => {
    expect(childAgentId('lead', 'fetch')).toBe('lead--fetch');
    const long = childAgentId('a'.repeat(64), 'child-x');
    expect(long).toMatch(/^[a-z0-9][a-z0-9_-]{0,63}$/);
    expect(long.endsWith('--child-x')).toBe(true);
  });
});

describe('summaries', () => {
  it('takes the last SUMMARY: line, else head and tail, always within the budget', () => {
    expect(summarizeStdout('x\nSUMMARY: one\ny\nSUMMARY: two\nz\n', 2000)).toEqual({ text: 'two', chosen: true });
    const big = `${'h'.repeat(5000)}${'t'.repeat(5000)}`;
    const s = summarizeStdout(big, 2000);
    expect(s.chosen).toBe(false);
    expect(s.text.length).toBeLessThanOrEqual(2000);
    expect(s.text.startsWith('hhh')).toBe(true);
    expect(s.text.endsWith('ttt')).toBe(true);
    expect(boundSummary('short', 100)).toBe('short');
  });

  it('announces with the drill-in line', () => {
    const ref = { ref: 'workspaces/l--a/comis-results/r-1.stdout', bytes: 12, kind: 'text' };
    expect(drillInLine(ref)).toBe('Full result (drill in with read/grep/jq): workspaces/l--a/comis-results/r-1.stdout (12B, text)');
    expect(announce({ childId: 'a', state: 'done', durationMs: 5, stepsExecuted: 1, summary: 'ok', resultRef: ref })).toBe(`[a] done in 5 ms, 1 tool call\nok\n${drillInLine(ref)}\n`);
  });
});
