/**
 * The repair decision and round, with the runner's two hooks (pre-flight and
 * re-run) recorded: the class gate, at most one model request and one re-run,
 * and the outcome recorded for each way it can end. The model is the fake
 * chat-completions server on 127.0.0.1.
 */
import { describe, expect, it } from 'vitest';

import { methodDigest } from '../../src/lib/orchestrate/repair-digest.js';
import { attemptRepair, repairGate, type RepairInput } from '../../src/lib/orchestrate/repair.js';
import { startFakeModel } from '../helpers/fake-model.js';

const BAD_IMPORT = { failureClass: 'nonzero_exit', exitCode: 1, denied: false, stderrTail: "ModuleNotFoundError: No module named 'comis_tool'\n" };

function input(baseUrl: string, over: Partial<RepairInput> = {}): RepairInput {
  return {
    model: { baseUrl, name: 'tiny', class: 'small', timeoutMs: 5000 },
    noRepair: false,
    language: 'py',
    source: 'import comis_tool\nprint(1)\n',
    first: BAD_IMPORT,
    methods: async () => methodDigest({ tools: ['read'], caps: ['orch:read'], write: false, mcpServers: [] }),
    pathMap: [],
    backoffMs: 10,
    ...over,
  };
}

function hooks(ok = true, preflightOk = true) {
  const calls = { preflight: [] as string[], rerun: [] as string[] };
  return {
    calls,
    hooks: {
      preflight: async (s: string) => (calls.preflight.push(s), preflightOk),
      rerun: async (s: string) => (calls.rerun.push(s), { ok }),
      succeeded: (r: { ok: boolean }) => r.ok,
    },
  };
}

describe('repairGate: the model class is the control', () => {
  it('on for nano, small and no class; off for mid and frontier; nothing to ask without a model; --no-repair', () => {
    expect(repairGate({ class: 'nano' }, false)).toBe('on');
    expect(repairGate({ class: 'small' }, false)).toBe('on');
    expect(repairGate({ class: undefined }, false)).toBe('on');
    expect(repairGate({ class: 'mid' }, false)).toBe('class_off');
    expect(repairGate({ class: 'frontier' }, false)).toBe('class_off');
    expect(repairGate(undefined, false)).toBe('no_model');
    expect(repairGate({ class: 'small' }, true)).toBe('disabled');
  });
});

describe('attemptRepair', () => {
  it('small + bad import: one request, the repaired script pre-flighted and re-run once → repaired', async () => {
    const fake = await startFakeModel({ answer: () => '```python\nimport comis_tools\nprint(1)\n```' });
    const h = hooks();
    const out = await attemptRepair(input(fake.baseUrl), h.hooks);
    expect(out.record).toEqual({ attempted: true, class: 'bad_import', outcome: 'repaired' });
    expect(fake.requests).toHaveLength(1);
    expect(h.calls.preflight).toEqual(['import comis_tools\nprint(1)\n']);
    expect(h.calls.rerun).toEqual(['import comis_tools\nprint(1)\n']);
  });

  it('the digest lists the held methods with their capabilities', async () => {
    const fake = await startFakeModel({ answer: () => 'print(2)' });
    await attemptRepair(input(fake.baseUrl), hooks().hooks);
    const user = fake.requests[0]!.json!.messages![1]!.content;
    expect(user).toContain('comis_tools.read({path: string, offset?: integer, limit?: integer}) [orch:read]');
    expect(user).not.toContain('web_fetch');
  });

  it('frontier and mid: no request, no re-run', async () => {
    const fake = await startFakeModel({ answer: () => 'print(2)' });
    for (const cls of ['mid', 'frontier'] as const) {
      const h = hooks();
      const out = await attemptRepair(input(fake.baseUrl, { model: { baseUrl: fake.baseUrl, name: 'big', class: cls, timeoutMs: 5000 } }), h.hooks);
      expect(out.record).toEqual({ attempted: false, class: 'bad_import', outcome: 'class_off' });
      expect(h.calls.rerun).toEqual([]);
    }
    expect(fake.requests).toHaveLength(0);
  });

  it('not recoverable (a timeout, a segfault, a RangeError): no request', async () => {
    const fake = await startFakeModel({ answer: () => 'print(2)' });
    for (const first of [
      { ...BAD_IMPORT, failureClass: 'timeout', exitCode: 137 },
      { ...BAD_IMPORT, exitCode: 139, stderrTail: 'Segmentation fault\n' },
      { ...BAD_IMPORT, stderrTail: 'RangeError: Maximum call stack size exceeded\n' },
    ]) {
      expect((await attemptRepair(input(fake.baseUrl, { first }), hooks().hooks)).record).toEqual({ attempted: false, class: null, outcome: 'not_recoverable' });
    }
    expect(fake.requests).toHaveLength(0);
  });

  it('the re-run fails again: rerun_failed, still one request and one re-run', async () => {
    const fake = await startFakeModel({ answer: () => 'print(3)' });
    const h = hooks(false);
    expect((await attemptRepair(input(fake.baseUrl), h.hooks)).record.outcome).toBe('rerun_failed');
    expect(fake.requests).toHaveLength(1);
    expect(h.calls.rerun).toHaveLength(1);
  });

  it('pre-flight refuses the repaired script: refused, never re-run', async () => {
    const fake = await startFakeModel({ answer: () => 'print(3)' });
    const h = hooks(true, false);
    expect((await attemptRepair(input(fake.baseUrl), h.hooks)).record.outcome).toBe('refused');
    expect(h.calls.rerun).toEqual([]);
  });

  it('no code, or the same script back: no_fix; an HTTP error or a 10 MB answer: model_error; never re-run', async () => {
    const fake = await startFakeModel();
    const h = hooks();
    fake.queue({ kind: 'answer', content: '' }, { kind: 'answer', content: '```python\nimport comis_tool\nprint(1)\n```' }, { kind: 'error', status: 400 }, { kind: 'huge', bytes: 10 * 1024 * 1024 });
    expect((await attemptRepair(input(fake.baseUrl), h.hooks)).record.outcome).toBe('no_fix');
    expect((await attemptRepair(input(fake.baseUrl), h.hooks)).record.outcome).toBe('no_fix');
    expect((await attemptRepair(input(fake.baseUrl), h.hooks)).record.outcome).toBe('model_error');
    expect((await attemptRepair(input(fake.baseUrl), h.hooks)).record.outcome).toBe('model_error');
    expect(h.calls.rerun).toEqual([]);
  });

  it('apiKeyEnv names an unset variable: model_error without a request', async () => {
    const fake = await startFakeModel({ answer: () => 'print(4)' });
    const out = await attemptRepair(input(fake.baseUrl, { model: { baseUrl: fake.baseUrl, name: 'm', class: 'small', apiKeyEnv: 'COMIS_TEST_UNSET_MODEL_KEY', timeoutMs: 5000 } }), hooks().hooks);
    expect(out.record.outcome).toBe('model_error');
    expect(fake.requests).toHaveLength(0);
  });

  it('host paths in the tail go out under their jail names', async () => {
    const fake = await startFakeModel({ answer: () => 'print(5)' });
    const first = { ...BAD_IMPORT, stderrTail: "ModuleNotFoundError: No module named 'x' (/srv/host/ws/a.py)\n" };
    await attemptRepair(input(fake.baseUrl, { first, pathMap: [['/srv/host/ws', '/workspace']] }), hooks().hooks);
    expect(fake.requests[0]!.body).not.toContain('/srv/host/ws');
    expect(fake.requests[0]!.body).toContain('/workspace/a.py');
  });
});
