/**
 * Phase 2, lease: the run's own attenuation of the agent's assembly lease.
 * The assembly lease is revoked by cleanup, which revokes the run lease with it.
 */
import type { Capability } from '../../capabilities/capabilities.js';
import { LeaseRegistry, newId } from '../../capabilities/lease.js';

export interface RunLease {
  runId: string;
  registry: LeaseRegistry;
  assembly: ReturnType<LeaseRegistry['mintAssembly']>;
  lease: ReturnType<LeaseRegistry['mintRun']>['lease'];
  /** The bearer the script presents on the socket (handed over in its environment only). */
  bearer: string;
}

/**
 * `extraMs`: time the run may need past its own timeout with the same lease; the
 * one-shot repair (./repair.ts) asks for its model budget plus one more timeout
 * when the agent's runs can be repaired, so the re-run is still authenticated.
 */
export function mintRunLease(agentId: string, agentCaps: readonly Capability[], timeoutMs: number, shared?: LeaseRegistry, extraMs = 0, runId = newId('r')): RunLease {
  const registry = shared ?? new LeaseRegistry();
  const assembly = registry.mintAssembly(agentId, agentCaps, timeoutMs + 120_000 + extraMs);
  const { lease, bearer } = registry.mintRun(assembly.lease, { runId, socketId: runId, ttlMs: timeoutMs + 30_000 + extraMs });
  return { runId, registry, assembly, lease, bearer };
}

/**
 * Replaces a run's leases, in place, with fresh ones for the same run (and socket): the old
 * bearer is revoked. For a run that waited for its jail slot after its lease was minted (a
 * coordinator child prepared while other children ran), so its lease expires as long after
 * the spawn as an unwaited run's does.
 */
export function renewRunLease(lease: RunLease, agentId: string, agentCaps: readonly Capability[], timeoutMs: number, extraMs = 0): void {
  lease.registry.revoke(lease.assembly.lease.leaseId);
  Object.assign(lease, mintRunLease(agentId, agentCaps, timeoutMs, lease.registry, extraMs, lease.runId));
}
