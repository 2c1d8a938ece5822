/**
 * A script that uses `comis_tools` without importing it (the seed's fragments: "a script MAY
 * import") gets the SDK anyway; a script that imports, requires or declares it is left as
 * written. JS/TS get the import on their first line (line numbers hold); Python starts from a
 * bootstrap that binds the SDK in builtins. The end-to-end proof is
 * test/e2e/seed-snippets.test.ts; the Python bootstrap also runs here under the host python3.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { prepareScript, pythonImplicitSdkBoot } from '../../src/lib/orchestrate/transpile.js';
import { tempDir } from '../helpers/temp.js';

const IMPORT = 'import { comis_tools } from "./comis_tools.js"; ';

describe('the implicit comis_tools import', () => {
  it('JS and TS fragments get the import prefixed to their first code line', async () => {
    expect((await prepareScript('await comis_tools.read({ path: "a" });\n', 'js', 'a.js')).code).toBe(`${IMPORT}await comis_tools.read({ path: "a" });\n`);
    expect((await prepareScript('#!/usr/bin/env node\nawait comis_tools.read({});\n', 'js', 'a.mjs')).code).toBe(`#!/usr/bin/env node\n${IMPORT}await comis_tools.read({});\n`);
    const ts = await prepareScript('const r: unknown = await comis_tools.read({ path: "a" });\nconsole.log(r);\n', 'ts', 'a.ts');
    expect(ts.code).toMatch(/^import \{ comis_tools \} from "\.\/comis_tools\.js";/);
  });

  it('a script that imports, requires or declares comis_tools, CommonJS, or one that never names it is left as written', async () => {
    const asIs = [
      ['import { comis_tools } from "./comis_tools.js";\nawait comis_tools.read({});\n', 'a.js'],
      ["import { comis_tools as t } from './comis_tools.js';\nawait t.read({});\n", 'a.mjs'],
      ["const { comis_tools } = require('./comis_tools.js');\n", 'a.js'],
      ['const comis_tools = { read: () => 1 };\ncomis_tools.read();\n', 'a.js'],
      ['module.exports = () => comis_tools;\n', 'a.js'],
      ['comis_tools.read({});\n', 'a.cjs'],
      ["console.log('hello');\n", 'a.js'],
    ] as const;
    for (const [code, name] of asIs) expect((await prepareScript(code, 'js', name)).code, code).toBe(code);
  });

  it('Python: a fragment starts from the bootstrap; a script that imports the SDK runs as written', async () => {
    expect((await prepareScript('print(comis_tools.read({"path": "a"}))\n', 'py', 'a.py')).implicitSdk).toBe(true);
    for (const code of ['import comis_tools\nprint(comis_tools.read({}))\n', 'import json, comis_tools\n', 'from comis_tools import read\n', 'import comis_tools as ct\nct.read({})\n', "print('hi')\n"]) {
      expect((await prepareScript(code, 'py', 'a.py')).implicitSdk, code).toBeUndefined();
    }
  });

  it('the Python bootstrap binds the SDK in builtins, runs the script as __main__ under its own name, and a script name shadows it', () => {
    const dir = tempDir('implicit-py-');
    mkdirSync(join(dir, 'ws'));
    writeFileSync(join(dir, 'comis_tools.py'), 'def read(args):\n    return {"content": "from-sdk " + args["path"]}\n');
    writeFileSync(join(dir, 'script.py'), 'import sys\nprint(__name__, sys.argv[0].endswith("script.py"), comis_tools.read({"path": "x"})["content"])\ncomis_tools = "mine"\nprint(comis_tools)\n1/0\n');
    const res = spawnSync('python3', ['-E', '-s', '-B', '-c', pythonImplicitSdkBoot(dir, 'script.py')], { cwd: join(dir, 'ws'), encoding: 'utf8' });
    expect(res.stdout).toBe('__main__ True from-sdk x\nmine\n');
    // Tracebacks point into the script, at its own line numbers.
    expect(res.stderr).toContain(`File "${join(dir, 'script.py')}", line 5, in <module>`);
    expect(res.status).toBe(1);
  });
});
