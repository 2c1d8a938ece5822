/**
 * The one-shot repair, end to end: the built `comis orchestrate` against a
 * fake chat-completions server on 127.0.0.1 (the real OpenAI wire shape).
 * Each script appends a line to `attempts.txt` in the workspace before it
 * fails, so the number of spawns is read off the workspace.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { parseJson } from '../helpers/cli.js';
import { runComisAsync } from '../helpers/fake-search.js';
import { startFakeModel, type FakeModel } from '../helpers/fake-model.js';
import { makeHome } from '../helpers/orchestrate.js';

const BAD_IMPORT_PY = `with open('attempts.txt', 'a') as f:
    f.write('original\\n')
print('first-stdout')
import comis_tool
print(comis_tool.read({'path': 'notes.md'}))
`;

const REPAIRED_PY = `with open('attempts.txt', 'a') as f:
    f.write('repaired\\n')
import comis_tools
r = comis_tools.read({'path': 'notes.md'})
print('repaired-stdout', r['content'].strip())
`;

function setup(modelYaml: string | undefined) {
  const h = makeHome(modelYaml === undefined ? 'agents:\n  default: {}\n' : `agents:\n  default:\n${modelYaml}`);
  const ws = h.workspace();
  writeFileSync(join(ws, 'notes.md'), 'hello notes\n');
  return { h, ws };
}

const model = (fake: FakeModel, cls?: string, extra = ''): string => `    model:\n      baseUrl: ${fake.baseUrl}\n      name: tiny-coder\n${cls ? `      class: ${cls}\n` : ''}${extra}`;

const attempts = (ws: string): string[] => (existsSync(join(ws, 'attempts.txt')) ? readFileSync(join(ws, 'attempts.txt'), 'utf8').trim().split('\n') : []);
const fenced = (code: string): string => `Here is the fixed script:\n\n\`\`\`python\n${code}\`\`\`\n`;

describe('one-shot repair (comis orchestrate)', { timeout: 240_000 }, () => {
  it('small + bad import: one model request, two spawns, the repaired stdout, one success record with repair.outcome repaired', async () => {
    const fake = await startFakeModel({ answer: () => fenced(REPAIRED_PY) });
    const { h, ws } = setup(model(fake, 'small'));
    const script = h.script('bad.py', BAD_IMPORT_PY);
    const res = await runComisAsync(['orchestrate', script, '--session', 'rep-1', '--json'], { home: h.home });
    const body = parseJson(res.stdout);
    expect(body.status, res.stdout + res.stderr).toBe('ok');
    expect(body.result).toMatchObject({ outcome: 'success', exitCode: 0, stdout: 'repaired-stdout hello notes\n', repair: { attempted: true, class: 'bad_import', outcome: 'repaired' } });
    expect(body.result.failureClass).toBeUndefined();
    expect(res.status).toBe(0);
    expect(fake.requests).toHaveLength(1);
    // model.baseUrl and model.name: the request went to <baseUrl>/chat/completions with the configured model.
    expect(fake.requests[0]).toMatchObject({ method: 'POST', path: '/v1/chat/completions' });
    expect(fake.requests[0]!.json!.model).toBe('tiny-coder');
    expect(attempts(ws)).toEqual(['original', 'repaired']);
    // The repaired script's read went through the same lease: it is on the run's tally.
    expect(body.result.toolCalls).toEqual([{ tool: 'read', capability: 'orch:read', decision: 'allow', count: 1 }]);

    const explained = parseJson((await runComisAsync(['explain', 'rep-1', '--json'], { home: h.home })).stdout).result;
    expect(explained.runCount).toBe(1);
    expect(explained.orchestrate[0]).toMatchObject({ outcome: 'success', repair: { attempted: true, class: 'bad_import', outcome: 'repaired' } });
    expect(explained.likelyRootCause.code).toBe('none');
    const text = (await runComisAsync(['explain', 'rep-1'], { home: h.home })).stdout;
    expect(text).toContain('success (repaired: bad_import)');
    const fleet = parseJson((await runComisAsync(['fleet', '--json'], { home: h.home })).stdout).result;
    expect(fleet.findings.find((f: any) => f.code === 'orchestrate_efficiency').data).toMatchObject({ runs: 1, failedRuns: 0, repairsAttempted: 1, repairsSucceeded: 1 });
  });

  it('a JavaScript comis_tools misuse (not a function) is repaired too; no class set counts as small', async () => {
    const fake = await startFakeModel({ answer: () => "```js\nimport { comis_tools } from './comis_tools.js';\nconst r = await comis_tools.read({ path: 'notes.md' });\nconsole.log('js-repaired', r.content.trim());\n```" });
    const { h } = setup(model(fake));
    const script = h.script('misuse.mjs', "import { comis_tools } from './comis_tools.js';\nconst r = await comis_tools.reed({ path: 'notes.md' });\nconsole.log(r);\n");
    const body = parseJson((await runComisAsync(['orchestrate', script, '--json'], { home: h.home })).stdout);
    expect(body.result).toMatchObject({ outcome: 'success', stdout: 'js-repaired hello notes\n', repair: { attempted: true, class: 'comis_tools_misuse', outcome: 'repaired' } });
    expect(fake.requests).toHaveLength(1);
  });

  it('frontier (and mid): no model request, one spawn, the failure as it was', async () => {
    const fake = await startFakeModel({ answer: () => fenced(REPAIRED_PY) });
    for (const cls of ['frontier', 'mid']) {
      const { h, ws } = setup(model(fake, cls));
      const script = h.script('bad.py', BAD_IMPORT_PY);
      const res = await runComisAsync(['orchestrate', script, '--session', `big-${cls}`, '--json'], { home: h.home });
      expect(res.status).toBe(1);
      const body = parseJson(res.stdout);
      expect(body.result).toMatchObject({ outcome: 'failure', failureClass: 'nonzero_exit', exitCode: 1, stdout: 'first-stdout\n', repair: { attempted: false, class: 'bad_import', outcome: 'class_off' } });
      expect(body.result.stderrTail).toContain("ModuleNotFoundError: No module named 'comis_tool'");
      expect(attempts(ws)).toEqual(['original']);
      const explained = parseJson((await runComisAsync(['explain', `big-${cls}`, '--json'], { home: h.home })).stdout).result;
      expect(explained.likelyRootCause.nextSteps.join(' ')).toMatch(/No automatic repair \(bad_import\): the model class of agent "default" is mid or frontier/);
    }
    expect(fake.requests).toHaveLength(0);
  });

  it('a segfault and a timeout are not repaired: no model request, one spawn', async () => {
    const fake = await startFakeModel({ answer: () => fenced(REPAIRED_PY) });
    const { h, ws } = setup(model(fake, 'small'));
    const segv = h.script('segv.py', "with open('attempts.txt', 'a') as f:\n    f.write('segv\\n')\nimport sys\nsys.stderr.write('TypeError: looks recoverable\\n')\nsys.stderr.flush()\nimport ctypes\nctypes.string_at(0)\n");
    const a = parseJson((await runComisAsync(['orchestrate', segv, '--json'], { home: h.home })).stdout).result;
    expect(a).toMatchObject({ outcome: 'failure', exitCode: 139, repair: { attempted: false, class: null, outcome: 'not_recoverable' } });
    const slow = h.script('slow.py', "with open('attempts.txt', 'a') as f:\n    f.write('slow\\n')\nimport sys, time\nsys.stderr.write('SyntaxError: looks recoverable\\n')\nsys.stderr.flush()\ntime.sleep(30)\n");
    const b = parseJson((await runComisAsync(['orchestrate', slow, '--timeout-ms', '1500', '--json'], { home: h.home })).stdout).result;
    expect(b).toMatchObject({ outcome: 'failure', failureClass: 'timeout', repair: { attempted: false, class: null, outcome: 'not_recoverable' } });
    expect(fake.requests).toHaveLength(0);
    expect(attempts(ws)).toEqual(['segv', 'slow']);
  });

  it('repaired, then failed again: the ORIGINAL error, stdout and exit code; one request, two spawns, never a third', async () => {
    const second = "with open('attempts.txt', 'a') as f:\n    f.write('repaired\\n')\nprint('second-stdout')\nimport comis_toolz\n";
    const fake = await startFakeModel({ answer: () => fenced(second) });
    const { h, ws } = setup(model(fake, 'nano'));
    const script = h.script('bad.py', BAD_IMPORT_PY);
    const res = await runComisAsync(['orchestrate', script, '--session', 'again', '--json'], { home: h.home });
    expect(res.status).toBe(1);
    const r = parseJson(res.stdout).result;
    expect(r).toMatchObject({ outcome: 'failure', failureClass: 'nonzero_exit', exitCode: 1, stdout: 'first-stdout\n', repair: { attempted: true, class: 'bad_import', outcome: 'rerun_failed' } });
    expect(r.stderrTail).toContain("No module named 'comis_tool'");
    expect(r.stderrTail).not.toContain('comis_toolz');
    expect(fake.requests).toHaveLength(1);
    expect(attempts(ws)).toEqual(['original', 'repaired']);
    const explained = parseJson((await runComisAsync(['explain', 'again', '--json'], { home: h.home })).stdout).result;
    expect(explained.likelyRootCause.nextSteps.join(' ')).toMatch(/repaired script failed too, so this is the original error/);
    const fleet = parseJson((await runComisAsync(['fleet', '--json'], { home: h.home })).stdout).result;
    expect(fleet.findings.find((f: any) => f.code === 'orchestrate_efficiency').data).toMatchObject({ repairsAttempted: 1, repairsSucceeded: 0 });
  });

  it('an answer with no code, a 429 then a slow answer past model.timeoutMs: the original error, no second spawn', async () => {
    const fake = await startFakeModel();
    const { h, ws } = setup(model(fake, 'small', '      timeoutMs: 1000\n'));
    const script = h.script('bad.py', BAD_IMPORT_PY);
    fake.queue({ kind: 'answer', content: '' });
    const a = parseJson((await runComisAsync(['orchestrate', script, '--json'], { home: h.home })).stdout).result;
    expect(a).toMatchObject({ outcome: 'failure', repair: { attempted: true, outcome: 'no_fix' } });
    // model.timeoutMs: 1000 bounds the slow answer (after one 429 honoured by its Retry-After).
    fake.queue({ kind: 'error', status: 429, retryAfter: '0' }, { kind: 'slow', afterMs: 20_000, content: fenced(REPAIRED_PY) });
    const b = parseJson((await runComisAsync(['orchestrate', script, '--json'], { home: h.home })).stdout).result;
    expect(b).toMatchObject({ outcome: 'failure', failureClass: 'nonzero_exit', repair: { attempted: true, outcome: 'model_error' } });
    expect(b.stderrTail).toContain("No module named 'comis_tool'");
    expect(fake.requests).toHaveLength(3);
    expect(attempts(ws)).toEqual(['original', 'original']);
    const log = readFileSync(join(h.home, 'logs', 'comis.log'), 'utf8');
    expect(log).toContain('"repair":"model_error"');
    expect(log).toContain('model_timeout');
  });

  it('--no-repair turns it off for one run; with no model configured there is nothing to ask', async () => {
    const fake = await startFakeModel({ answer: () => fenced(REPAIRED_PY) });
    const { h, ws } = setup(model(fake, 'small'));
    const script = h.script('bad.py', BAD_IMPORT_PY);
    const a = parseJson((await runComisAsync(['orchestrate', script, '--no-repair', '--json'], { home: h.home })).stdout).result;
    expect(a).toMatchObject({ outcome: 'failure', repair: { attempted: false, class: 'bad_import', outcome: 'disabled' } });
    // The human form goes through the fast path: the same flag works there.
    const human = await runComisAsync(['orchestrate', script, '--no-repair'], { home: h.home });
    expect(human.status).toBe(1);
    expect(fake.requests).toHaveLength(0);
    expect(attempts(ws)).toEqual(['original', 'original']);

    const bare = setup(undefined);
    const s2 = bare.h.script('bad.py', BAD_IMPORT_PY);
    const c = parseJson((await runComisAsync(['orchestrate', s2, '--session', 'nomodel', '--json'], { home: bare.h.home })).stdout).result;
    expect(c).toMatchObject({ outcome: 'failure', repair: { attempted: false, class: 'bad_import', outcome: 'no_model' } });
    const explained = parseJson((await runComisAsync(['explain', 'nomodel', '--json'], { home: bare.h.home })).stdout).result;
    expect(explained.likelyRootCause.nextSteps.join(' ')).toMatch(/has no model \(agents\.default\.model\) to ask/);
    expect(explained.likelyRootCause.nextSteps.join(' ')).not.toMatch(/repair was tried|Small models get/i);
  });
  it("a bare model id (seed 001's `model: gpt-5.1`) asks OPENAI_BASE_URL with OPENAI_API_KEY; without it there is nothing to ask", async () => {
    const key = 'sk-bare-model-canary-91c2';
    const fake = await startFakeModel({ answer: () => fenced(REPAIRED_PY) });
    const { h, ws } = setup('    model: gpt-5.1\n');
    const script = h.script('bad.py', BAD_IMPORT_PY);
    // Control first: a name alone has no endpoint, so no model is asked and nothing leaves.
    const none = parseJson((await runComisAsync(['orchestrate', script, '--json'], { home: h.home })).stdout).result;
    expect(none).toMatchObject({ outcome: 'failure', repair: { attempted: false, class: 'bad_import', outcome: 'no_model' } });
    expect(fake.requests).toHaveLength(0);

    const res = await runComisAsync(['orchestrate', script, '--json'], { home: h.home, env: { OPENAI_BASE_URL: fake.baseUrl, OPENAI_API_KEY: key } });
    const body = parseJson(res.stdout);
    expect(body.result, res.stderr).toMatchObject({ outcome: 'success', stdout: 'repaired-stdout hello notes\n', repair: { attempted: true, class: 'bad_import', outcome: 'repaired' } });
    expect(fake.requests).toHaveLength(1);
    expect(fake.requests[0]).toMatchObject({ method: 'POST', path: '/v1/chat/completions' });
    expect(fake.requests[0]!.json!.model).toBe('gpt-5.1');
    expect(fake.requests[0]!.headers.authorization).toBe(`Bearer ${key}`);
    expect(attempts(ws)).toEqual(['original', 'original', 'repaired']);
    expect(res.stdout + res.stderr).not.toContain(key);

    // Not an http(s) URL: refused before anything runs, naming the variable and the key.
    const bad = await runComisAsync(['orchestrate', script, '--json'], { home: h.home, env: { OPENAI_BASE_URL: 'file:///etc/passwd' } });
    expect(bad.status).toBe(2);
    expect(parseJson(bad.stdout)).toMatchObject({ status: 'error', error: { code: 'CONFIG_INVALID' } });
    expect(bad.stdout).toContain('OPENAI_BASE_URL is not an http(s) URL; agents.default.model');
    expect(attempts(ws)).toHaveLength(3);
  });
});
