/**
 * autonomy.durability: `orchestrateResume` acts only inside an enabled block;
 * on its own it is refused at its file and line (never silently inert). Any
 * other durability key is refused as unknown.
 */
import { describe, expect, it } from 'vitest';
import * as yaml from 'yaml';

import { parseConfigText } from '../../src/lib/config/load.js';
import { durableRuns } from '../../src/lib/config/durability.js';
import { configSchema } from '../../src/lib/config/schema.js';
import type { ComisError } from '../../src/lib/errors.js';

const parse = (text: string) => parseConfigText(text, '/etc/x/config.yaml', { yaml, configSchema });
function problems(text: string): { line: number; key: string; message: string }[] {
  try {
    parse(text);
  } catch (err) {
    return (err as ComisError).details!.problems as { line: number; key: string; message: string }[];
  }
  throw new Error('expected a refusal');
}

describe('autonomy.durability', () => {
  it('is off by default: no block, or a block without keys, gives no durable runs', () => {
    expect(durableRuns(parse('agents:\n  ops: {}\n').agents.ops!.autonomy)).toBe(false);
    expect(durableRuns(parse('agents:\n  ops:\n    autonomy:\n      durability: {}\n').agents.ops!.autonomy)).toBe(false);
    expect(durableRuns(parse('agents:\n  ops:\n    autonomy:\n      durability: {enabled: true}\n').agents.ops!.autonomy)).toBe(false);
  });

  it('enabled and orchestrateResume together make runs durable', () => {
    const c = parse('agents:\n  ops:\n    autonomy:\n      durability:\n        enabled: true\n        orchestrateResume: true\n');
    expect(c.agents.ops!.autonomy.durability).toEqual({ enabled: true, orchestrateResume: true });
    expect(durableRuns(c.agents.ops!.autonomy)).toBe(true);
  });

  it('orchestrateResume without enabled is refused at its line, naming the fix', () => {
    const [p, ...rest] = problems('agents:\n  ops:\n    autonomy:\n      durability:\n        orchestrateResume: true\n');
    expect(rest).toEqual([]);
    expect(p).toMatchObject({ line: 5, key: 'agents.ops.autonomy.durability.orchestrateResume' });
    expect(p!.message).toMatch(/set durability\.enabled: true/);
  });

  it('a durability key nobody implements is refused', () => {
    const [p] = problems('agents:\n  ops:\n    autonomy:\n      durability:\n        enabled: true\n        exactlyOnceEverything: true\n');
    expect(p!.key).toMatch(/agents\.ops\.autonomy\.durability/);
    expect(p!.message).toMatch(/exactlyOnceEverything/);
  });
});
