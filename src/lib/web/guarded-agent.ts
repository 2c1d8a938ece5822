/**
 * The SSRF guard's connect-time half: an undici@7 Agent whose connector
 * resolves the host ONCE, checks EVERY address it got (net/ssrf.ts), and then
 * dials exactly the first checked address: the socket is opened to an IP,
 * so nothing resolves the name again and DNS rebinding between the check
 * and the connect cannot happen (the way Stripe's Smokescreen does it).
 * TLS keeps the original host as SNI and for certificate verification.
 *
 * The resolver and the dialler are injected: production uses the system
 * resolver and undici's own connector; tests pass a stub resolver and a
 * recording dialler that refuses to dial anything but 127.0.0.1, so a broken
 * guard under test still sends nothing off the machine.
 */
import { lookup } from 'node:dns/promises';

import type { Agent, buildConnector as BuildConnector } from 'undici';

import { classifyAddress, normaliseHostname, parseAddress, privateAllowed, type PrivateAllowRule } from '../net/ssrf.js';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to all its addresses (never called for an IP literal). */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

/** undici's connector shape; `options.hostname` is always an already-checked IP address. */
export type Dialer = BuildConnector.connector;

/** A refusal by the guard at connect time (undici hands it back as the request's error). */
export class GuardRefusal extends Error {
  readonly code: 'ssrf_blocked' | 'dns_failed';
  constructor(code: GuardRefusal['code'], message: string) {
    super(message);
    this.name = 'GuardRefusal';
    this.code = code;
  }
}

export interface GuardOptions {
  allowPrivate: readonly PrivateAllowRule[];
  resolve?: Resolver;
  dial?: Dialer;
  /** Connect timeout of one dial, ms. */
  connectTimeoutMs?: number;
  /** Largest response head undici accepts, bytes (a bigger one is a headers-overflow error). */
  maxHeaderSize?: number;
  /**
   * TESTS ONLY: skip the address check, so a test can show that without the
   * guard its recording dialler would have been asked for the address.
   */
  unsafeSkipAddressCheck?: boolean;
}

export const systemResolver: Resolver = async (hostname) => {
  const answers = await lookup(hostname, { all: true, verbatim: true });
  return answers.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

/**
 * Decides the address to dial for `hostname:port`: every address checked,
 * any refused one refuses the whole name (a name with one private answer is
 * a rebinding tool, whatever its other answers are).
 */
export async function pinAddress(hostname: string, port: number, options: Pick<GuardOptions, 'allowPrivate' | 'resolve' | 'unsafeSkipAddressCheck'>): Promise<ResolvedAddress> {
  const host = normaliseHostname(hostname);
  const literal = parseAddress(host);
  let addresses: ResolvedAddress[];
  if (literal) addresses = [{ address: host, family: literal.kind() === 'ipv4' ? 4 : 6 }];
  else {
    try {
      addresses = await (options.resolve ?? systemResolver)(host);
    } catch {
      throw new GuardRefusal('dns_failed', `cannot resolve ${host}`);
    }
  }
  if (addresses.length === 0) throw new GuardRefusal('dns_failed', `cannot resolve ${host}`);
  if (options.unsafeSkipAddressCheck) return addresses[0]!;
  for (const a of addresses) {
    const verdict = classifyAddress(a.address);
    if (verdict.allowed || privateAllowed(options.allowPrivate, a.address, port)) continue;
    // A name's resolved address is not echoed (it would map the intranet for the script); a literal's is its own.
    const what = literal ? `${verdict.address}` : `${host} (it resolves to a refused address)`;
    throw new GuardRefusal('ssrf_blocked', `connection to ${what} refused: ${verdict.range} addresses are not reachable from web_fetch (an operator can open one with web.fetch.allowPrivate)`);
  }
  // The canonical form of the first checked address is what is dialled; an IPv4-mapped answer is dialled as its IPv4.
  const first = parseAddress(addresses[0]!.address)!;
  if (first.kind() === 'ipv6' && (first as import('ipaddr.js').IPv6).isIPv4MappedAddress()) return { address: (first as import('ipaddr.js').IPv6).toIPv4Address().toString(), family: 4 };
  return { address: first.toString(), family: first.kind() === 'ipv4' ? 4 : 6 };
}

/** The guarded connector: pin, then dial the pinned IP with the original host as TLS servername. */
export function guardedConnector(options: GuardOptions, undici: typeof import('undici')): Dialer {
  const dial =
    options.dial ??
    undici.buildConnector({
      timeout: options.connectTimeoutMs ?? 10_000,
      // Never a second resolution: the host handed to net/tls is an IP, and a lookup would be a bug.
      lookup: (_host: string, _opts: unknown, cb: (err: Error) => void) => cb(new GuardRefusal('ssrf_blocked', 'the connector never resolves names')),
    } as BuildConnector.BuildOptions);
  return (connectOptions, callback) => {
    const port = Number(connectOptions.port) || (connectOptions.protocol === 'https:' ? 443 : 80);
    const host = normaliseHostname(connectOptions.hostname);
    pinAddress(host, port, options).then(
      (pinned) => {
        const servername = connectOptions.servername ?? (parseAddress(host) ? undefined : host);
        const next: BuildConnector.Options = { ...connectOptions, hostname: pinned.address, port: String(port) };
        if (servername) next.servername = servername;
        dial(next, callback);
      },
      (err: Error) => callback(err, null),
    );
  };
}

/** A new undici Agent with the guarded connector; the caller closes it. */
export function createGuardedAgent(options: GuardOptions, undici: typeof import('undici')): Agent {
  return new undici.Agent({
    connect: guardedConnector(options, undici),
    maxHeaderSize: options.maxHeaderSize ?? 32 * 1024,
    // One request at a time per fetch; no pipelining, no HTTP/2 (keeps the parser surface small).
    pipelining: 1,
    allowH2: false,
  });
}
