import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';

import { SUCCESS_LINE, parseJson } from '../helpers/cli.js';
import { makeHome } from '../helpers/orchestrate.js';

const CANARY = 'CANARY-7f3a-intermediate-value';

describe('comis orchestrate', () => {
  it('TS: chains tools and returns only stdout; intermediate values never appear', () => {
    const h = makeHome();
    const ws = h.workspace();
    writeFileSync(join(ws, 'notes.md'), `line one\nTODO: ship it\nsecret ${CANARY}\nTODO: test it\n`);
    const script = h.script(
      'job.ts',
      `import { comis_tools } from './comis_tools.js';
const hits = await comis_tools.grep({ pattern: 'TODO' });
const file = await comis_tools.read({ path: hits.matches[0]!.path });
const count: number = hits.matches.length;
console.log(\`todos=\${count} lines=\${file.totalLines}\`);
`,
    );
    const res = h.run(['orchestrate', script]);
    expect(res.stderr).toMatch(SUCCESS_LINE);
    expect(res.status).toBe(0);
    expect(res.stdout).toBe('todos=2 lines=4\n');
    expect(res.stdout + res.stderr).not.toContain(CANARY);
  });

  // As root the workspace of a temp home sits under a 0700 directory, so its bind is staged; the stage (and the
  // DuckDB child's directory, bound into its own jail) once went under TMPDIR, which a private TMPDIR put out of
  // the jail uid's reach: bubblewrap failed and the run was spawn_fail. Not root nothing is staged: it must just work.
  it('runs with a private 0700 TMPDIR, tools and a .sql() slice included, and leaves nothing in it', () => {
    const h = makeHome();
    const ws = h.workspace();
    const rows = Array.from({ length: 30_000 }, (_, i) => JSON.stringify({ id: i, price: i % 1000, pad: 'x'.repeat(80) }));
    writeFileSync(join(ws, 'data.jsonl'), `${rows.join('\n')}\n`);
    const priv = join(h.home, 'private-tmp');
    mkdirSync(priv, { mode: 0o700 });
    const script = h.script(
      'private-tmp.ts',
      `import { comis_tools, ResultRef } from './comis_tools.js';
const ref = await comis_tools.read({ path: 'data.jsonl' });
if (!(ref instanceof ResultRef)) throw new Error('expected a ResultRef');
const top = await ref.sql(\`SELECT max(price) AS m FROM read_json_auto('\${ref.ref}')\`);
console.log('ok', JSON.stringify(top));
`,
    );
    const res = h.run(['orchestrate', script], { env: { TMPDIR: priv } });
    expect(res.stderr).toMatch(SUCCESS_LINE);
    expect(res.status).toBe(0);
    expect(res.stdout).toBe('ok [{"m":999}]\n');
    expect(readdirSync(priv)).toEqual([]);
  });

  it('JS follows Node module rules: .mjs, .cjs, and .js detected as ESM or CommonJS', () => {
    const h = makeHome();
    const cases: [string, string][] = [
      ['a.mjs', `import { comis_tools } from './comis_tools.js';\nconsole.log('mjs', comis_tools.describe().length);`],
      ['b.cjs', `const { comis_tools } = require('./comis_tools.js');\nconsole.log('cjs', comis_tools.describe().length);`],
      ['c.js', `import { comis_tools } from './comis_tools.js';\nconsole.log('esm-js', comis_tools.describe().length);`],
      ['d.js', `const { comis_tools } = require('./comis_tools.js');\nconsole.log('cjs-js', typeof module, comis_tools.describe().length);`],
    ];
    for (const [name, code] of cases) {
      const res = h.run(['orchestrate', h.script(name, code)]);
      expect(res.stderr, name).toMatch(SUCCESS_LINE);
      expect(res.stdout, name).toMatch(/^(mjs|cjs|esm-js|cjs-js( object)?) 14\n$/);
    }
  });

  it('Python: synchronous calls over the same socket; stdin with --lang', () => {
    const h = makeHome();
    writeFileSync(join(h.workspace(), 'data.txt'), 'alpha\nbeta\ngamma\n');
    const code = `import comis_tools\nr = comis_tools.read({"path": "data.txt", "offset": 1, "limit": 1})\nprint(r["content"], r["totalLines"])\n`;
    const res = h.run(['orchestrate', h.script('job.py', code)]);
    expect(res.stderr).toMatch(SUCCESS_LINE);
    expect(res.stdout).toBe('beta 3\n');
    const piped = h.run(['orchestrate', '-', '--lang', 'py'], { input: code });
    expect(piped.stdout).toBe('beta 3\n');
    const noLang = h.run(['orchestrate', '-'], { input: code });
    expect(noLang.status).toBe(2);
    expect(noLang.stderr).toContain('--lang');
  });

  it('--json carries the run record; the run is stored content-free', () => {
    const h = makeHome();
    writeFileSync(join(h.workspace(), 'a.txt'), `${CANARY}\n`);
    const script = h.script('j.mjs', `import { comis_tools } from './comis_tools.js';\nawait comis_tools.read({ path: 'a.txt' });\nconsole.log('ok');`);
    const res = h.run(['orchestrate', script, '--json', '--session', 'sess-1']);
    expect(res.status).toBe(0);
    const body = parseJson(res.stdout);
    expect(body).toMatchObject({
      status: 'ok',
      result: {
        outcome: 'success',
        exitCode: 0,
        sessionKey: 'sess-1',
        agentId: 'default',
        stdout: 'ok\n',
        toolCalls: [{ tool: 'read', capability: 'orch:read', decision: 'allow', count: 1 }],
      },
    });
    expect(body.result.runId).toMatch(/^r-/);
    expect(body.result.leaseId).toMatch(/^l-/);
    const db = new Database(join(h.home, 'comis.db'), { readonly: true });
    const run = db.prepare('SELECT * FROM runs WHERE run_id = ?').get(body.result.runId) as Record<string, unknown>;
    expect(run).toMatchObject({ session_key: 'sess-1', agent_id: 'default', lease_id: body.result.leaseId, outcome: 'success', exit_code: 0, failure_class: null });
    const tallies = db.prepare('SELECT tool, capability, decision, count FROM run_tool_calls WHERE run_id = ?').all(body.result.runId);
    expect(tallies).toEqual([{ tool: 'read', capability: 'orch:read', decision: 'allow', count: 1 }]);
    const audit = db.prepare('SELECT * FROM audit_events WHERE lease_id = ?').all(body.result.leaseId);
    expect(audit).toHaveLength(1);
    db.close();
    expect(readFileSync(join(h.home, 'comis.db')).includes(CANARY)).toBe(false);
  });

  it("a failing script: exit 1, failure class and stderr tail on stderr, stdout still only the script's", () => {
    const h = makeHome();
    const res = h.run(['orchestrate', h.script('bad.mjs', `console.log('partial');\nconst x = ;\n`)]);
    expect(res.status).toBe(1);
    expect(res.stdout).toBe('');
    expect(res.stderr).toMatch(/failed: nonzero_exit, exit code 1/);
    expect(res.stderr).toMatch(/SyntaxError/);
    const thrown = h.run(['orchestrate', h.script('t.mjs', `console.log('before');\nthrow new Error('boom here');\n`), '--json']);
    expect(thrown.status).toBe(1);
    expect(parseJson(thrown.stdout)).toMatchObject({ status: 'fail', result: { outcome: 'failure', failureClass: 'nonzero_exit', stdout: 'before\n', stderrTail: expect.stringContaining('boom here') } });
  });

  it('a TypeScript syntax error is refused before running, naming the line', () => {
    const h = makeHome();
    const res = h.run(['orchestrate', h.script('bad.ts', 'const a: number = ;\n')]);
    expect(res.status).toBe(2);
    expect(res.stderr).toMatch(/bad\.ts:1:19/);
  });

  it('timeout and stdout flood end as failed runs with their class', () => {
    const h = makeHome();
    const slow = h.run(['orchestrate', h.script('slow.mjs', 'setInterval(() => {}, 1000);'), '--timeout-ms', '1500', '--json']);
    expect(slow.status).toBe(1);
    expect(parseJson(slow.stdout).result).toMatchObject({ outcome: 'failure', failureClass: 'timeout' });
    // A flood that respects back-pressure (as console.log to a pipe does over time) hits the hard cap.
    const flood = h.run(['orchestrate', h.script('flood.mjs', "const s = 'x'.repeat(65536); (function w() { while (process.stdout.write(s)); process.stdout.once('drain', w); })();"), '--json']);
    expect(flood.status).toBe(1);
    const body = parseJson(flood.stdout);
    expect(body.result.failureClass).toBe('stdout_cap');
    expect(body.result.stdout.length).toBeLessThan(40_000);
    expect(body.result.stdoutTruncated).toBe(true);
    const pyFlood = h.run(['orchestrate', h.script('flood.py', "import sys\nwhile True:\n    sys.stdout.write('y' * 65536)\n"), '--json']);
    expect(parseJson(pyFlood.stdout).result.failureClass).toBe('stdout_cap');
  });

  it('bounds what re-enters: head and tail kept with a marker', () => {
    const h = makeHome();
    const res = h.run(['orchestrate', h.script('big.mjs', "console.log('HEAD' + 'a'.repeat(100000) + 'TAIL');")]);
    expect(res.status).toBe(0);
    expect(res.stdout.length).toBeLessThan(31_000);
    expect(res.stdout.startsWith('HEAD')).toBe(true);
    expect(res.stdout.trimEnd().endsWith('TAIL')).toBe(true);
    expect(res.stdout).toMatch(/characters of stdout omitted by comis/);
  });

  it('an assistant agent gets no orchestrate: refused before anything runs, naming the profile and the fix', () => {
    const h = makeHome('agents:\n  helper:\n    autonomy:\n      profile: assistant\n');
    const marker = join(h.workspace('helper'), 'ran.txt');
    const script = h.script('w.mjs', `import { writeFileSync } from 'node:fs';\nwriteFileSync('ran.txt', 'x');\nconsole.log('ran');`);
    const res = h.run(['orchestrate', script, '--agent', 'helper']);
    expect(res.status).toBe(4);
    expect(res.stdout).toBe('');
    expect(res.stderr).toMatch(/Error \[CAPABILITY_DENIED\]: Agent "helper" has profile assistant, which holds no capabilities and does not get the orchestrate tool/);
    expect(res.stderr).toContain(`agents.helper.autonomy.profile: standard (or unattended, max) in ${join(h.home, 'config.yaml')}`);
    expect(existsSync(marker)).toBe(false);
    const json = h.run(['orchestrate', script, '--agent', 'helper', '--json']);
    expect(parseJson(json.stdout)).toMatchObject({ status: 'error', error: { code: 'CAPABILITY_DENIED', details: { profile: 'assistant' } } });
    // Positive control: the same script under a standard agent runs and leaves its marker.
    const ok = makeHome('agents:\n  helper:\n    autonomy:\n      profile: standard\n');
    expect(ok.run(['orchestrate', ok.script('w.mjs', `import { writeFileSync } from 'node:fs';\nwriteFileSync('ran.txt', 'x');\nconsole.log('ran');`), '--agent', 'helper']).stdout).toBe('ran\n');
    expect(existsSync(join(ok.workspace('helper'), 'ran.txt'))).toBe(true);
  });

  it('the write surface is off by default and on with autonomy.write; writes land in results/writes and are reaped', () => {
    const script = `import { comis_tools } from './comis_tools.js';\nimport { readFileSync } from 'node:fs';\nconst w = await comis_tools.write({ path: 'out/report.md', content: 'hello' });\nconsole.log(w.path, readFileSync(w.path, 'utf8'));`;
    const off = makeHome();
    const denied = off.run(['orchestrate', off.script('w.mjs', script)]);
    expect(denied.status).toBe(4);
    expect(denied.stderr).toContain('autonomy.write: true');
    const on = makeHome('agents:\n  default:\n    autonomy:\n      write: true\n');
    const ok = on.run(['orchestrate', on.script('w.mjs', script)]);
    expect(ok.stderr).toMatch(SUCCESS_LINE);
    expect(ok.stdout).toBe('results/writes/out/report.md hello\n');
    const again = on.run(['orchestrate', on.script('r.mjs', `import { existsSync } from 'node:fs';\nconsole.log(existsSync('results/writes/out/report.md'));`)]);
    expect(again.stdout).toBe('false\n');
  });

  it('the workspace persists between runs', () => {
    const h = makeHome();
    expect(h.run(['orchestrate', h.script('a.mjs', `import { writeFileSync } from 'node:fs';\nwriteFileSync('state.json', '{"n":41}');`)]).status).toBe(0);
    const res = h.run(['orchestrate', h.script('b.mjs', `import { comis_tools } from './comis_tools.js';\nconst r = await comis_tools.read({ path: 'state.json' });\nconsole.log(JSON.parse(r.content).n + 1);`)]);
    expect(res.stdout).toBe('42\n');
  });

  it('approvals: refused without a TTY unless --yes', () => {
    const h = makeHome('agents:\n  default:\n    autonomy:\n      approvals: true\n');
    const script = h.script('a.mjs', "console.log('ran');");
    const refused = h.run(['orchestrate', script]);
    expect(refused.status).toBe(4);
    expect(refused.stderr).toMatch(/APPROVAL_REQUIRED/);
    expect(refused.stderr).toContain('--yes');
    expect(h.run(['orchestrate', script, '--yes']).stdout).toBe('ran\n');
  });

  it('an invalid config is reported with file and line, and nothing runs', () => {
    const h = makeHome('agents:\n  default:\n    autonomy:\n      profile: root\n');
    const res = h.run(['orchestrate', h.script('a.mjs', "console.log('ran');")]);
    expect(res.status).toBe(2);
    expect(res.stdout).toBe('');
    expect(res.stderr).toMatch(/config\.yaml:4:16 agents\.default\.autonomy\.profile: expected one of/);
  });

  it('the lease bearer never appears in what comis prints', () => {
    const h = makeHome();
    const res = h.run(['orchestrate', h.script('leak.mjs', 'console.error(process.env.COMIS_CAP_LEASE); process.exit(3);'), '--json']);
    const body = parseJson(res.stdout);
    expect(body.result.exitCode).toBe(3);
    expect(body.result.stderrTail).toContain('[REDACTED]');
    expect(body.result.stderrTail).not.toMatch(/[A-Za-z0-9_-]{43}/);
  });
});

