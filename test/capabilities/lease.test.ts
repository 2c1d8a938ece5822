import { describe, expect, it } from 'vitest';

import { LeaseRegistry, newId, REVOKED_LEASES_KEPT } from '../../src/lib/capabilities/lease.js';
import { redactSecrets, registeredSecretCount } from '../../src/lib/redact/output-guard.js';

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

  it("a socket's last lease (compared without hashing) is still checked every call: wrong, revoked, expired, another socket's", () => {
    let now = 1000;
    const reg = new LeaseRegistry(() => now);
    const a = reg.mintAssembly('ag', ['orch:read'], 60_000);
    const r1 = reg.mintRun(a.lease, { runId: 'r-1', socketId: 's', ttlMs: 1000 });
    const r2 = reg.mintRun(a.lease, { runId: 'r-2', socketId: 's', ttlMs: 10_000 });
    const other = reg.mintRun(a.lease, { runId: 'r-3', socketId: 't', ttlMs: 10_000 });
    expect(reg.authenticate(r1.bearer, 's')?.leaseId).toBe(r1.lease.leaseId);
    expect(reg.authenticate(r1.bearer, 's')?.leaseId).toBe(r1.lease.leaseId);
    // Same length, one character off: refused although r1 is the socket's last lease.
    const flipped = `${r1.bearer.slice(0, -1)}${r1.bearer.endsWith('A') ? 'B' : 'A'}`;
    expect(reg.authenticate(flipped, 's')).toBeUndefined();
    // Another live lease of the same socket still authenticates (and becomes the last one), and back.
    expect(reg.authenticate(r2.bearer, 's')?.leaseId).toBe(r2.lease.leaseId);
    expect(reg.authenticate(r1.bearer, 's')?.leaseId).toBe(r1.lease.leaseId);
    // Another socket's bearer is refused here, and the last lease of 's' is refused on 't'.
    expect(reg.authenticate(other.bearer, 's')).toBeUndefined();
    expect(reg.authenticate(r1.bearer, 't')).toBeUndefined();
    // Expiry and revocation count on the fast path too.
    now += 1000;
    expect(reg.authenticate(r1.bearer, 's')).toBeUndefined();
    expect(reg.authenticate(r2.bearer, 's')?.leaseId).toBe(r2.lease.leaseId);
    reg.revoke(r2.lease.leaseId);
    expect(reg.authenticate(r2.bearer, 's')).toBeUndefined();
    expect(reg.authenticate(other.bearer, 't')?.leaseId).toBe(other.lease.leaseId);
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

  it('ids are a prefix and 48 random bits; a lease id is l-…', () => {
    expect(newId('r')).toMatch(/^r-[0-9a-f]{12}$/);
    expect(newId('r')).not.toBe(newId('r'));
    const reg = new LeaseRegistry();
    expect(reg.mintAssembly('ag', [], 1000).lease.leaseId).toMatch(/^l-[0-9a-f]{12}$/);
  });

  it('a child expires exactly with its parent when it asks for more, at any clock value', () => {
    let now = 5_000;
    const reg = new LeaseRegistry(() => now);
    const a = reg.mintAssembly('ag', ['orch:read'], 1000);
    expect(a.lease.expiresAt).toBe(6_000);
    now = 5_400;
    const child = reg.mintRun(a.lease, { runId: 'r', socketId: 's', ttlMs: 1_000_000 });
    expect(child.lease.expiresAt).toBe(6_000);
    const short = reg.mintRun(a.lease, { runId: 'r2', socketId: 's2', ttlMs: 100 });
    expect(short.lease.expiresAt).toBe(5_500);
    now = 7_000;
    const late = reg.mintRun(a.lease, { runId: 'r3', socketId: 's3', ttlMs: 100 });
    expect(late.lease.expiresAt).toBe(7_000);
    expect(reg.authenticate(late.bearer, 's3')).toBeUndefined();
  });

  it('revoking one run leaves its siblings and its parent alive; revoking an unknown id is a no-op', () => {
    const reg = new LeaseRegistry();
    const a = reg.mintAssembly('ag', ['orch:read'], 60_000);
    const r1 = reg.mintRun(a.lease, { runId: 'r-1', socketId: 's1', ttlMs: 10_000 });
    const r2 = reg.mintRun(a.lease, { runId: 'r-2', socketId: 's2', ttlMs: 10_000 });
    const g1 = reg.mintRun(r1.lease, { runId: 'r-3', socketId: 's3', ttlMs: 10_000 });
    reg.revoke(r1.lease.leaseId);
    expect(reg.isRevoked(r1.lease.leaseId)).toBe(true);
    expect(reg.isRevoked(g1.lease.leaseId)).toBe(true);
    expect(reg.isRevoked(r2.lease.leaseId)).toBe(false);
    expect(reg.isRevoked(a.lease.leaseId)).toBe(false);
    expect(reg.authenticate(r2.bearer, 's2')?.leaseId).toBe(r2.lease.leaseId);
    expect(() => reg.revoke('l-unknown')).not.toThrow();
    expect(() => reg.revoke(r1.lease.leaseId)).not.toThrow();
    expect(reg.authenticate(r1.bearer, 's1')).toBeUndefined();
  });

  it('an unknown lease id counts as revoked', () => {
    const reg = new LeaseRegistry();
    expect(reg.isRevoked('l-unknown')).toBe(true);
  });

  it('the assembly lease authenticates on no socket, even one a buggy caller leaves undefined', () => {
    const reg = new LeaseRegistry();
    const a = reg.mintAssembly('ag', ['orch:read'], 60_000);
    expect(reg.authenticate(a.bearer, undefined as unknown as string)).toBeUndefined();
    expect(reg.authenticate('', 'x')).toBeUndefined();
    expect(reg.authenticate('a'.repeat(257), 'x')).toBeUndefined();
  });

  it('a lease is frozen: its caps and fields cannot be widened after mint', () => {
    const reg = new LeaseRegistry();
    const a = reg.mintAssembly('ag', ['orch:read'], 60_000);
    expect(Object.isFrozen(a.lease)).toBe(true);
    expect(Object.isFrozen(a.lease.caps)).toBe(true);
    expect(a.lease).toEqual({ leaseId: a.lease.leaseId, runId: undefined, agentId: 'ag', caps: ['orch:read'], expiresAt: a.lease.expiresAt, parentLeaseId: undefined, socketId: undefined });
  });

  it('a long-lived registry stays bounded: revoked leases and their bearers are forgotten oldest first, and stay dead', () => {
    const reg = new LeaseRegistry();
    const guardBefore = registeredSecretCount();
    const runs = REVOKED_LEASES_KEPT * 3;
    const first = { assembly: '', bearer: '', run: '' };
    for (let i = 0; i < runs; i++) {
      // One run's lease pair, as orchestrate mints and cleanup revokes it.
      const a = reg.mintAssembly('ag', ['orch:read'], 60_000);
      const run = reg.mintRun(a.lease, { runId: `r-${i}`, socketId: `r-${i}`, ttlMs: 10_000 });
      if (i === 0) Object.assign(first, { assembly: a.lease.leaseId, bearer: run.bearer, run: run.lease.leaseId });
      // Control: while a run is live, its bearer authenticates and is redacted.
      expect(reg.authenticate(run.bearer, `r-${i}`)).toBeDefined();
      reg.revoke(a.lease.leaseId);
    }
    // 2 leases a run, each once registered: the registry and the guard hold the last KEPT only.
    expect(reg.size).toBe(REVOKED_LEASES_KEPT);
    // The socket shortcut (last lease per socket) forgets each socket with its lease.
    expect(reg.socketsRemembered).toBe(0);
    expect(registeredSecretCount() - guardBefore).toBeLessThanOrEqual(REVOKED_LEASES_KEPT);
    // The forgotten first run is still revoked, and its bearer still authenticates nothing.
    expect(reg.isRevoked(first.assembly)).toBe(true);
    expect(reg.isRevoked(first.run)).toBe(true);
    expect(reg.authenticate(first.bearer, 'r-0')).toBeUndefined();
    // A live lease minted now is unaffected.
    const live = reg.mintAssembly('ag', ['orch:read'], 60_000);
    const run = reg.mintRun(live.lease, { runId: 'r-live', socketId: 'r-live', ttlMs: 10_000 });
    expect(reg.authenticate(run.bearer, 'r-live')?.leaseId).toBe(run.lease.leaseId);
    expect(redactSecrets(run.bearer)).toBe('[REDACTED]');
  });
});
