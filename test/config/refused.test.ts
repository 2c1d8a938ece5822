/**
 * The honesty rule: a key the seeds define that comis does not implement is
 * refused at its file and line with "`<key>` is not supported yet", never
 * parsed and ignored. And a file that defines no agents keeps the embedded
 * `default` agent.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';
import * as yaml from 'yaml';

import { loadConfig, parseConfigText, resolveAgent } from '../../src/lib/config/load.js';
import { configSchema } from '../../src/lib/config/schema.js';
import { ComisError } from '../../src/lib/errors.js';
import { tempDir } from '../helpers/temp.js';

type Problem = { file: string; line: number; column: number; key: string; message: string };

function problemsOf(text: string): Problem[] {
  try {
    parseConfigText(text, '/etc/x/config.yaml', { yaml, configSchema });
  } catch (err) {
    expect((err as ComisError).code).toBe('CONFIG_INVALID');
    return (err as ComisError).details!.problems as Problem[];
  }
  throw new Error('expected the config to be refused');
}

describe('keys that are not supported yet', () => {
  const cases: [string, string, number, string][] = [
    ['autonomy.durability.orchestrateResume', 'agents:\n  ops:\n    autonomy:\n      durability: {orchestrateResume: true}\n', 4, 'agents.ops.autonomy.durability.orchestrateResume'],
    ['model (a name)', 'agents:\n  ops:\n    model: gpt-5.1\n', 3, 'agents.ops.model'],
    ['model.baseUrl', 'agents:\n  ops:\n    model:\n      baseUrl: http://127.0.0.1:1/v1\n', 4, 'agents.ops.model.baseUrl'],
    ['budget.maxTokens', 'agents:\n  ops:\n    budget:\n      maxTokens: 1000\n', 4, 'agents.ops.budget.maxTokens'],
    ['budget.maxCostUsd', 'agents:\n  ops:\n    budget:\n      maxCostUsd: 5\n', 4, 'agents.ops.budget.maxCostUsd'],
    ['security.permission.enableNodePermissions', 'security:\n  permission:\n    enableNodePermissions: true\n', 3, 'security.permission.enableNodePermissions'],
    ['security.permission.allowedFsPaths', 'security:\n  permission:\n    allowedFsPaths: [/srv]\n', 3, 'security.permission.allowedFsPaths'],
    ['security.permission.allowedNetHosts', 'security:\n  permission:\n    allowedNetHosts: [example.com]\n', 3, 'security.permission.allowedNetHosts'],
  ];
  for (const [name, text, line, key] of cases) {
    it(`refuses ${name} at its file and line`, () => {
      const problems = problemsOf(text);
      expect(problems).toHaveLength(1);
      expect(problems[0]).toMatchObject({ file: '/etc/x/config.yaml', line, key });
      expect(problems[0]!.message).toMatch(new RegExp(`^\`${key.replaceAll('.', '\\.')}\` is not supported yet: `));
    });
  }

  it('names every refused key and still validates the rest, in one error', () => {
    const problems = problemsOf('agents:\n  ops:\n    model: m\n    budget: {maxTokens: 5}\n    autonomy:\n      profile: root\n');
    expect(problems.map((p) => p.key)).toEqual(['agents.ops.model', 'agents.ops.budget.maxTokens', 'agents.ops.autonomy.profile']);
  });

  it('the message of the CLI error carries file:line:column and the key', async () => {
    const home = tempDir();
    writeFileSync(join(home, 'config.yaml'), 'agents:\n  ops:\n    autonomy:\n      durability: {enabled: true, orchestrateResume: true}\n');
    await expect(loadConfig({ home })).rejects.toThrow(/config\.yaml:4:\d+ agents\.ops\.autonomy\.durability\.orchestrateResume: `agents\.ops\.autonomy\.durability\.orchestrateResume` is not supported yet/);
  });

  it('autonomy.durability.enabled is a real key (the outbox of message_*); the rest of the block stays refused', async () => {
    const home = tempDir();
    writeFileSync(join(home, 'config.yaml'), 'agents:\n  ops:\n    autonomy:\n      durability:\n        enabled: true\n');
    expect((await loadConfig({ home })).config.agents.ops!.autonomy.durability).toEqual({ enabled: true });
    expect(problemsOf('agents:\n  ops:\n    autonomy:\n      durability:\n        enabled: yes-please\n')[0]).toMatchObject({ line: 5, key: 'agents.ops.autonomy.durability.enabled' });
  });

  it('never echoes the value of a refused key (it may be a secret)', () => {
    const secret = 'sk-live-REFUSED-SECRET-4242';
    const problems = problemsOf(`agents:\n  a:\n    model:\n      name: m\n      apiKey: ${secret}\n`);
    expect(JSON.stringify(problems)).not.toContain(secret);
    expect(problems.map((p) => p.key)).toEqual(['agents.a.model.name', 'agents.a.model.apiKey']);
  });

  it('refuses execSandbox.enabled: never (orchestrate never runs unjailed)', () => {
    const [p] = problemsOf('agents:\n  ops:\n    skills:\n      execSandbox:\n        enabled: never\n');
    expect(p).toMatchObject({ line: 5, key: 'agents.ops.skills.execSandbox.enabled' });
    expect(p!.message).toContain('"always"');
  });
});

describe('a file that defines no agents', () => {
  for (const [name, text] of [
    ['empty', ''],
    ['only comments', '# nothing yet\n# agents:\n'],
    ['only security:', 'security:\n'],
    ['agents: with nothing under it', 'agents:\n'],
  ] as const) {
    it(`keeps the embedded default agent (${name})`, async () => {
      const home = tempDir();
      writeFileSync(join(home, 'config.yaml'), text);
      const loaded = await loadConfig({ home });
      expect(loaded.source).toBe(join(home, 'config.yaml'));
      const agent = resolveAgent(loaded);
      expect(agent.id).toBe('default');
      expect(agent.config.autonomy.profile).toBe('standard');
    });
  }

  it('AGENT_UNKNOWN names the file and lists the agents it defines', async () => {
    const home = tempDir();
    const file = join(home, 'config.yaml');
    writeFileSync(file, 'agents:\n  ops: {}\n  ci: {}\n');
    const loaded = await loadConfig({ home });
    let err: ComisError | undefined;
    try {
      resolveAgent(loaded, 'nope');
    } catch (e) {
      err = e as ComisError;
    }
    expect(err?.code).toBe('AGENT_UNKNOWN');
    expect(err?.message).toBe(`Unknown agent "nope": ${file} defines ops, ci.`);
    // With several agents and none chosen, the error names the file too.
    expect(() => resolveAgent(loaded)).toThrow(`No agent selected and ${file} defines 2 agents (ops, ci).`);
  });
});
