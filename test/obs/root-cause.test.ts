import { describe, expect, it } from 'vitest';

import { likelyRootCause, ROOT_CAUSE_RULES, ROOT_CAUSE_SIGNALS, type RunSignals } from '../../src/lib/obs/root-cause.js';

const base = (over: Partial<RunSignals>): RunSignals => ({
  runId: 'r-000000000001',
  agentId: 'default',
  startedAt: 1_000,
  outcome: 'success',
  exitCode: 0,
  durationMs: 100,
  toolCalls: [],
  denies: [],
  ...over,
});

const fail = (runId: string, failureClass: RunSignals['failureClass'], startedAt = 1_000, exitCode: number | null = 1): RunSignals => base({ runId, outcome: 'failure', failureClass, exitCode, startedAt });

const denied = (runId: string, startedAt = 1_000, exitCode = 1): RunSignals =>
  base({
    runId,
    startedAt,
    outcome: exitCode === 0 ? 'success' : 'failure',
    failureClass: exitCode === 0 ? undefined : 'nonzero_exit',
    exitCode,
    toolCalls: [{ tool: 'write', capability: 'orch:write', decision: 'deny', count: 1 }],
    denies: [{ tool: 'write', capability: 'orch:write', reason: 'surface_disabled', count: 1 }],
  });

describe('likelyRootCause', () => {
  it('the rule table is in the documented precedence', () => {
    expect(ROOT_CAUSE_RULES.map((r) => r.signal)).toEqual(['spawn_fail', 'timeout', 'stdout_cap', 'deny', 'refused', 'nonzero_exit', 'failure']);
    expect(ROOT_CAUSE_SIGNALS).toEqual([...ROOT_CAUSE_RULES.map((r) => r.signal), 'none']);
  });

  it('no runs, or only clean successes: none', () => {
    expect(likelyRootCause([])).toMatchObject({ code: 'none', signal: 'none', affectedRuns: 0, nextSteps: [] });
    expect(likelyRootCause([base({}), base({ runId: 'r-2' })])).toMatchObject({ code: 'none', detail: 'All 2 runs succeeded with no denied calls.' });
  });

  it.each([
    ['timeout', /ran past its wall-clock timeout/, /--timeout-ms/],
    ['stdout_cap', /stdout hard cap/, /summary/],
    ['nonzero_exit', /exited with code 1/, /stderr tail/],
    ['spawn_fail', /never started its jail/, /comis jail probe/],
  ] as const)('%s: orchestrate_failed naming the failure class', (cls, detail, step) => {
    const v = likelyRootCause([base({ runId: 'r-ok' }), fail('r-bad', cls)]);
    expect(v).toMatchObject({ code: 'orchestrate_failed', signal: cls, runId: 'r-bad', failureClass: cls, affectedRuns: 1 });
    expect(v.detail).toMatch(detail);
    expect(v.detail).toContain(`(${cls})`);
    expect(v.nextSteps.join('\n')).toMatch(step);
  });

  it('a deny, even in a run that exited 0, is orchestrate_failed naming the capability and the fix', () => {
    const v = likelyRootCause([denied('r-d', 1_000, 0)]);
    expect(v).toMatchObject({ code: 'orchestrate_failed', signal: 'deny', runId: 'r-d', capability: 'orch:write', tool: 'write', reason: 'surface_disabled' });
    expect(v.detail).toBe('Run r-d was denied orch:write on write (surface_disabled), 1 denied call.');
    expect(v.nextSteps[0]).toContain('agents.default.autonomy.write: true');
  });

  it('a deny explains the non-zero exit it caused', () => {
    const v = likelyRootCause([denied('r-d')]);
    expect(v.signal).toBe('deny');
    expect(v.failureClass).toBe('nonzero_exit');
    expect(v.detail).toContain('then exited with code 1');
  });

  it('precedence across runs: spawn_fail > timeout > stdout_cap > deny > nonzero_exit', () => {
    const runs = [fail('r-n', 'nonzero_exit', 6), denied('r-d', 5), fail('r-s', 'stdout_cap', 4), fail('r-t', 'timeout', 3), fail('r-f', 'spawn_fail', 1)];
    const order: string[] = [];
    for (let i = runs.length; i > 0; i--) order.push(likelyRootCause(runs.slice(0, i)).signal);
    expect(order).toEqual(['spawn_fail', 'timeout', 'stdout_cap', 'deny', 'nonzero_exit']);
    expect(likelyRootCause(runs).affectedRuns).toBe(5);
  });

  it('names the newest run of the deciding rule, ties broken by run id', () => {
    expect(likelyRootCause([fail('r-a', 'timeout', 10), fail('r-b', 'timeout', 20), fail('r-c', 'timeout', 15)]).runId).toBe('r-b');
    expect(likelyRootCause([fail('r-a', 'timeout', 10), fail('r-b', 'timeout', 10)]).runId).toBe('r-b');
  });

  it('is deterministic: same signals in any order give the same verdict', () => {
    const runs = [fail('r-a', 'timeout', 10), denied('r-b', 30), fail('r-c', 'nonzero_exit', 20), base({ runId: 'r-d', startedAt: 40 })];
    const first = likelyRootCause(runs);
    for (let i = 0; i < 10; i++) expect(likelyRootCause([...runs].sort(() => (i % 2 ? 1 : -1)).reverse())).toEqual(first);
  });

  it('deny reasons each get their own next step', () => {
    const mk = (reason: 'capability_missing' | 'denied_by_origin' | 'unknown_tool', capability: string, tool: string) =>
      likelyRootCause([base({ toolCalls: [{ tool, capability, decision: 'deny', count: 2 }], denies: [{ tool, capability, reason, count: 2 }] })]);
    expect(mk('capability_missing', 'orch:web', 'web_fetch').nextSteps[0]).toMatch(/profile holds orch:web/);
    expect(mk('denied_by_origin', 'none', 'gateway').nextSteps[0]).toMatch(/control plane/);
    expect(mk('unknown_tool', 'none', '<unknown>').nextSteps[0]).toMatch(/describe\(\)/);
  });

  it('a failure with no class and exit code null still root-causes, as failure', () => {
    expect(likelyRootCause([base({ outcome: 'failure', exitCode: null })])).toMatchObject({ code: 'orchestrate_failed', signal: 'failure' });
  });
});

