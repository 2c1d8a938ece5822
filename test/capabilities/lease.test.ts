import { describe, expect, it } from 'vitest';

import { LeaseRegistry } from '../../src/lib/capabilities/lease.js';
import { redactSecrets } from '../../src/lib/redact/output-guard.js';

describe('leases', () => {
  it('mints a 256-bit bearer registered with the output guard', () => {
    const reg = new LeaseRegistry();
    const a = reg.mintAssembly('ag', ['orch:read', 'orch:web'], 60_000);
    const run = reg.mintRun(a.lease, { runId: 'r-1', socketId: 'r-1', ttlMs: 10_000 });
    expect(Buffer.from(run.bearer, 'base64url')).toHaveLength(32);
    expect(redactSecrets(`x ${run.bearer} y`)).toBe('x [REDACTED] y');
    expect(run.lease).toMatchObject({ runId: 'r-1', agentId: 'ag', parentLeaseId: a.lease.leaseId, caps: ['orch:read', 'orch:web'] });
  });

  it('authenticates only on its own socket, and the assembly lease nowhere', () => {
    const reg = new LeaseRegistry();
    const a = reg.mintAssembly('ag', ['orch:read'], 60_000);
    const r1 = reg.mintRun(a.lease, { runId: 'r-1', socketId: 'r-1', ttlMs: 10_000 });
    reg.mintRun(a.lease, { runId: 'r-2', socketId: 'r-2', ttlMs: 10_000 });
    expect(reg.authenticate(r1.bearer, 'r-1')?.leaseId).toBe(r1.lease.leaseId);
    expect(reg.authenticate(r1.bearer, 'r-2')).toBeUndefined();
    expect(reg.authenticate(a.bearer, 'r-1')).toBeUndefined();
    expect(reg.authenticate('nope', 'r-1')).toBeUndefined();
    expect(reg.authenticate(undefined, 'r-1')).toBeUndefined();
    expect(reg.authenticate(`${r1.bearer}x`, 'r-1')).toBeUndefined();
  });

  it('a revoked or expired lease is worthless; revoking a parent revokes its children', () => {
    let now = 1000;
    const reg = new LeaseRegistry(() => now);
    const a = reg.mintAssembly('ag', ['orch:read'], 60_000);
    const r1 = reg.mintRun(a.lease, { runId: 'r-1', socketId: 's', ttlMs: 100 });
    const r2 = reg.mintRun(a.lease, { runId: 'r-2', socketId: 's2', ttlMs: 10_000 });
    now += 100;
    expect(reg.authenticate(r1.bearer, 's')).toBeUndefined();
    expect(reg.authenticate(r2.bearer, 's2')).toBeDefined();
    reg.revoke(a.lease.leaseId);
    expect(reg.authenticate(r2.bearer, 's2')).toBeUndefined();
    expect(reg.isRevoked(r2.lease.leaseId)).toBe(true);
  });

  it('attenuates: a child holds the intersection, and never outlives its parent', () => {
    let now = 0;
    const reg = new LeaseRegistry(() => now);
    const a = reg.mintAssembly('ag', ['orch:read'], 1000);
    const child = reg.mintRun(a.lease, { runId: 'r', socketId: 's', ttlMs: 1_000_000, requested: ['orch:read', 'orch:web', 'orch:write'] });
    expect(child.lease.caps).toEqual(['orch:read']);
    expect(child.lease.expiresAt).toBeLessThanOrEqual(a.lease.expiresAt);
    const grandchild = reg.mintRun(child.lease, { runId: 'r2', socketId: 's2', ttlMs: 10, requested: ['orch:web'] });
    expect(grandchild.lease.caps).toEqual([]);
    now = 2000;
    expect(reg.authenticate(child.bearer, 's')).toBeUndefined();
  });
});
