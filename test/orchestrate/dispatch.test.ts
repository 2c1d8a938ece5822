import { describe, expect, it } from 'vitest';

import { LeaseRegistry } from '../../src/lib/capabilities/lease.js';
import type { CapRequest } from '../../src/lib/capsocket/protocol.js';
import { createDispatcher, type CapabilityAudited } from '../../src/lib/orchestrate/dispatch.js';
import type { SurfaceDrop } from '../../src/lib/policy/surface.js';

function setup(caps: ('orch:read' | 'orch:web' | 'orch:write')[], write = false, dropped?: ReadonlyMap<string, SurfaceDrop>) {
  const reg = new LeaseRegistry();
  const a = reg.mintAssembly('ag', caps, 60_000);
  const run = reg.mintRun(a.lease, { runId: 'r-1', socketId: 'r-1', ttlMs: 60_000 });
  const events: CapabilityAudited[] = [];
  const calls: unknown[] = [];
  const handler = createDispatcher({
    registry: reg,
    socketId: 'r-1',
    agentId: 'ag',
    surfaces: { write },
    ...(dropped ? { dropped } : {}),
    tools: { read: (args) => (calls.push(args), { ok: true }), write: () => ({ written: true }) },
    audit: (e) => events.push(e),
  });
  const call = (tool: unknown, args: unknown = {}, bearer: unknown = run.bearer): Promise<unknown> => handler({ id: 1, method: 'tool.invoke', params: { tool, args }, bearer } as CapRequest);
  return { reg, run, a, events, calls, call, handler };
}

describe('dispatch gate', () => {
  it('allows a held capability, validates params, and audits content-free', async () => {
    const t = setup(['orch:read']);
    await expect(t.call('read', { path: 'notes.md' })).resolves.toEqual({ ok: true });
    expect(t.events).toEqual([{ type: 'capability:audited', leaseId: t.run.lease.leaseId, runId: 'r-1', tool: 'read', capability: 'orch:read', decision: 'allow', at: expect.any(Number) }]);
    await expect(t.call('read', { path: 5 })).rejects.toMatchObject({ code: 'invalid_params' });
    expect(t.calls).toHaveLength(1);
  });

  it('denies a capability the lease lacks, naming it, and audits the deny', async () => {
    const t = setup(['orch:read']);
    await expect(t.call('write', { path: 'a', content: 'b' })).rejects.toMatchObject({ code: 'capability_denied', message: expect.stringContaining('orch:write') });
    expect(t.events[0]).toMatchObject({ tool: 'write', capability: 'orch:write', decision: 'deny', reason: 'capability_missing' });
  });

  it('keeps the write surface dark unless turned on, even with orch:write', async () => {
    const off = setup(['orch:read', 'orch:write'], false);
    await expect(off.call('write', { path: 'a', content: 'b' })).rejects.toMatchObject({ code: 'surface_disabled', message: expect.stringContaining('autonomy.write: true') });
    const on = setup(['orch:read', 'orch:write'], true);
    await expect(on.call('write', { path: 'a', content: 'b' })).resolves.toEqual({ written: true });
  });

  it('denies a tool the policy dropped, with capability none and the policy reason, before the tool runs', async () => {
    const t = setup(
      ['orch:read', 'orch:write'],
      true,
      new Map([
        ['read', { why: 'explicit_deny', entry: 'group:fs' }],
        ['write', { why: 'role_coordinator' }],
      ]),
    );
    await expect(t.call('read', { path: 'a' })).rejects.toMatchObject({ code: 'policy_denied', message: expect.stringContaining('explicit_deny: "group:fs" in agents.ag.skills.toolPolicy.deny') });
    await expect(t.call('write', { path: 'a', content: 'b' })).rejects.toMatchObject({ code: 'policy_denied', message: expect.stringContaining('role_coordinator') });
    expect(t.calls).toEqual([]);
    expect(t.events.map((e) => [e.tool, e.capability, e.decision, e.reason])).toEqual([
      ['read', 'none', 'deny', 'explicit_deny'],
      ['write', 'none', 'deny', 'role_coordinator'],
    ]);
    // The control plane stays denied by origin whatever the policy says.
    await expect(t.call('agents_manage')).rejects.toMatchObject({ code: 'denied_by_origin' });
  });

  it('denies the control plane by origin whatever the lease holds', async () => {
    const t = setup(['orch:read', 'orch:web', 'orch:write'], true);
    for (const tool of ['gateway', 'mcp_manage', 'mcp_login', 'tokens_manage']) {
      await expect(t.call(tool)).rejects.toMatchObject({ code: 'denied_by_origin' });
    }
    expect(t.events.map((e) => [e.tool, e.decision, e.reason])).toEqual([
      ['gateway', 'deny', 'denied_by_origin'],
      ['mcp_manage', 'deny', 'denied_by_origin'],
      ['mcp_login', 'deny', 'denied_by_origin'],
      ['*_manage', 'deny', 'denied_by_origin'],
    ]);
  });

  it('denies unknown tools by absence, without recording the script-chosen name', async () => {
    const t = setup(['orch:read']);
    await expect(t.call('CANARY_exfil_tool')).rejects.toMatchObject({ code: 'unknown_tool' });
    expect(JSON.stringify(t.events)).not.toContain('CANARY');
    expect(t.events[0]).toMatchObject({ tool: '<unknown>', capability: 'none', decision: 'deny' });
  });

  it('refuses a bad, revoked or foreign bearer before anything else', async () => {
    const t = setup(['orch:read']);
    await expect(t.call('read', { path: 'a' }, 'forged')).rejects.toMatchObject({ code: 'unauthenticated' });
    t.reg.revoke(t.a.lease.leaseId);
    await expect(t.call('read', { path: 'a' })).rejects.toMatchObject({ code: 'unauthenticated' });
    expect(t.events).toEqual([]);
    const other = setup(['orch:read']);
    await expect(other.call('read', { path: 'a' }, t.run.bearer)).rejects.toMatchObject({ code: 'unauthenticated' });
  });

  it('rejects other methods and malformed params', async () => {
    const t = setup(['orch:read']);
    await expect(t.handler({ id: 1, method: 'admin.mint', params: {}, bearer: t.run.bearer })).rejects.toMatchObject({ code: 'unknown_method' });
    await expect(t.handler({ id: 1, method: 'tool.invoke', params: null, bearer: t.run.bearer })).rejects.toMatchObject({ code: 'bad_request' });
  });
});
