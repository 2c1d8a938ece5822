/**
 * The SSRF guard's pure half: which addresses web_fetch may connect to, and
 * what a URL's host really is. No I/O here: the guarded connector
 * (web/guarded-agent.ts) calls {@link classifyAddress} on EVERY address a name
 * resolves to, at connect time, and dials exactly the address it checked.
 *
 * Semantics: an address is allowed only when it is ordinary global unicast.
 * Addresses are parsed by ipaddr.js (never by regexes), and the guard is an
 * allowlist of "unicast" on top of an explicit list of refused ranges, so a
 * special range a future library version stops naming is still refused.
 * IPv6 forms that embed an IPv4 address (IPv4-mapped `::ffff:a.b.c.d`,
 * NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) are judged by the IPv4 address
 * they carry; IPv4-compatible `::a.b.c.d`, local-use NAT64 and Teredo are
 * refused outright (their real target is not what the address says).
 *
 * The escape hatch is `web.fetch.allowPrivate` (operator config): entries of
 * IP, CIDR or IP:port that make a refused address reachable, and nothing else.
 *
 * A leaf (ipaddr.js only): the config schema parses allowPrivate with
 * {@link parsePrivateAllowRule} when it loads, and web/ enforces the same rules
 * at connect time, so neither has to reach into the other.
 */
import ipaddr from 'ipaddr.js';

type Addr = ipaddr.IPv4 | ipaddr.IPv6;

export type AddressVerdict = { allowed: true; address: string; family: 4 | 6 } | { allowed: false; address: string; family: 4 | 6 | 0; range: string };

/** Refused IPv4 ranges, by name. ipaddr's own range() is checked too; this list is the floor. */
const V4_REFUSED: readonly [string, string][] = [
  ['255.255.255.255/32', 'broadcast'],
  ['0.0.0.0/8', 'unspecified'],
  ['10.0.0.0/8', 'private'],
  ['100.64.0.0/10', 'carrierGradeNat'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'linkLocal'],
  ['172.16.0.0/12', 'private'],
  ['192.0.0.0/24', 'reserved'],
  ['192.0.2.0/24', 'documentation'],
  ['192.88.99.0/24', 'reserved'],
  ['192.168.0.0/16', 'private'],
  ['198.18.0.0/15', 'benchmarking'],
  ['198.51.100.0/24', 'documentation'],
  ['203.0.113.0/24', 'documentation'],
  ['224.0.0.0/4', 'multicast'],
  ['240.0.0.0/4', 'reserved'],
];

/** Refused IPv6 ranges (beyond "not in 2000::/3"), by name. */
const V6_REFUSED: readonly [string, string][] = [
  ['::/128', 'unspecified'],
  ['::1/128', 'loopback'],
  ['::/96', 'ipv4Compatible'],
  ['64:ff9b:1::/48', 'nat64LocalUse'],
  ['100::/64', 'discard'],
  ['2001::/32', 'teredo'],
  ['2001:2::/48', 'benchmarking'],
  ['2001:db8::/32', 'documentation'],
  ['3fff::/20', 'documentation'],
  ['fc00::/7', 'uniqueLocal'],
  ['fe80::/10', 'linkLocal'],
  ['fec0::/10', 'siteLocal'],
  ['ff00::/8', 'multicast'],
];

const v4Refused = V4_REFUSED.map(([cidr, name]) => [ipaddr.IPv4.parseCIDR(cidr), name] as const);
const v6Refused = V6_REFUSED.map(([cidr, name]) => [ipaddr.IPv6.parseCIDR(cidr), name] as const);
const GLOBAL_UNICAST_V6 = ipaddr.IPv6.parseCIDR('2000::/3');
const NAT64 = ipaddr.IPv6.parseCIDR('64:ff9b::/96');
const SIX_TO_FOUR = ipaddr.IPv6.parseCIDR('2002::/16');
const MAPPED = ipaddr.IPv6.parseCIDR('::ffff:0:0/96');

/** Parses an address as it comes from a resolver or a URL host (brackets and a zone allowed). */
export function parseAddress(text: string): Addr | undefined {
  const bare = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  // Strict forms only here: a resolver never answers "0x7f.1"; URL hosts are normalised by WHATWG URL first.
  if (ipaddr.IPv4.isValidFourPartDecimal(bare)) return ipaddr.IPv4.parse(bare);
  if (!ipaddr.IPv6.isValid(bare)) return undefined;
  // ipaddr reads a dotted tail as IPv4-MAPPED (`::127.0.0.1` → `::ffff:7f00:1`), which is not the
  // address the kernel dials: the WHATWG serializer gives the canonical hex form first. A zone id
  // (`fe80::1%eth0`) is dropped: it only selects an interface, the range check refuses link-local anyway.
  const zoneless = bare.split('%', 1)[0]!;
  let canonical: string;
  try {
    canonical = new URL(`http://[${zoneless}]/`).hostname.slice(1, -1);
  } catch {
    return undefined;
  }
  return ipaddr.IPv6.isValid(canonical) ? ipaddr.IPv6.parse(canonical) : undefined;
}