describe('the SDK the runner mounts', () => {
  it('is byte-identical to what `comis sdk emit` writes', () => {
    const h = makeHome();
    const out = join(h.home, 'sdk-out');
    expect(h.run(['sdk', 'emit', '--out', out]).status).toBe(0);
    const names = ['comis_tools.ts', 'comis_tools.js', 'comis_tools.d.ts', 'comis_tools.py'];
    const res = h.run([
      'orchestrate',
      h.script(
        'hash.mjs',
        `import { createHash } from 'node:crypto';\nimport { readFileSync } from 'node:fs';\nfor (const n of ${JSON.stringify(names)}) console.log(n, createHash('sha256').update(readFileSync(new URL('./' + n, import.meta.url))).digest('hex'));`,
      ),
    ]);
    expect(res.status).toBe(0);
    const expected = names
      .map(
        (n) =>
          `${n} ${createHash('sha256')
            .update(readFileSync(join(out, n)))
            .digest('hex')}`,
      )
      .join('\n');
    expect(res.stdout.trim()).toBe(expected);
  });
});

describe('orchestrate output a person expects', () => {
  const bigRead = `import { comis_tools, ResultRef } from './comis_tools.js';\nconst r = await comis_tools.read({ path: 'big.txt' });\nconsole.log(r instanceof ResultRef ? 'ref' : 'inline');`;

  it('a success ends with one stderr line: run id, duration, ResultRefs and savings, the generated session, explain --last; --quiet drops it', () => {
    const h = makeHome();
    writeFileSync(join(h.workspace(), 'big.txt'), 'x'.repeat(99) + '\n'.repeat(1) + 'line\n'.repeat(20_000));
    const res = h.run(['orchestrate', h.script('big.mjs', bigRead)]);
    expect(res.status, res.stderr).toBe(0);
    expect(res.stdout).toBe('ref\n');
    expect(res.stderr).toMatch(SUCCESS_LINE);
    expect(res.stderr).toMatch(/^comis: run (r-[0-9a-f]+) ok in \d+ ms, 1 ResultRef \(97\.8 KB, ~[\d,]+ tokens kept out\), session (s-[a-z0-9-]+) · comis explain --last\n$/);
    // The session it names is the one the run was recorded under.
    const session = /session (s-[a-z0-9-]+)/.exec(res.stderr)![1]!;
    const explained = h.run(['explain', session, '--json']);
    expect(explained.status, explained.stderr).toBe(0);
    // A given session is the caller's own: not repeated.
    const named = h.run(['orchestrate', '--session', 'mine', h.script('hi.mjs', `console.log('hi')`)]);
    expect(named.stderr).toMatch(/^comis: run r-[0-9a-f]+ ok in \d+ ms · comis explain --last\n$/);
    const quiet = h.run(['orchestrate', '--quiet', h.script('hi2.mjs', `console.log('hi')`)]);
    expect(quiet.stdout).toBe('hi\n');
    expect(quiet.stderr).toBe('');
    // --json carries the same facts in the envelope and writes nothing to stderr.
    const json = h.run(['orchestrate', '--json', h.script('hi3.mjs', `console.log('hi')`)]);
    expect(json.stderr).toBe('');
    expect(parseJson(json.stdout).result.outcome).toBe('success');
  });

  it('--timeout-ms: 0 means the configured default; below 100 or above 600000 is refused with the range, in both CLI paths', () => {
    const h = makeHome();
    const hi = h.script('t.mjs', `console.log('ok')`);
    const zero = h.run(['orchestrate', '--timeout-ms', '0', '--json', hi]);
    expect(zero.status, zero.stderr).toBe(0);
    expect(parseJson(zero.stdout).result.timeoutMs).toBe(60_000);
    for (const args of [
      ['--timeout-ms', '5', hi],
      ['--timeout-ms', '5', '--verbose', hi],
    ]) {
      const low = h.run(['orchestrate', ...args]);
      expect(low.status).toBe(2);
      expect(low.stderr).toContain('--timeout-ms 5 is below the 100 ms minimum');
      expect(low.stderr).toContain('or 0 for the agent');
    }
    const high = h.run(['orchestrate', '--timeout-ms', '700000', hi]);
    expect(high.status).toBe(2);
    expect(high.stderr).toMatch(/Parsing --timeout-ms: Expected an integer less than or equal to 600000 but received: 700000/);
    const word = h.run(['orchestrate', '--timeout-ms', 'soon', '--json', hi]);
    expect(word.status).toBe(2);
    expect(parseJson(word.stdout).error.message).toBe('Parsing --timeout-ms: Expected an integer but received: soon');
  });
});
