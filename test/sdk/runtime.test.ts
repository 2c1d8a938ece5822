/**
 * The SDK runtimes are real source files (src/lib/sdk/runtime/): the Python
 * one compiles and imports on its own, the TS one stays self-contained for
 * the jail, and the jq refusal reaches every flavour from the one table of
 * resultref/slice-policy.ts with the same verdicts.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { JQ_FORBIDDEN_SOURCE, jqFilterRefused } from '../../src/lib/resultref/slice-policy.js';
import { emitSdk } from '../../src/lib/sdk/emit.js';
import { writeSdkFiles } from '../../src/lib/sdk/files.js';
import { repoRoot } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp.js';

const RUNTIME = join(repoRoot, 'src/lib/sdk/runtime');
const PY_RUNTIME = join(RUNTIME, 'comis_tools_runtime.py');

/** Filters the SDK must refuse, and ordinary ones it must pass to jq. */
const REFUSED = [
  '$ENV',
  '$ENV.PATH',
  'env',
  'env.HOME',
  '[$ENV]',
  'import "a" as a; .',
  'include "x"; .',
  'input_filename',
  '$__loc__',
  '$__prog_args',
  'halt_error',
  'get_search_list',
  'modulemeta',
  'get_prog_origin',
  'get_jq_origin',
  'input_line_number',
];
const ALLOWED = ['.', '.id', 'select(.id == 7) | .id', '.environment', '.envs', '.imports', '$ENVX', 'map(.included)'];

/** Python without bytecode files next to the sources. */
function python(args: string[], cwd?: string): string {
  return execFileSync('python3', args, { cwd, encoding: 'utf8', env: { PATH: process.env.PATH, PYTHONDONTWRITEBYTECODE: '1', PYTHONPYCACHEPREFIX: tempDir() } });
}