function v4FromParts(hi: number, lo: number): ipaddr.IPv4 {
  return new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);
}

function classifyV4(a: ipaddr.IPv4): string | undefined {
  for (const [cidr, name] of v4Refused) if (a.match(cidr)) return name;
  const range = a.range();
  return range === 'unicast' ? undefined : range;
}

/** The range name that refuses `a`, or undefined when it is ordinary global unicast. */
function refusedRange(a: Addr): string | undefined {
  if (a.kind() === 'ipv4') return classifyV4(a as ipaddr.IPv4);
  const v6 = a as ipaddr.IPv6;
  // Embedded IPv4: judged by what it carries (a mapped/NAT64/6to4 form of 127.0.0.1 is loopback).
  if (v6.match(MAPPED)) {
    const inner = classifyV4(v6.toIPv4Address());
    return inner === undefined ? undefined : `ipv4Mapped(${inner})`;
  }
  if (v6.match(NAT64)) {
    const inner = classifyV4(v4FromParts(v6.parts[6]!, v6.parts[7]!));
    return inner === undefined ? undefined : `nat64(${inner})`;
  }
  if (v6.match(SIX_TO_FOUR)) {
    const inner = classifyV4(v4FromParts(v6.parts[1]!, v6.parts[2]!));
    return inner === undefined ? undefined : `6to4(${inner})`;
  }
  for (const [cidr, name] of v6Refused) if (v6.match(cidr)) return name;
  if (!v6.match(GLOBAL_UNICAST_V6)) return 'notGlobalUnicast';
  const range = v6.range();
  return range === 'unicast' ? undefined : range;
}

/**
 * Whether web_fetch may connect to `address` (as a resolver answers it, or a
 * bracketed IPv6 URL host). Anything that does not parse as an address is
 * refused: the guard never guesses.
 */
export function classifyAddress(address: string): AddressVerdict {
  const parsed = parseAddress(address);
  if (!parsed) return { allowed: false, address, family: 0, range: 'unparseable' };
  const family = parsed.kind() === 'ipv4' ? 4 : 6;
  // Zone ids (fe80::1%eth0) are dropped from what we report; the range check already refuses link-local.
  const normal = family === 6 ? (parsed as ipaddr.IPv6).toNormalizedString().replace(/%.*$/, '') : parsed.toString();
  const range = refusedRange(parsed);
  if (range === undefined) return { allowed: true, address: family === 6 ? (parsed as ipaddr.IPv6).toString() : normal, family };
  return { allowed: false, address: normal, family, range };
}

/** One `web.fetch.allowPrivate` entry, parsed: an address range, optionally one port. */
export interface PrivateAllowRule {
  range: [Addr, number];
  port?: number;
  /** The entry as the operator wrote it, for messages. */
  text: string;
}

/**
 * Parses `allowPrivate` entries: `10.1.2.3`, `10.1.2.0/24`, `127.0.0.1:8080`,
 * `fd00::/8`, `::1`, `[::1]:8080`. Throws an Error saying what is wrong
 * (without echoing the entry: the config loader names its key and line).
 */
