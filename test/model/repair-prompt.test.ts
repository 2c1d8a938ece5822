import { describe, expect, it } from 'vitest';

import { buildRepairMessages, extractScript } from '../../src/lib/model/repair-prompt.js';
import { registerSecret, unregisterSecret } from '../../src/lib/redact/output-guard.js';

describe('extractScript', () => {
  it('takes the fenced block, preferring the script language', () => {
    expect(extractScript('Here:\n```python\nprint(1)\n```\nDone.', 'py')).toBe('print(1)\n');
    expect(extractScript('```text\nnot it\n```\n```js\nconsole.log(2)\n```', 'js')).toBe('console.log(2)\n');
    expect(extractScript('```\nconsole.log(3)\n```', 'js')).toBe('console.log(3)\n');
    expect(extractScript('~~~ts\nlet x: number = 1;\n~~~', 'ts')).toBe('let x: number = 1;\n');
  });

  it('a longer fence holds inner ``` ; an unclosed fence (a cut-off answer) runs to the end', () => {
    expect(extractScript('````py\ns = """```"""\nprint(s)\n````', 'py')).toBe('s = """```"""\nprint(s)\n');
    expect(extractScript('```python\nprint(4)\n', 'py')).toBe('print(4)\n');
  });

  it('a bare answer is the script; <think> blocks are dropped', () => {
    expect(extractScript('print(5)\n', 'py')).toBe('print(5)\n');
    expect(extractScript('<think>the import is wrong</think>\n```py\nprint(6)\n```', 'py')).toBe('print(6)\n');
  });

  it('no code: empty, whitespace, an empty fence', () => {
    expect(extractScript('', 'py')).toBeUndefined();
    expect(extractScript('  \n\t', 'py')).toBeUndefined();
    expect(extractScript('```python\n\n```', 'py')).toBeUndefined();
    expect(extractScript('<think>hmm</think>', 'js')).toBeUndefined();
  });
});

describe('buildRepairMessages', () => {
  const base = {
    language: 'py' as const,
    script: 'import comis_tool\nprint(comis_tool.read({"path": "a"}))\n',
    errorClass: 'bad_import',
    exitCode: 1,
    stderrTail: "ModuleNotFoundError: No module named 'comis_tool'\n",
    methods: [{ name: 'read', capability: 'orch:read', params: '{path: string, offset?: integer, limit?: integer}', summary: 'Read lines of a file in the agent workspace.' }],
  };

  it('carries the script, the language, the stderr tail and the methods with capabilities; asks for the whole script', () => {
    const [system, user] = buildRepairMessages(base);
    expect(system!.role).toBe('system');
    expect(system!.content).toContain('whole corrected script');
    expect(user!.content).toContain('Language: Python 3');
    expect(user!.content).toContain('Failure: bad_import (exit code 1)');
    expect(user!.content).toContain(base.script);
    expect(user!.content).toContain(base.stderrTail);
    expect(user!.content).toContain('comis_tools.read({path: string, offset?: integer, limit?: integer}) [orch:read]');
    expect(user!.content).toContain('import comis_tools');
  });

  it('redacts every registered secret, in the script and in the tail', () => {
    const secret = 'sk-prompt-canary-99887766';
    const [, plain] = buildRepairMessages({ ...base, script: `KEY = "${secret}"\n` });
    expect(plain!.content).toContain(secret); // control: unregistered, it would go out
    registerSecret(secret);
    try {
      const msgs = buildRepairMessages({ ...base, script: `KEY = "${secret}"\n`, stderrTail: `boom ${secret}` });
      expect(JSON.stringify(msgs)).not.toContain(secret);
    } finally {
      unregisterSecret(secret);
    }
  });

  it('a script full of backticks cannot close its fence early', () => {
    const [, user] = buildRepairMessages({ ...base, language: 'js', script: 'const s = `a ``` b`;\n' });
    expect(user!.content).toContain('````javascript\nconst s = `a ``` b`;\n````');
  });
});