describe('SDK runtime sources', () => {
  it('the Python runtime compiles with python3 -m py_compile', () => {
    const res = spawnSync('python3', ['-m', 'py_compile', PY_RUNTIME], { encoding: 'utf8', env: { PATH: process.env.PATH, PYTHONPYCACHEPREFIX: tempDir() } });
    expect(res.stderr).toBe('');
    expect(res.status).toBe(0);
  });

  it('the Python runtime imports on its own; its jq check refuses everything until the table is filled in, then follows the table', () => {
    const code = `
import importlib.util, json, re, sys
spec = importlib.util.spec_from_file_location("comis_tools_runtime", sys.argv[1])
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
def verdict(expr):
    try:
        m._check_jq(expr)
        return "allowed"
    except m.ComisToolError as e:
        return e.code
print(json.dumps({"tools": m.describe(), "placeholder": verdict(".")}))
m._JQ_FORBIDDEN = re.compile(sys.argv[2])
print(json.dumps({e: verdict(e) for e in json.loads(sys.argv[3])}))
`;
    const [first, second] = python(['-c', code, PY_RUNTIME, JQ_FORBIDDEN_SOURCE, JSON.stringify([...REFUSED, ...ALLOWED])])
      .trim()
      .split('\n');
    // Fail closed: the raw file, should it ever be loaded unfilled, lets no filter through.
    expect(JSON.parse(first!)).toEqual({ tools: [], placeholder: 'jq_refused' });
    const verdicts = JSON.parse(second!) as Record<string, string>;
    for (const e of REFUSED) expect(verdicts[e], e).toBe('jq_refused');
    for (const e of ALLOWED) expect(verdicts[e], e).toBe('allowed');
  });

  it('the emitted SDKs refuse exactly what slice-policy.ts refuses (Python and JS, through ResultRef.jq)', () => {
    for (const e of REFUSED) expect(jqFilterRefused(e), e).toBe(true);
    for (const e of ALLOWED) expect(jqFilterRefused(e), e).toBe(false);
    const exprs = [...REFUSED, ...ALLOWED];
    const expected = Object.fromEntries(exprs.map((e) => [e, jqFilterRefused(e) ? 'jq_refused' : 'ref_expired']));
    const dir = tempDir();
    writeSdkFiles(dir, emitSdk('all'));
    // An expired handle: a filter that passes the refusal stops at the expiry check, before any jq runs.
    const py = `
import json, sys, comis_tools
ref = comis_tools.ResultRef({"ref": "results/x.json", "kind": "json", "bytes": 0, "preview": "", "expiresAt": 0})
out = {}
for e in json.loads(sys.argv[1]):
    try:
        ref.jq(e)
        out[e] = "ran"
    except comis_tools.ComisToolError as err:
        out[e] = err.code
print(json.dumps(out))
`;
    expect(JSON.parse(python(['-c', py, JSON.stringify(exprs)], dir))).toEqual(expected);
    const js = `
const { ResultRef } = require(${JSON.stringify(join(dir, 'comis_tools.js'))});
const ref = new ResultRef({ ref: 'results/x.json', kind: 'json', bytes: 0, preview: '', expiresAt: 0 });
(async () => {
  const out = {};
  for (const e of JSON.parse(process.argv[1])) {
    try { await ref.jq(e); out[e] = 'ran'; } catch (err) { out[e] = err.code; }
  }
  process.stdout.write(JSON.stringify(out));
})();
`;
    expect(JSON.parse(execFileSync(process.execPath, ['-e', js, JSON.stringify(exprs)], { encoding: 'utf8' }))).toEqual(expected);
  });

  it('importing the JS SDK loads neither net nor child_process: the first tool call connects, the first slice spawns', () => {
    const dir = tempDir();
    writeSdkFiles(dir, emitSdk('all'));
    const js = `
const loaded = () => ['net', 'child_process'].filter((m) => process.moduleLoadList.includes('NativeModule ' + m));
const before = loaded();
const { comis_tools } = require(${JSON.stringify(join(dir, 'comis_tools.js'))});
const atImport = loaded();
comis_tools.describe();
const afterDescribe = loaded();
comis_tools.read({ path: 'x' }).then(
  () => process.stdout.write('unexpected'),
  (err) => process.stdout.write(JSON.stringify({ before, atImport, afterDescribe, afterCall: loaded(), code: err.code })),
);
`;
    // No socket in the environment: the call fails, but only after it loaded net to connect.
    const out = execFileSync(process.execPath, ['-e', js], { encoding: 'utf8', env: { PATH: process.env.PATH, COMIS_ORCH_SOCKET: join(dir, 'absent.sock'), COMIS_CAP_LEASE: 'x' } });
    const r = JSON.parse(out) as Record<string, unknown>;
    expect(r.before).toEqual([]);
    expect(r.atImport).toEqual([]);
    expect(r.afterDescribe).toEqual([]);
    expect(r.afterCall).toContain('net');
  });

  it('importing the Python SDK imports neither socket, subprocess nor tempfile: the first call or slice does', () => {
    const dir = tempDir();
    writeSdkFiles(dir, emitSdk('all'));
    const py = `
import json, sys
LAZY = {"socket", "subprocess", "tempfile"}
before = set(sys.modules)
import comis_tools
at_import = sorted(LAZY & (set(sys.modules) - before))
comis_tools.describe()
after_describe = sorted(LAZY & (set(sys.modules) - before))
try:
    comis_tools.read(path="x")
except Exception as err:
    code = getattr(err, "code", type(err).__name__)
print(json.dumps({"at_import": at_import, "after_describe": after_describe, "after_call": sorted(LAZY & (set(sys.modules) - before)), "code": code}))
`;
    const r = JSON.parse(execFileSync('python3', ['-c', py], { cwd: dir, encoding: 'utf8', env: { PATH: process.env.PATH, PYTHONDONTWRITEBYTECODE: '1', COMIS_ORCH_SOCKET: join(dir, 'absent.sock'), COMIS_CAP_LEASE: 'x' } })) as Record<
      string,
      unknown
    >;
    expect(r.at_import).toEqual([]);
    expect(r.after_describe).toEqual([]);
    expect(r.after_call).toContain('socket');
  });

  it('the jq refusal list lives in slice-policy.ts only', () => {
    const hits: string[] = [];
    const walk = (dir: string): void => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) walk(path);
        else if (/\.(ts|py|mjs|js)$/.test(entry.name) && readFileSync(path, 'utf8').includes('get_prog_origin')) hits.push(path.slice(repoRoot.length + 1));
      }
    };
    walk(join(repoRoot, 'src'));
    walk(join(repoRoot, 'scripts'));
    expect(hits).toEqual(['src/lib/resultref/slice-policy.ts']);
  });

  it('the TS runtime imports node: builtins only (it runs in the jail, next to nothing else)', () => {
    const source = readFileSync(join(RUNTIME, 'comis_tools_runtime.ts'), 'utf8');
    const specifiers = [...source.matchAll(/^\s*(?:import|export)\b[^'"]*?from\s+['"]([^'"]+)['"]/gm), ...source.matchAll(/\b(?:import|require)\(\s*['"]([^'"]+)['"]/g)].map((m) => m[1]);
    expect(specifiers.length).toBeGreaterThan(0);
    expect(specifiers.filter((s) => !s!.startsWith('node:'))).toEqual([]);
  });
});
