/**
 * The per-run lease of a run that may be repaired outlives the model round and
 * one re-run: its TTL is the timeout + 30 s as before, plus the 120 s repair
 * budget and one more timeout. Without repair it is unchanged.
 */
import { describe, expect, it } from 'vitest';

import { mintRunLease } from '../../src/lib/orchestrate/phases/lease.js';
import { REPAIR_BUDGET_MS } from '../../src/lib/orchestrate/repair.js';

describe('mintRunLease with the repair budget', () => {
  it('covers timeout + 30 s without repair, and timeout + 30 s + 120 s + one more timeout with it', () => {
    const now = Date.now();
    const plain = mintRunLease('a', ['orch:read'], 10_000);
    expect(plain.lease.expiresAt - now).toBeLessThanOrEqual(40_000 + 1000);
    expect(plain.lease.expiresAt - now).toBeGreaterThanOrEqual(40_000 - 1000);
    const repairable = mintRunLease('a', ['orch:read'], 10_000, undefined, REPAIR_BUDGET_MS + 10_000);
    expect(repairable.lease.expiresAt - now).toBeGreaterThanOrEqual(10_000 + 30_000 + 120_000 + 10_000 - 1000);
    // The assembly lease is not shorter than the run lease it attenuates (mintRun clamps to it).
    expect(repairable.assembly.lease.expiresAt).toBeGreaterThanOrEqual(repairable.lease.expiresAt);
    expect(repairable.lease.caps).toEqual(['orch:read']);
  });
});
