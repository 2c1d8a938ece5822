/**
 * `agents.<id>.model`: validated with file, line and key, never echoing a
 * value; an inline key is refused (only apiKeyEnv, a variable NAME); the
 * key the variable holds is registered with the output guard as soon as the
 * agent is resolved.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';
import * as yaml from 'yaml';

import { loadConfig, parseConfigText, resolveAgent } from '../../src/lib/config/load.js';
import { configSchema } from '../../src/lib/config/schema.js';
import { ComisError } from '../../src/lib/errors.js';
import { redactSecrets, unregisterSecret } from '../../src/lib/redact/output-guard.js';
import { tempDir } from '../helpers/temp.js';

type Problem = { line: number; key: string; message: string };

function problemsOf(text: string): Problem[] {
  try {
    parseConfigText(text, '/etc/x/config.yaml', { yaml, configSchema });
  } catch (err) {
    expect((err as ComisError).code).toBe('CONFIG_INVALID');
    return (err as ComisError).details!.problems as Problem[];
  }
  throw new Error('expected the config to be refused');
}

describe('agents.<id>.model', () => {
  it('parses {baseUrl, name, class, apiKeyEnv, timeoutMs}, with timeoutMs defaulting to 60000', () => {
    const config = parseConfigText('agents:\n  ops:\n    model:\n      baseUrl: http://127.0.0.1:11434/v1\n      name: qwen2.5-coder:7b\n      class: small\n      apiKeyEnv: OPS_MODEL_KEY\n', 'c.yaml', { yaml, configSchema });
    expect(config.agents.ops!.model).toEqual({ baseUrl: 'http://127.0.0.1:11434/v1', name: 'qwen2.5-coder:7b', class: 'small', apiKeyEnv: 'OPS_MODEL_KEY', timeoutMs: 60_000 });
    const none = parseConfigText('agents:\n  ops: {}\n', 'c.yaml', { yaml, configSchema });
    expect(none.agents.ops!.model).toBeUndefined();
  });

  it("accepts a bare model id, as seed 001's coordinator example writes it (model: gpt-5.1)", () => {
    const seed = 'agents:\n  orchestrator:\n    model: gpt-5.1\n    autonomy:\n      profile: standard\n      role: coordinator        # worker (default) | coordinator\n';
    const config = parseConfigText(seed, 'c.yaml', { yaml, configSchema });
    expect(config.agents.orchestrator!.model).toBe('gpt-5.1');
    expect(config.agents.orchestrator!.autonomy.role).toBe('coordinator');
  });

  it('refuses an empty or non-string bare model, an unknown class, a missing baseUrl, at their lines', () => {
    expect(problemsOf('agents:\n  ops:\n    model: ""\n')).toMatchObject([{ line: 3, key: 'agents.ops.model' }]);
    expect(problemsOf('agents:\n  ops:\n    model: 5\n')).toMatchObject([{ line: 3, key: 'agents.ops.model' }]);
    expect(problemsOf('agents:\n  ops:\n    model:\n      baseUrl: http://127.0.0.1:1/v1\n      name: m\n      class: huge\n')).toMatchObject([
      { line: 6, key: 'agents.ops.model.class', message: 'expected one of "nano", "small", "mid", "frontier"' },
    ]);
    expect(problemsOf('agents:\n  ops:\n    model:\n      name: m\n')).toMatchObject([{ key: 'agents.ops.model.baseUrl' }]);
    expect(problemsOf('agents:\n  ops:\n    model:\n      baseUrl: file:///etc/passwd\n      name: m\n')).toMatchObject([{ key: 'agents.ops.model.baseUrl' }]);
    expect(problemsOf('agents:\n  ops:\n    model:\n      baseUrl: http://127.0.0.1:1/v1\n      name: m\n      timeoutMs: 999999\n')).toMatchObject([{ key: 'agents.ops.model.timeoutMs' }]);
  });

  it('refuses a key written inline (apiKey) without echoing it', () => {
    const secret = 'sk-live-INLINE-MODEL-KEY-4242';
    const problems = problemsOf(`agents:\n  a:\n    model:\n      baseUrl: http://127.0.0.1:1/v1\n      name: m\n      apiKey: ${secret}\n`);
    expect(JSON.stringify(problems)).not.toContain(secret);
    expect(problems.map((p) => p.key)).toEqual(['agents.a.model.apiKey']);
  });

  describe('the key named by apiKeyEnv', () => {
    const key = 'sk-model-canary-7f3a9c21d4e8b6a0';
    afterEach(() => {
      unregisterSecret(key);
      delete process.env.REPAIR_TEST_MODEL_KEY;
    });

    it('is registered with the output guard when the agent is resolved', async () => {
      // Positive control: before the agent is resolved, the guard does not know the key.
      expect(redactSecrets(`x ${key} y`)).toBe(`x ${key} y`);
      process.env.REPAIR_TEST_MODEL_KEY = key;
      const home = tempDir();
      writeFileSync(join(home, 'config.yaml'), 'agents:\n  ops:\n    model:\n      baseUrl: http://127.0.0.1:1/v1\n      name: m\n      apiKeyEnv: REPAIR_TEST_MODEL_KEY\n');
      resolveAgent(await loadConfig({ home }), 'ops');
      expect(redactSecrets(`x ${key} y`)).toBe('x [REDACTED] y');
    });

    it('for a bare model id, OPENAI_API_KEY is registered the same way', async () => {
      const shorthandKey = 'sk-bare-model-guard-3e9d41';
      expect(redactSecrets(`x ${shorthandKey} y`)).toBe(`x ${shorthandKey} y`);
      const before = process.env.OPENAI_API_KEY;
      process.env.OPENAI_API_KEY = shorthandKey;
      try {
        const home = tempDir();
        writeFileSync(join(home, 'config.yaml'), 'agents:\n  ops:\n    model: gpt-5.1\n');
        resolveAgent(await loadConfig({ home }), 'ops');
        expect(redactSecrets(`x ${shorthandKey} y`)).toBe('x [REDACTED] y');
      } finally {
        if (before === undefined) delete process.env.OPENAI_API_KEY;
        else process.env.OPENAI_API_KEY = before;
        unregisterSecret(shorthandKey);
      }
    });
  });
});