export function parsePrivateAllowRule(text: string): PrivateAllowRule {
  let host = text;
  let port: number | undefined;
  const parsePort = (p: string): number => {
    const n = Number(p);
    if (p === '' || !Number.isInteger(n) || String(n) !== p) throw new Error('the port must be a number');
    return n;
  };
  const lastColon = text.lastIndexOf(':');
  if (text.startsWith('[')) {
    // [v6]:port — the brackets are config syntax; the address inside goes to ipaddr.
    const close = text.indexOf(']');
    if (close === -1 || text[close + 1] !== ':') throw new Error('write a bracketed IPv6 entry as [address]:port');
    host = text.slice(1, close);
    port = parsePort(text.slice(close + 2));
  } else if (lastColon !== -1 && text.indexOf(':') === lastColon) {
    // Exactly one colon: IPv4:port (an IPv6 address has at least two).
    host = text.slice(0, lastColon);
    port = parsePort(text.slice(lastColon + 1));
  }
  if (port !== undefined && (port < 1 || port > 65_535)) throw new Error('the port must be 1-65535');
  if (host.includes('/')) {
    if (port !== undefined) throw new Error('a CIDR range takes no port');
    // The base address parses strictly (no 0x7f.1/8), the prefix length is a plain integer in range.
    const slash = host.indexOf('/');
    const base = parseAddress(host.slice(0, slash));
    const bitsText = host.slice(slash + 1);
    const bits = Number(bitsText);
    const max = base?.kind() === 'ipv4' ? 32 : 128;
    if (!base || bitsText === '' || !Number.isInteger(bits) || String(bits) !== bitsText || bits < 0 || bits > max) throw new Error('not an IP address, CIDR range or IP:port');
    return { range: [base, bits], text };
  }
  const a = parseAddress(host);
  if (!a) throw new Error('not an IP address, CIDR range or IP:port (host names are not accepted: DNS decides where a name points)');
  const rule: PrivateAllowRule = { range: [a, a.kind() === 'ipv4' ? 32 : 128], text };
  if (port !== undefined) rule.port = port;
  return rule;
}

/** Whether an allowPrivate rule opens `address:port`. IPv4-mapped IPv6 matches its IPv4 rule. */
export function privateAllowed(rules: readonly PrivateAllowRule[], address: string, port: number): PrivateAllowRule | undefined {
  let a = parseAddress(address);
  if (!a) return undefined;
  if (a.kind() === 'ipv6' && (a as ipaddr.IPv6).isIPv4MappedAddress()) a = (a as ipaddr.IPv6).toIPv4Address();
  for (const rule of rules) {
    if (rule.port !== undefined && rule.port !== port) continue;
    if (rule.range[0].kind() !== a.kind()) continue;
    if (a.match(rule.range as never)) return rule;
  }
  return undefined;
}

/**
 * A host pattern of `allowHosts`/`denyHosts`: `example.org` matches exactly
 * that name, `*.example.org` matches every name under it (not the apex).
 * Names compare lowercased, without a trailing dot.
 */
export function hostMatches(pattern: string, hostname: string): boolean {
  const p = normaliseHostname(pattern);
  const h = normaliseHostname(hostname);
  if (p.startsWith('*.')) return h.endsWith(p.slice(1)) && h.length > p.length - 1;
  return p === h;
}

/** Lowercase, no trailing dot, IPv6 brackets kept off. */
export function normaliseHostname(hostname: string): string {
  let h = hostname.toLowerCase();
  if (h.endsWith('.')) h = h.slice(0, -1);
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  return h;
}

export interface ParsedTarget {
  url: URL;
  /** The host to resolve or, for an IP literal, the address itself (brackets off). */
  hostname: string;
  /** Set when the host is an IP literal: no resolver is asked. */
  literal?: string;
  port: number;
}

export type TargetRefusal = { refused: true; code: 'bad_url' | 'scheme_refused'; message: string };

/**
 * Parses a URL the way every HTTP client will (WHATWG URL: decimal, octal,
 * hex and short IPv4 forms, fullwidth digits, IDN and trailing dots all
 * normalise here), refuses any scheme but http/https, and strips userinfo
 * (`http://evil@127.0.0.1/` is a request to 127.0.0.1, and comis never sends
 * credentials from a URL). The address check itself happens at connect time.
 */
export function parseTarget(raw: string, base?: URL): ParsedTarget | TargetRefusal {
  let url: URL;
  try {
    url = base ? new URL(raw, base) : new URL(raw);
  } catch {
    return { refused: true, code: 'bad_url', message: 'not a valid absolute URL' };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return { refused: true, code: 'scheme_refused', message: `the ${url.protocol.replace(/:$/, '')}: scheme is refused (only http and https)` };
  }
  if (url.hostname === '') return { refused: true, code: 'bad_url', message: 'the URL has no host' };
  url.username = '';
  url.password = '';
  url.hash = '';
  const hostname = normaliseHostname(url.hostname);
  const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
  const target: ParsedTarget = { url, hostname, port };
  if (parseAddress(hostname)) target.literal = hostname;
  else if (hostname.split('.').includes('')) {
    // `evil.com..`: a name with an empty label. A resolver may read it as `evil.com.` (that is,
    // evil.com), while the host policy compares names: refused, so the two never disagree.
    return { refused: true, code: 'bad_url', message: 'the host has an empty label (two dots in a row, or a leading or an extra trailing dot)' };
  }
  return target;
}
