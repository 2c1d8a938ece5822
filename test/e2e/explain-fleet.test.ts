/**
 * `comis explain` and `comis fleet` through the built bin/comis, in an
 * isolated COMIS_HOME. Two halves:
 *  - stores populated with recordRun, exactly as the runner records (every
 *    kind of run, including spawn_fail, which the CLI cannot provoke on a
 *    working host);
 *  - runs produced by `comis orchestrate` itself, then explained.
 * Run `npm run build:fast` first.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { openStore } from '../../src/lib/store/store.js';
import { parseJson, repoRoot, runComis } from '../helpers/cli.js';
import { makeHome } from '../helpers/orchestrate.js';
import { tempDir } from '../helpers/temp.js';
import { schemaValidator } from '../obs/schema.js';
import { seedRun, type RunKind } from '../obs/seed.js';

const validateExplain = schemaValidator('explain');
const validateFleet = schemaValidator('fleet');

const KINDS: { kind: RunKind; failureClass?: string; exitCode: number | null; signal: string }[] = [
  { kind: 'success', exitCode: 0, signal: 'none' },
  { kind: 'timeout', failureClass: 'timeout', exitCode: 137, signal: 'timeout' },
  { kind: 'stdout_cap', failureClass: 'stdout_cap', exitCode: 137, signal: 'stdout_cap' },
  { kind: 'nonzero_exit', failureClass: 'nonzero_exit', exitCode: 3, signal: 'nonzero_exit' },
  { kind: 'deny', failureClass: 'nonzero_exit', exitCode: 1, signal: 'deny' },
  { kind: 'spawn_fail', failureClass: 'spawn_fail', exitCode: null, signal: 'spawn_fail' },
];

/** A home whose store holds one session per kind of run (sess-<kind>), recorded a minute apart. */
function populatedHome(): { home: string; runIds: Record<string, string> } {
  const home = tempDir('comis-home-');
  const store = openStore({ home });
  const runIds: Record<string, string> = {};
  const t0 = Date.now() - 60 * 60_000;
  KINDS.forEach(({ kind }, i) => {
    runIds[kind] = seedRun(store.db, kind, { sessionKey: `sess-${kind}`, startedAt: t0 + i * 60_000 }).run.runId;
  });
  seedRun(store.db, 'success', { sessionKey: 'sess-refs', startedAt: t0 - 60_000, refs: { count: 3, bytes: 122_880 }, savings: { estSavedTokens: 30_208, savedRatio: 0.98 } });
  store.close();
  return { home, runIds };
}