describe('hints name only what exists', () => {
  it('a non-zero exit promises no automatic repair: without a repair record (or a not-recoverable one) it names none', () => {
    const v = likelyRootCause([fail('r-x', 'nonzero_exit')]);
    expect(v.nextSteps.join(' ')).not.toMatch(/repair/i);
    const nr = likelyRootCause([base({ ...fail('r-x', 'nonzero_exit'), repair: { attempted: false, class: null, outcome: 'not_recoverable' } })]);
    expect(nr.nextSteps.join(' ')).not.toMatch(/repair/i);
  });

  it('a failed run says what its own repair record says, and only that', () => {
    const withRepair = (repair: NonNullable<RunSignals['repair']>): string => likelyRootCause([base({ ...fail('r-x', 'nonzero_exit'), repair })]).nextSteps.join(' ');
    expect(withRepair({ attempted: true, class: 'bad_import', outcome: 'rerun_failed' })).toMatch(/One automatic repair was tried \(bad_import\): the repaired script failed too/);
    expect(withRepair({ attempted: true, class: 'syntax_error', outcome: 'refused' })).toMatch(/refused before it ran/);
    expect(withRepair({ attempted: true, class: 'type_error', outcome: 'model_error' })).toMatch(/agents\.default\.model gave no usable answer/);
    expect(withRepair({ attempted: true, class: 'type_error', outcome: 'no_fix' })).toMatch(/held no new script/);
    expect(withRepair({ attempted: false, class: 'bad_import', outcome: 'class_off' })).toMatch(/mid or frontier/);
    expect(withRepair({ attempted: false, class: 'bad_import', outcome: 'no_model' })).toMatch(/has no model/);
    expect(withRepair({ attempted: false, class: 'bad_import', outcome: 'disabled' })).toMatch(/--no-repair/);
    // Never the blanket promise.
    for (const outcome of ['class_off', 'no_model', 'disabled'] as const) expect(withRepair({ attempted: false, class: 'bad_import', outcome })).not.toMatch(/Small models get/);
  });

  it('a policy deny reads as a policy deny, naming the config key, not a capability', () => {
    const r = base({
      runId: 'r-p',
      outcome: 'failure',
      failureClass: 'nonzero_exit',
      exitCode: 1,
      toolCalls: [{ tool: 'grep', capability: 'none', decision: 'deny', count: 2 }],
      denies: [{ tool: 'grep', capability: 'none', reason: 'explicit_deny', count: 2 }],
    });
    const v = likelyRootCause([r]);
    expect(v).toMatchObject({ signal: 'deny', tool: 'grep', reason: 'explicit_deny' });
    expect(v.detail).toBe('Run r-p was denied grep by its tool policy (explicit_deny), 2 denied calls, then exited with code 1.');
    expect(v.nextSteps[0]).toContain('agents.default.skills.toolPolicy.deny');
  });

  it('a refused run (exit 4, nothing ran): ranked after a socket deny, before a non-zero exit; one step per reason', () => {
    const refused = (runId: string, startedAt: number, refusal: RunSignals['refusal']): RunSignals => base({ runId, startedAt, outcome: 'refused', exitCode: null, durationMs: 3, refusal });
    const r = refused('r-ref', 5_000, { code: 'CAPABILITY_DENIED', reason: 'surface_disabled', capabilities: ['orch:write'], tools: ['write'] });
    const v = likelyRootCause([fail('r-n', 'nonzero_exit', 9_000), r]);
    expect(v).toMatchObject({ code: 'orchestrate_failed', signal: 'refused', runId: 'r-ref', exitCode: null, affectedRuns: 2, refusal: r.refusal });
    expect(v.failureClass).toBeUndefined();
    expect(v.detail).toBe('Run r-ref was refused before it started (CAPABILITY_DENIED, surface_disabled: orch:write; tool write); nothing ran.');
    expect(v.nextSteps).toEqual(['The write surface of agent "default" is off: set agents.default.autonomy.write: true in config.yaml, or remove the write call.']);
    expect(likelyRootCause([r, denied('r-d', 1)]).signal).toBe('deny');
    expect(likelyRootCause([fail('r-n', 'nonzero_exit', 9_000), r])).toEqual(v);
    const steps = (reason: NonNullable<RunSignals['refusal']>['reason'], code: NonNullable<RunSignals['refusal']>['code'] = 'CAPABILITY_DENIED'): string =>
      likelyRootCause([refused('r-x', 1, { code, reason, capabilities: ['orch:web'], tools: ['grep'] })]).nextSteps.join(' ');
    expect(steps('profile_no_orchestrate')).toContain('agents.default.autonomy.profile: standard');
    expect(steps('capability_missing')).toContain('holds orch:web');
    expect(steps('explicit_deny')).toContain('skills.toolPolicy.deny');
    expect(steps('not_in_profile')).toContain('skills.toolPolicy.allow');
    expect(steps('role_coordinator')).toContain('comis run');
    expect(steps('approval_required', 'APPROVAL_REQUIRED')).toContain('--yes');
    expect(steps('approval_refused', 'APPROVAL_REFUSED')).toContain('approve');
  });
});
