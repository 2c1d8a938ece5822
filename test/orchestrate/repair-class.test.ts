import { describe, expect, it } from 'vitest';

import { classifyRepair, REPAIR_CLASSES } from '../../src/lib/orchestrate/repair-class.js';

const failed = (stderrTail: string, over: Partial<Parameters<typeof classifyRepair>[0]> = {}) => classifyRepair({ failureClass: 'nonzero_exit', exitCode: 1, denied: false, stderrTail, ...over });

describe('classifyRepair: the recoverable classes, first match on the stderr tail', () => {
  const cases: [string, string, (typeof REPAIR_CLASSES)[number]][] = [
    ['python ModuleNotFoundError', 'Traceback (most recent call last):\n  File "/run/comis/script.py", line 1, in <module>\n    import requests\nModuleNotFoundError: No module named \'requests\'\n', 'bad_import'],
    ['python ImportError', "ImportError: cannot import name 'reed' from 'comis_tools' (/run/comis/comis_tools.py)\n", 'bad_import'],
    ['node ERR_MODULE_NOT_FOUND', "node:internal/modules/esm/resolve:275\nError [ERR_MODULE_NOT_FOUND]: Cannot find module '/run/comis/comis_tool.js' imported from /run/comis/script.mjs\n", 'bad_import'],
    ['node Cannot find package', "Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'lodash' imported from /run/comis/script.mjs\n", 'bad_import'],
    ['comis_tools is not defined (js)', 'ReferenceError: comis_tools is not defined\n    at file:///run/comis/script.mjs:1:1\n', 'comis_tools_misuse'],
    ['comis_tools is not defined (py)', "NameError: name 'comis_tools' is not defined\n", 'comis_tools_misuse'],
    ['not a function on comis_tools', 'TypeError: comis_tools.reed is not a function\n    at file:///run/comis/script.mjs:2:19\n', 'comis_tools_misuse'],
    ['python has no attribute', "AttributeError: module 'comis_tools' has no attribute 'reed'\n", 'comis_tools_misuse'],
    ['syntax error (js)', "file:///run/comis/script.mjs:3\n  console.log('x'\n  ^^^^^^^^^^^\nSyntaxError: missing ) after argument list\n", 'syntax_error'],
    ['indentation error (py)', '  File "/run/comis/script.py", line 2\n    print(1)\nIndentationError: unexpected indent\n', 'syntax_error'],
    ['type error elsewhere', "TypeError: Cannot read properties of undefined (reading 'length')\n", 'type_error'],
    ['python type error', 'TypeError: can only concatenate str (not "int") to str\n', 'type_error'],
  ];
  for (const [name, tail, cls] of cases) {
    it(name, () => expect(failed(tail)).toEqual({ recoverable: true, cls }));
  }

  it('first match wins, in table order (an import error that also mentions TypeError is bad_import)', () => {
    expect(failed("TypeError: x\nModuleNotFoundError: No module named 'x'\n")).toEqual({ recoverable: true, cls: 'bad_import' });
    expect(failed('SyntaxError: Unexpected token\nTypeError: y\n')).toEqual({ recoverable: true, cls: 'syntax_error' });
  });
});

describe('classifyRepair: everything else is not repaired', () => {
  it('timeout, stdout_cap and spawn_fail, whatever the tail says', () => {
    for (const failureClass of ['timeout', 'stdout_cap', 'spawn_fail']) {
      expect(failed('SyntaxError: x', { failureClass, exitCode: 137 })).toEqual({ recoverable: false, why: 'not_nonzero_exit' });
    }
    expect(failed('SyntaxError: x', { failureClass: undefined, exitCode: 0 })).toEqual({ recoverable: false, why: 'not_nonzero_exit' });
  });

  it('a death by signal (segfault 139, Killed 137, abort 134), even with a recoverable-looking tail', () => {
    for (const exitCode of [139, 137, 134]) expect(failed('TypeError: x\nKilled\n', { exitCode })).toEqual({ recoverable: false, why: 'signal_death' });
    expect(failed('TypeError: x', { exitCode: null })).toEqual({ recoverable: false, why: 'signal_death' });
  });

  it('a run with a denied tool call', () => {
    expect(failed('TypeError: comis_tools.web_fetch: denied (capability_missing)\n', { denied: true })).toEqual({ recoverable: false, why: 'denied_call' });
  });

  it('a RangeError, a thrown Error, a plain exit code', () => {
    expect(failed('RangeError: Maximum call stack size exceeded\n')).toEqual({ recoverable: false, why: 'no_match' });
    expect(failed('Error: the data was wrong\n')).toEqual({ recoverable: false, why: 'no_match' });
    expect(failed('')).toEqual({ recoverable: false, why: 'no_match' });
    expect(failed('Segmentation fault (core dumped)\n')).toEqual({ recoverable: false, why: 'no_match' });
  });

  it('names, not substrings: MyTypeErrorish and comis_toolsX do not match', () => {
    expect(failed('NotATypeErrorAtAll happened\n')).toEqual({ recoverable: false, why: 'no_match' });
    expect(failed('comis_toolsX is not defined\n')).toEqual({ recoverable: false, why: 'no_match' });
  });
});
