import { execFileSync, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { TOOL_MAP } from '../../src/lib/capabilities/tool-map.js';
import { emitSdk } from '../../src/lib/sdk/emit.js';
import { checkSdkFiles, writeSdkFiles } from '../../src/lib/sdk/files.js';
import { repoRoot } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp.js';

describe('SDK emitter', () => {
  it('is deterministic', () => {
    const a = emitSdk('all');
    const b = emitSdk('all');
    expect([...a.keys()]).toEqual(['comis_tools.ts', 'comis_tools.js', 'comis_tools.d.ts', 'comis_tools.py']);
    for (const [name, content] of a) expect(b.get(name)).toBe(content);
  });

  it('emits only the asked flavour', () => {
    expect([...emitSdk('py').keys()]).toEqual(['comis_tools.py']);
    expect([...emitSdk('js').keys()]).toEqual(['comis_tools.js', 'comis_tools.d.ts']);
    expect([...emitSdk('ts').keys()]).toEqual(['comis_tools.ts']);
  });

  it('has one method per table entry in every flavour', () => {
    const files = emitSdk('all');
    for (const tool of TOOL_MAP) {
      if (tool.sdkArgs) {
        // Positional arguments (checkpoint(state), resume()), sent as {name: value}.
        const args = tool.sdkArgs.join(', ');
        expect(files.get('comis_tools.js')).toContain(`${tool.name}: (${args}) => invoke(${JSON.stringify(tool.name)}, ${args ? `{ ${args} }` : '{}'})`);
        expect(files.get('comis_tools.d.ts')).toMatch(new RegExp(`\\b${tool.name}\\(${tool.sdkArgs.map((a) => `${a}: \\w+Params\\["${a}"\\]`).join(', ')}\\): Promise<`));
        expect(files.get('comis_tools.py')).toContain(`def ${tool.name}(${args}):`);
        continue;
      }
      expect(files.get('comis_tools.ts')).toContain(`${tool.name}: (params`);
      // Outward sends take the operation id as a second argument (the upstream form).
      if (tool.operationId) expect(files.get('comis_tools.js')).toContain(`${tool.name}: (params, operationId) => invokeOutward(${JSON.stringify(tool.name)}, params, operationId)`);
      else expect(files.get('comis_tools.js')).toContain(`${tool.name}: (params) => invoke(${JSON.stringify(tool.name)}`);
      expect(files.get('comis_tools.d.ts')).toContain(`${tool.name}(params:`);
      expect(files.get('comis_tools.py')).toContain(`def ${tool.name}(params=None`);
    }
    // The positional ones exist (a control: the branch above is taken).
    expect(TOOL_MAP.filter((t) => t.sdkArgs).map((t) => t.name)).toEqual(['checkpoint', 'resume']);
  });

  it('type-checks: the .ts source and a script using it, and a JS script against the .d.ts', () => {
    const dir = tempDir();
    writeSdkFiles(dir, emitSdk('all'));
    writeFileSync(join(dir, 'package.json'), '{"type":"module"}\n');
    writeFileSync(
      join(dir, 'script.ts'),
      `import { comis_tools, ResultRef, type ReadResult } from './comis_tools.js';
const r: ReadResult = await comis_tools.read({ path: 'notes.md', offset: 0, limit: 10 });
const text: string = r instanceof ResultRef ? await r.read(0, 10) : r.content;
const g = await comis_tools.grep({ pattern: 'TODO', glob: '**/*.md' });
const first: number | undefined = g instanceof ResultRef ? (await g.grep('TODO'))[0]?.line : g.matches[0]?.line;
if (g instanceof ResultRef) {
  const rows: Array<Record<string, unknown>> | { error: string } = await g.sql(\`SELECT * FROM read_json_auto('\${g.ref}') LIMIT 5\`);
  const v: unknown = await g.jq('.path');
  console.log(Array.isArray(rows) ? rows.length : rows.error, v, await g.jsonpath('$.path'), g.rows, g.kind);
}
const w = await comis_tools.write({ path: 'out.md', content: text });
const d = comis_tools.describe('read');
console.log(first, w.bytes, d?.params, comis_tools.describe().map((t) => t.capability));
`,
    );
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { strict: true, module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', noEmit: true, types: ['node'], typeRoots: [join(repoRoot, 'node_modules/@types')] },
        files: ['script.ts', 'comis_tools.ts'],
      }),
    );
    const tsc = join(repoRoot, 'node_modules/typescript/bin/tsc');
    const res = spawnSync(process.execPath, [tsc, '-p', join(dir, 'tsconfig.json')], { encoding: 'utf8' });
    expect(res.stdout + res.stderr).toBe('');
    expect(res.status).toBe(0);

    // A deliberately wrong call must fail the type check: the types are real.
    writeFileSync(join(dir, 'script.ts'), `import { comis_tools } from './comis_tools.js';\nawait comis_tools.read({ path: 1 });\n`);
    const bad = spawnSync(process.execPath, [tsc, '-p', join(dir, 'tsconfig.json')], { encoding: 'utf8' });
    expect(bad.status).not.toBe(0);
    expect(bad.stdout).toMatch(/not assignable to type 'string'/);
  });

  it('the .d.ts type-checks JS usage with checkJs', () => {
    const dir = tempDir();
    writeSdkFiles(dir, emitSdk('js'));
    writeFileSync(join(dir, 'package.json'), '{"type":"module"}\n');
    writeFileSync(join(dir, 'script.mjs'), `import { comis_tools, ResultRef } from './comis_tools.js';\nconst r = await comis_tools.read({ path: 'a' });\nconst n = r instanceof ResultRef ? r.bytes : r.totalLines;\nconsole.log(n);\n`);
    const tsc = join(repoRoot, 'node_modules/typescript/bin/tsc');
    const res = spawnSync(
      process.execPath,
      [tsc, '--noEmit', '--allowJs', '--checkJs', '--strict', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022', '--types', 'node', '--typeRoots', join(repoRoot, 'node_modules/@types'), join(dir, 'script.mjs')],
      { encoding: 'utf8' },
    );
    expect(res.stdout + res.stderr).toBe('');
  });

  it('the JS runtime loads from both ESM and CommonJS, and describe() returns the table', () => {
    const dir = tempDir();
    writeSdkFiles(dir, emitSdk('js'));
    const expected = TOOL_MAP.map((t) => ({ name: t.name, capability: t.capability, summary: t.summary }));
    const cjs = execFileSync(process.execPath, ['-e', `process.stdout.write(JSON.stringify(require(${JSON.stringify(join(dir, 'comis_tools.js'))}).comis_tools.describe()))`], { encoding: 'utf8' });
    expect(JSON.parse(cjs)).toEqual(expected);
    writeFileSync(join(dir, 'esm.mjs'), `import { comis_tools } from './comis_tools.js';\nprocess.stdout.write(JSON.stringify(comis_tools.describe('grep')));\n`);
    const esm = JSON.parse(execFileSync(process.execPath, [join(dir, 'esm.mjs')], { encoding: 'utf8' }));
    expect(esm).toMatchObject({ name: 'grep', capability: 'orch:read' });
    expect(esm.params.required).toEqual(['pattern']);
  });

  it('the JS runtime refuses to run outside a jail with a clear error', () => {
    const dir = tempDir();
    writeSdkFiles(dir, emitSdk('js'));
    writeFileSync(join(dir, 'esm.mjs'), `import { comis_tools } from './comis_tools.js';\ntry { await comis_tools.read({ path: 'x' }); } catch (e) { process.stdout.write(e.code + ': ' + e.message); }\n`);
    const out = execFileSync(process.execPath, [join(dir, 'esm.mjs')], { encoding: 'utf8', env: { PATH: process.env.PATH } });
    expect(out).toMatch(/^lease_absent: COMIS_ORCH_SOCKET and COMIS_CAP_LEASE are not set/);
  });

  it('the Python module imports with python3 and its describe() returns the table', () => {
    const dir = tempDir();
    writeSdkFiles(dir, emitSdk('py'));
    const out = execFileSync('python3', ['-c', 'import json, comis_tools; print(json.dumps(comis_tools.describe())); print(json.dumps(comis_tools.describe("read")["params"]["required"]))'], {
      cwd: dir,
      encoding: 'utf8',
    });
    const [list, required] = out.trim().split('\n');
    expect(JSON.parse(list!)).toEqual(TOOL_MAP.map((t) => ({ name: t.name, capability: t.capability, summary: t.summary })));
    expect(JSON.parse(required!)).toEqual(['path']);
  });

  it('check reports missing and changed files with the first differing line', () => {
    const dir = tempDir();
    const files = emitSdk('all');
    writeSdkFiles(dir, files);
    expect(checkSdkFiles(dir, files)).toEqual([]);
    const ts = files.get('comis_tools.ts')!.split('\n');
    ts[4] = '// tampered';
    writeFileSync(join(dir, 'comis_tools.ts'), ts.join('\n'));
    writeFileSync(join(dir, 'comis_tools.py'), '');
    const drift = checkSdkFiles(dir, files);
    expect(drift).toEqual([
      { file: 'comis_tools.ts', status: 'changed', line: 5 },
      { file: 'comis_tools.py', status: 'changed', line: 1 },
    ]);
    expect(checkSdkFiles(tempDir(), emitSdk('py'))).toEqual([{ file: 'comis_tools.py', status: 'missing' }]);
  });
});