describe('comis explain / fleet over a recorded store', () => {
  it('each kind of run gives the documented entry and verdict, identical across calls, valid against the published schema', () => {
    const { home, runIds } = populatedHome();
    for (const { kind, failureClass, exitCode, signal } of KINDS) {
      const res = runComis(['explain', `sess-${kind}`, '--json'], { home });
      expect(res.status, `${kind}: ${res.stderr}`).toBe(0);
      expect(res.stderr).toBe('');
      const body = parseJson(res.stdout);
      validateExplain(body);
      const entry = body.result.orchestrate[0];
      expect(entry.runId).toBe(runIds[kind]);
      expect(entry.leaseId).toBe(`l-${runIds[kind]!.slice(2)}`);
      expect(entry.outcome).toBe(failureClass ? 'failure' : 'success');
      expect(entry.exitCode).toBe(exitCode);
      expect(entry.failureClass).toBe(failureClass);
      expect(body.result.likelyRootCause.signal).toBe(signal);
      expect(body.result.likelyRootCause.code).toBe(signal === 'none' ? 'none' : 'orchestrate_failed');
      if (failureClass && signal !== 'deny') expect(body.result.likelyRootCause.detail).toContain(`(${failureClass})`);
      if (kind === 'deny') {
        expect(entry.toolCalls).toEqual([{ tool: 'write', capability: 'orch:write', decision: 'deny', count: 1 }]);
        expect(body.result.likelyRootCause).toMatchObject({ capability: 'orch:write', reason: 'surface_disabled' });
      }
      // Same store, same verdict: byte-identical output on a second call, in both renderings.
      expect(runComis(['explain', `sess-${kind}`, '--json'], { home }).stdout).toBe(res.stdout);
      const text = runComis(['explain', `sess-${kind}`], { home });
      expect(text.status).toBe(0);
      expect(text.stdout.split('\n')[0]).toMatch(signal === 'none' ? /^Verdict: no failure/ : new RegExp(`^Verdict: orchestrate_failed \\[${signal}\\]: Run ${runIds[kind]}`));
      expect(runComis(['explain', `sess-${kind}`], { home }).stdout).toBe(text.stdout);
    }
  });

  it('resultRefs and savings only for a run that materialized refs', () => {
    const { home } = populatedHome();
    const refs = parseJson(runComis(['explain', 'sess-refs', '--json'], { home }).stdout);
    expect(refs.result.orchestrate[0]).toMatchObject({ resultRefs: { count: 3, bytes: 122_880 }, savings: { estSavedTokens: 30_208, savedRatio: 0.98 } });
    const plain = parseJson(runComis(['explain', 'sess-success', '--json'], { home }).stdout);
    expect(plain.result.orchestrate[0]).not.toHaveProperty('resultRefs');
    expect(plain.result.orchestrate[0]).not.toHaveProperty('savings');
  });

  it('--last explains the newest session; a run id explains that run', () => {
    const { home, runIds } = populatedHome();
    const last = parseJson(runComis(['explain', '--last', '--json'], { home }).stdout);
    expect(last.result.sessionKey).toBe('sess-spawn_fail');
    const run = runComis(['explain', runIds.timeout!, '--json'], { home });
    expect(run.status).toBe(0);
    expect(parseJson(run.stdout).result).toMatchObject({ scope: 'run', sessionKey: 'sess-timeout', orchestrate: [{ runId: runIds.timeout }] });
  });

  it('an unknown key: NOT_FOUND, exit 2, listing the newest session keys', () => {
    const { home } = populatedHome();
    const res = runComis(['explain', 'no-such-session'], { home });
    expect(res.status).toBe(2);
    expect(res.stdout).toBe('');
    expect(res.stderr).toBe(
      'Error [NOT_FOUND]: No session or run "no-such-session" in the store.\n' + 'Hint: Newest sessions: sess-spawn_fail, sess-deny, sess-nonzero_exit, sess-stdout_cap, sess-timeout. `comis explain --last` explains the newest.\n',
    );
    const json = runComis(['explain', 'no-such-session', '--json'], { home });
    expect(json.status).toBe(2);
    const body = parseJson(json.stdout);
    validateExplain(body);
    expect(body.error).toMatchObject({ code: 'NOT_FOUND', details: { newestSessions: ['sess-spawn_fail', 'sess-deny', 'sess-nonzero_exit', 'sess-stdout_cap', 'sess-timeout'] } });
  });

  it('usage errors: neither a key nor --last, or both', () => {
    const { home } = populatedHome();
    for (const args of [['explain'], ['explain', 'sess-deny', '--last']]) {
      const res = runComis(args, { home });
      expect(res.status, args.join(' ')).toBe(2);
      expect(res.stderr).toMatch(/^Error \[USAGE\]/);
    }
    expect(runComis(['fleet', '--since', 'whenever'], { home }).status).toBe(2);
  });

  it('fleet: findings over the window, ordered by severity then count, exit 0, valid against the published schema', () => {
    const { home } = populatedHome();
    const res = runComis(['fleet', '--since', '30d', '--json'], { home });
    expect(res.status).toBe(0);
    const body = parseJson(res.stdout);
    validateFleet(body);
    expect(body.result.runCount).toBe(7);
    expect(body.result.findings.map((f: { code: string; subject?: string; count: number }) => [f.code, f.subject ?? null, f.count])).toEqual([
      ['orchestrate_failed', 'nonzero_exit', 2],
      ['orchestrate_failed', 'spawn_fail', 1],
      ['orchestrate_failed', 'stdout_cap', 1],
      ['orchestrate_failed', 'timeout', 1],
      ['capability_denied', 'orch:write', 1],
      ['orchestrate_efficiency', null, 7],
    ]);
    expect(body.result.findings.at(-1).data).toMatchObject({ runs: 7, estSavedTokens: 30_208 });
    const text = runComis(['fleet', '--since', '30d'], { home });
    expect(text.status).toBe(0);
    expect(text.stdout).toMatch(/^Fleet since \S+ \(--since 30d\): 7 runs\n\nSEVERITY +CODE/);
    expect(runComis(['fleet', '--since', '30d'], { home }).stdout.replace(/Fleet since \S+/, '')).toBe(text.stdout.replace(/Fleet since \S+/, ''));
  });

  it('a fresh home: explain is NOT_FOUND, fleet reports zero; neither creates a store', () => {
    const home = tempDir('comis-home-');
    const explain = runComis(['explain', '--last'], { home });
    expect(explain.status).toBe(2);
    expect(explain.stderr).toMatch(/Error \[NOT_FOUND\]: No sessions are recorded yet\./);
    const fleet = runComis(['fleet', '--json'], { home });
    expect(fleet.status).toBe(0);
    const body = parseJson(fleet.stdout);
    validateFleet(body);
    expect(body.result).toMatchObject({ runCount: 0, findings: [{ code: 'orchestrate_efficiency', count: 0 }] });
    expect(existsSync(join(home, 'comis.db'))).toBe(false);
  });

  it('stdout carries only the report, whatever the log level', () => {
    const { home } = populatedHome();
    const res = runComis(['explain', 'sess-deny', '--json', '--verbose'], { home, env: { COMIS_LOG_LEVEL: 'trace' } });
    expect(res.status).toBe(0);
    expect(() => JSON.parse(res.stdout)).not.toThrow();
    const fleet = runComis(['fleet', '--json'], { home, env: { COMIS_LOG_LEVEL: 'trace' } });
    expect(() => JSON.parse(fleet.stdout)).not.toThrow();
  });

  it('load neither ink, undici nor DuckDB, and no other command', () => {
    const { home } = populatedHome();
    const forbidden = /\/ink\/|\/react\/|undici|duckdb|\/esbuild\//;
    for (const args of [
      ['explain', 'sess-deny', '--json'],
      ['explain', '--last'],
      ['fleet', '--since', '30d'],
    ]) {
      const trace = join(tempDir(), 'trace.txt');
      const res = runComis(args, { home, env: { NODE_OPTIONS: `--import=${join(repoRoot, 'test/helpers/trace-imports.mjs')}`, COMIS_TRACE_IMPORTS: trace } });
      expect(res.status, args.join(' ')).toBe(0);
      const loaded = readFileSync(trace, 'utf8').split('\n');
      expect(
        loaded.filter((m) => forbidden.test(m)),
        args.join(' '),
      ).toEqual([]);
      // `explain --last` and `fleet` are answered by bin/comis.js's fast path (src/cli/fast-commands.ts): no command module at all.
      const own = args.join(' ') === 'explain --last' || args[0] === 'fleet' ? [] : [`${args[0]}.js`];
      expect(loaded.filter((m) => m.includes('/dist/commands/')).map((c) => c.replace(/^.*\/dist\/commands\//, ''))).toEqual(own);
    }
  });
});

// ---------------------------------------------------------------------------
// Runs produced by `comis orchestrate` (needs the jail: bubblewrap and node).

interface Produced {
  runId: string;
  leaseId: string;
}

function orchestrate(h: ReturnType<typeof makeHome>, session: string, name: string, code: string, extra: string[] = []): Produced {
  const res = h.run(['orchestrate', h.script(name, code), '--session', session, '--json', ...extra]);
  const body = parseJson(res.stdout);
  expect(body.status, res.stdout + res.stderr).not.toBe('error');
  return { runId: body.result.runId, leaseId: body.result.leaseId };
}

function explainSession(h: ReturnType<typeof makeHome>, session: string): any {
  const res = h.run(['explain', session, '--json']);
  expect(res.status, res.stderr).toBe(0);
  const body = parseJson(res.stdout);
  validateExplain(body);
  // The verdict is a function of the store: a second call says the same.
  expect(h.run(['explain', session, '--json']).stdout).toBe(res.stdout);
  return body.result;
}

describe('comis explain after real comis orchestrate runs', () => {
  it('a successful run: its tool calls folded from its lease, verdict none', () => {
    const h = makeHome();
    writeFileSync(join(h.workspace(), 'notes.md'), 'TODO: one\nTODO: two\n');
    const p = orchestrate(h, 'e2e-ok', 'ok.mjs', `import { comis_tools } from './comis_tools.js';\nconst g = await comis_tools.grep({ pattern: 'TODO' });\nawait comis_tools.read({ path: 'notes.md' });\nconsole.log(g.matches.length);`);
    const report = explainSession(h, 'e2e-ok');
    expect(report.orchestrate).toEqual([
      expect.objectContaining({
        runId: p.runId,
        leaseId: p.leaseId,
        outcome: 'success',
        exitCode: 0,
        toolCalls: [
          { tool: 'grep', capability: 'orch:read', decision: 'allow', count: 1 },
          { tool: 'read', capability: 'orch:read', decision: 'allow', count: 1 },
        ],
      }),
    ]);
    expect(report.orchestrate[0]).not.toHaveProperty('failureClass');
    expect(report.likelyRootCause).toMatchObject({ code: 'none', signal: 'none' });
  });

  it('a timeout: failureClass timeout, verdict names it', () => {
    const h = makeHome();
    const p = orchestrate(h, 'e2e-timeout', 'slow.mjs', 'setInterval(() => {}, 1000);', ['--timeout-ms', '1500']);
    const report = explainSession(h, 'e2e-timeout');
    expect(report.orchestrate[0]).toMatchObject({ runId: p.runId, outcome: 'failure', failureClass: 'timeout' });
    expect(report.orchestrate[0].durationMs).toBeGreaterThanOrEqual(1500);
    expect(report.likelyRootCause).toMatchObject({ code: 'orchestrate_failed', signal: 'timeout', runId: p.runId, failureClass: 'timeout' });
  });

  it('a stdout flood: failureClass stdout_cap', () => {
    const h = makeHome();
    const p = orchestrate(h, 'e2e-flood', 'flood.mjs', "const s = 'x'.repeat(65536); (function w() { while (process.stdout.write(s)); process.stdout.once('drain', w); })();");
    const report = explainSession(h, 'e2e-flood');
    expect(report.orchestrate[0]).toMatchObject({ runId: p.runId, outcome: 'failure', failureClass: 'stdout_cap' });
    expect(report.likelyRootCause).toMatchObject({ code: 'orchestrate_failed', signal: 'stdout_cap' });
  });

  it('process.exit(3): nonzero_exit with exit code 3', () => {
    const h = makeHome();
    const p = orchestrate(h, 'e2e-exit', 'exit.mjs', "console.log('partial'); process.exit(3);");
    const report = explainSession(h, 'e2e-exit');
    expect(report.orchestrate[0]).toMatchObject({ runId: p.runId, outcome: 'failure', exitCode: 3, failureClass: 'nonzero_exit', toolCalls: [] });
    expect(report.likelyRootCause).toMatchObject({ code: 'orchestrate_failed', signal: 'nonzero_exit', exitCode: 3 });
    expect(report.likelyRootCause.detail).toContain('exited with code 3');
  });

  it('a denied call: deny on orch:write (surface_disabled) attributed to the run, verdict names the capability', () => {
    const h = makeHome();
    const p = orchestrate(h, 'e2e-deny', 'deny.mjs', `import { comis_tools } from './comis_tools.js';\nawait comis_tools['wr' + 'ite']({ path: 'a', content: 'b' });`);
    const report = explainSession(h, 'e2e-deny');
    expect(report.orchestrate[0]).toMatchObject({
      runId: p.runId,
      leaseId: p.leaseId,
      outcome: 'failure',
      failureClass: 'nonzero_exit',
      toolCalls: [{ tool: 'write', capability: 'orch:write', decision: 'deny', count: 1 }],
    });
    expect(report.likelyRootCause).toMatchObject({ code: 'orchestrate_failed', signal: 'deny', capability: 'orch:write', tool: 'write', reason: 'surface_disabled' });
    expect(report.likelyRootCause.nextSteps[0]).toContain('agents.default.autonomy.write: true');
  });

  it('several runs in one session: one entry each, verdict by precedence; fleet counts them', () => {
    const h = makeHome();
    orchestrate(h, 'e2e-multi', 'a.mjs', "console.log('fine');");
    const denied = orchestrate(h, 'e2e-multi', 'b.mjs', `import { comis_tools } from './comis_tools.js';\ntry { await comis_tools['wr' + 'ite']({ path: 'a', content: 'b' }); } catch { console.log('carried on'); }`);
    orchestrate(h, 'e2e-multi', 'c.mjs', 'process.exit(2);');
    const report = explainSession(h, 'e2e-multi');
    expect(report.orchestrate).toHaveLength(3);
    expect(report.orchestrate[1]).toMatchObject({ runId: denied.runId, outcome: 'success', exitCode: 0 });
    expect(report.likelyRootCause).toMatchObject({ signal: 'deny', runId: denied.runId, affectedRuns: 2 });
    const fleet = parseJson(h.run(['fleet', '--json']).stdout);
    validateFleet(fleet);
    expect(fleet.result.runCount).toBe(3);
    expect(fleet.result.findings.find((f: { code: string }) => f.code === 'capability_denied')).toMatchObject({ subject: 'orch:write', count: 1 });
  });
});
