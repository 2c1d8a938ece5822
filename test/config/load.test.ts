import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import * as yaml from 'yaml';

import { defaultAgentConfig } from '../../src/lib/config/defaults.js';
import { embeddedDefaultConfig, loadConfig, parseConfigText as parseWith, resolveAgent } from '../../src/lib/config/load.js';
import { agentSchema, configSchema } from '../../src/lib/config/schema.js';
import { ComisError } from '../../src/lib/errors.js';
import { tempDir } from '../helpers/temp.js';

const parseConfigText = (text: string, file: string) => parseWith(text, file, { yaml, configSchema });

function problemsOf(text: string): { line: number; column: number; key: string; message: string }[] {
  try {
    parseConfigText(text, '/x/config.yaml');
  } catch (err) {
    expect(err).toBeInstanceOf(ComisError);
    expect((err as ComisError).code).toBe('CONFIG_INVALID');
    return (err as ComisError).details!.problems as never;
  }
  throw new Error('expected the config to be invalid');
}

describe('config loading', () => {
  it('uses the embedded default agent when there is no config file', async () => {
    const home = tempDir();
    const loaded = await loadConfig({ home });
    expect(loaded.source).toBeUndefined();
    const agent = resolveAgent(loaded);
    expect(agent.id).toBe('default');
    expect(agent.config.autonomy.profile).toBe('standard');
    expect(agent.config.autonomy.write).toBe(false);
    expect(agent.workspace).toBe(join(home, 'workspaces', 'default'));
  });

  it('accepts a full valid config and fills defaults', () => {
    const config = parseConfigText(
      `agents:
  orchestrator:
    autonomy:
      profile: standard
      role: coordinator
      write: true
    skills:
      toolPolicy:
        profile: coding
        deny: [exec]
      execSandbox:
        enabled: always
security: {}
`,
      'c.yaml',
    );
    const agent = config.agents.orchestrator!;
    expect(agent.autonomy.role).toBe('coordinator');
    expect(agent.autonomy.limits.timeoutMs).toBe(60_000);
    expect(agent.skills.toolPolicy.deny).toEqual(['exec']);
  });

  it('names file, line, column and dotted key for a wrong enum value', () => {
    const [p] = problemsOf('agents:\n  ops:\n    autonomy:\n      profile: superuser\n');
    expect(p).toMatchObject({ line: 4, column: 16, key: 'agents.ops.autonomy.profile' });
    expect(p!.message).toContain('"standard"');
  });

  it('reports unknown keys at the key itself', () => {
    const [p] = problemsOf('agents:\n  ops:\n    autonomy:\n      proflie: standard\n');
    expect(p).toMatchObject({ line: 4, column: 7, key: 'agents.ops.autonomy.proflie' });
    expect(p!.message).toMatch(/unknown key/);
  });

  it('reports a wrong type with the expected type', () => {
    const [p] = problemsOf('agents:\n  ops:\n    autonomy:\n      write: "yes"\n');
    expect(p).toMatchObject({ line: 4, key: 'agents.ops.autonomy.write' });
    expect(p!.message).toBe('expected boolean, got a string');
  });

  it('reports out-of-range numbers', () => {
    const [p] = problemsOf('agents:\n  ops:\n    autonomy:\n      limits:\n        timeoutMs: 900000\n');
    expect(p).toMatchObject({ line: 5, key: 'agents.ops.autonomy.limits.timeoutMs' });
    expect(p!.message).toContain('600000');
  });

  it('reports an invalid agent id at the key', () => {
    const [p] = problemsOf('agents:\n  Bad Agent:\n    autonomy: {}\n');
    expect(p).toMatchObject({ line: 2, column: 3 });
    expect(p!.message).toMatch(/agent ids/);
  });

  it('reports YAML syntax errors and duplicate keys with positions', () => {
    const [dup] = problemsOf('agents:\n  a:\n    workspace: /x\n  a:\n    workspace: /y\n');
    expect(dup).toMatchObject({ line: 4 });
    expect(dup!.message).toMatch(/duplicate key/);
    const [syntax] = problemsOf('agents:\n  a: [unclosed\n');
    expect(syntax!.message).toMatch(/YAML syntax error/);
  });

  it('rejects a non-mapping top level', () => {
    const [p] = problemsOf('- a\n- b\n');
    expect(p!.message).toMatch(/mapping/);
  });

  it('never prints a secret value in an error', () => {
    const secret = 'sk-live-THIS-IS-SECRET-123456';
    const text = `agents:\n  a:\n    model:\n      baseUrl: "${secret}"\n      name: m\n      apiKey: ${secret}\n`;
    try {
      parseConfigText(text, 'c.yaml');
      throw new Error('expected invalid');
    } catch (err) {
      const e = err as ComisError;
      expect(e.code).toBe('CONFIG_INVALID');
      expect(e.message).not.toContain(secret);
      expect(JSON.stringify(e.details)).not.toContain(secret);
      expect(e.message).toContain('agents.a.model');
    }
  });

  it('is an error, not a fallback, when the file exists but is invalid', async () => {
    const home = tempDir();
    writeFileSync(join(home, 'config.yaml'), 'agents: 5\n');
    await expect(loadConfig({ home })).rejects.toThrow(/config.yaml:1:9 agents/);
  });

  it('resolves the agent from --agent, COMIS_AGENT and defaultAgent', async () => {
    const home = tempDir();
    writeFileSync(join(home, 'config.yaml'), 'defaultAgent: b\nagents:\n  a: {}\n  b: {workspace: ws-b}\n');
    const loaded = await loadConfig({ home });
    expect(resolveAgent(loaded).id).toBe('b');
    expect(resolveAgent(loaded).workspace).toBe(join(home, 'ws-b'));
    expect(resolveAgent(loaded, 'a').id).toBe('a');
    expect(() => resolveAgent(loaded, 'zzz')).toThrow(/Unknown agent "zzz".*defines a, b/);
  });

  it('keeps the embedded default equal to what the schema gives', () => {
    expect(defaultAgentConfig()).toEqual(agentSchema.parse({}));
    expect(embeddedDefaultConfig()).toEqual(configSchema.parse({ agents: { default: {} } }));
  });
});
