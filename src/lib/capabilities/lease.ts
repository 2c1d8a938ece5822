/**
 * Leases: who may call what over a capability socket, and for how long.
 *
 * An agent's *assembly lease* holds the capabilities of its profile. Every
 * orchestrate run gets its own *run lease*, an attenuation of the assembly
 * lease (caps = parent caps ∩ requested caps), so audit events attribute to
 * the run. The bearer is 256 random bits, handed to the jailed script once;
 * the registry keeps only its SHA-256 and compares in constant time.
 *
 * Security properties: a revoked or expired lease authenticates nothing (a
 * bearer saved by a script is worthless after its run); a lease is bound to
 * one socket (`socketId`), so one run's bearer is refused on another run's
 * socket; a child lease can never hold a capability its parent lacks.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

import { registerSecret, unregisterSecret } from '../redact/output-guard.js';
import { intersectCapabilities, type Capability } from './capabilities.js';

export interface Lease {
  leaseId: string;
  runId: string | undefined;
  agentId: string;
  caps: readonly Capability[];
  expiresAt: number;
  /** The lease this one was attenuated from. */
  parentLeaseId: string | undefined;
  /** The socket this lease is valid on (undefined for assembly leases, which no socket accepts). */
  socketId: string | undefined;
}

export interface MintedLease {
  lease: Lease;
  /** The bearer secret. Registered with the output guard at mint. */
  bearer: string;
}

interface Entry {
  lease: Lease;
  digest: Buffer;
  bearer: string;
  /** The bearer's UTF-8 bytes, for the constant-time comparison with a socket's last lease. */
  bearerBytes: Buffer;
  revoked: boolean;
}

function digestOf(bearer: string): Buffer {
  return createHash('sha256').update(bearer, 'utf8').digest();
}

export function newId(prefix: string): string {
  return `${prefix}-${randomBytes(6).toString('hex')}`;
}

/**
 * How many revoked leases a registry (and the output guard) keeps after their revocation. A
 * long-lived process (`comis mcp serve`, a coordinator of many children) revokes one lease pair
 * per run: without a bound, the registry and the guard's secret set (walked by every redaction)
 * would grow with every run. A forgotten revoked lease is as dead as a remembered one: its id is
 * reported revoked and its bearer matches nothing.
 */
export const REVOKED_LEASES_KEPT = 1024;

export class LeaseRegistry {
  private readonly byDigest = new Map<string, Entry>();
  private readonly byId = new Map<string, Entry>();
  /** Revoked lease ids, oldest first (at most {@link REVOKED_LEASES_KEPT}). */
  private readonly revokedOrder: string[] = [];
  /**
   * The lease last authenticated on each socket: a run's calls all carry the same bearer, so the
   * next call is compared with it (constant time, no hash) before the digest lookup. Dropped at revoke.
   */
  private readonly lastOnSocket = new Map<string, Entry>();

  constructor(private readonly now: () => number = Date.now) {}

  /** The agent-level lease runs attenuate from. No socket accepts it directly. */
  mintAssembly(agentId: string, caps: readonly Capability[], ttlMs: number): MintedLease {
    return this.mint({ agentId, caps: [...caps], runId: undefined, parentLeaseId: undefined, socketId: undefined, ttlMs });
  }

  /**
   * A per-run lease: caps = parent caps ∩ requested (all of the parent's when
   * not given), expiry no later than the parent's, valid on `socketId` only.
   */
  mintRun(parent: Lease, options: { runId: string; socketId: string; ttlMs: number; requested?: readonly Capability[]; agentId?: string }): MintedLease {
    const caps = intersectCapabilities(parent.caps, options.requested ?? parent.caps);
    const ttlMs = Math.max(0, Math.min(options.ttlMs, parent.expiresAt - this.now()));
    return this.mint({
      agentId: options.agentId ?? parent.agentId,
      caps,
      runId: options.runId,
      parentLeaseId: parent.leaseId,
      socketId: options.socketId,
      ttlMs,
    });
  }

  private mint(spec: { agentId: string; caps: Capability[]; runId: string | undefined; parentLeaseId: string | undefined; socketId: string | undefined; ttlMs: number }): MintedLease {
    const bearer = randomBytes(32).toString('base64url');
    registerSecret(bearer);
    const lease: Lease = Object.freeze({
      leaseId: newId('l'),
      runId: spec.runId,
      agentId: spec.agentId,
      caps: Object.freeze([...spec.caps]),
      expiresAt: this.now() + spec.ttlMs,
      parentLeaseId: spec.parentLeaseId,
      socketId: spec.socketId,
    });
    const digest = digestOf(bearer);
    const entry: Entry = { lease, digest, bearer, bearerBytes: Buffer.from(bearer, 'utf8'), revoked: false };
    this.byDigest.set(digest.toString('hex'), entry);
    this.byId.set(lease.leaseId, entry);
    return { lease, bearer };
  }

  /** The live lease for `bearer` on `socketId`, or undefined. */
  authenticate(bearer: unknown, socketId: string): Lease | undefined {
    if (typeof bearer !== 'string' || bearer.length === 0 || bearer.length > 256) return undefined;
    let entry = this.lastOnSocket.get(socketId);
    if (entry) {
      const given = Buffer.from(bearer, 'utf8');
      if (given.length !== entry.bearerBytes.length || !timingSafeEqual(given, entry.bearerBytes)) entry = undefined;
    }
    if (!entry) {
      const digest = digestOf(bearer);
      entry = this.byDigest.get(digest.toString('hex'));
      if (!entry || !timingSafeEqual(entry.digest, digest)) return undefined;
    }
    if (entry.revoked || this.now() >= entry.lease.expiresAt) return undefined;
    if (entry.lease.socketId === undefined || entry.lease.socketId !== socketId) return undefined;
    this.lastOnSocket.set(socketId, entry);
    return entry.lease;
  }

  /** Revokes the lease and every lease attenuated from it. Idempotent. */
  revoke(leaseId: string): void {
    const entry = this.byId.get(leaseId);
    if (!entry || entry.revoked) return;
    entry.revoked = true;
    if (entry.lease.socketId !== undefined && this.lastOnSocket.get(entry.lease.socketId) === entry) this.lastOnSocket.delete(entry.lease.socketId);
    for (const child of this.byId.values()) if (child.lease.parentLeaseId === leaseId) this.revoke(child.lease.leaseId);
    // The bearer stays registered with the output guard for a while (a revoked bearer is still a
    // secret in the run's last log lines), then both are forgotten, oldest first.
    this.byDigest.delete(entry.digest.toString('hex'));
    this.revokedOrder.push(leaseId);
    while (this.revokedOrder.length > REVOKED_LEASES_KEPT) {
      const old = this.byId.get(this.revokedOrder.shift()!);
      if (!old) continue;
      this.byId.delete(old.lease.leaseId);
      unregisterSecret(old.bearer);
    }
  }

  /** Leases the registry holds, live or recently revoked (bounded; see {@link REVOKED_LEASES_KEPT}). */
  get size(): number {
    return this.byId.size;
  }

  /** Sockets whose last authenticated lease is remembered (each dropped when that lease is revoked). */
  get socketsRemembered(): number {
    return this.lastOnSocket.size;
  }

  isRevoked(leaseId: string): boolean {
    return this.byId.get(leaseId)?.revoked ?? true;
  }
}
