/**
 * The SSRF guard's pure half: every refused range, every spelling of a
 * refused address, and the allowPrivate escape hatch. Each refusal has its
 * positive control: a public address of the same family passes.
 */
import { describe, expect, it } from 'vitest';

import { classifyAddress, hostMatches, normaliseHostname, parsePrivateAllowRule, parseTarget, privateAllowed } from '../../src/lib/net/ssrf.js';

const REFUSED: [string, string][] = [
  ['127.0.0.1', 'loopback'],
  ['127.255.255.254', 'loopback'],
  ['10.0.0.1', 'private'],
  ['172.16.0.1', 'private'],
  ['172.31.255.255', 'private'],
  ['192.168.1.1', 'private'],
  ['100.64.0.1', 'carrierGradeNat'],
  ['100.127.255.255', 'carrierGradeNat'],
  ['169.254.169.254', 'linkLocal'],
  ['169.254.0.1', 'linkLocal'],
  ['0.0.0.0', 'unspecified'],
  ['0.1.2.3', 'unspecified'],
  ['255.255.255.255', 'broadcast'],
  ['224.0.0.1', 'multicast'],
  ['239.255.255.250', 'multicast'],
  ['192.0.2.1', 'documentation'],
  ['198.51.100.7', 'documentation'],
  ['203.0.113.9', 'documentation'],
  ['198.18.0.1', 'benchmarking'],
  ['198.19.255.1', 'benchmarking'],
  ['192.0.0.8', 'reserved'],
  ['192.88.99.1', 'reserved'],
  ['240.0.0.1', 'reserved'],
  // Named only by ipaddr's own range(), not by the guard's table: both are consulted.
  ['192.175.48.1', 'as112'],
  ['192.31.196.1', 'as112'],
  ['192.52.193.1', 'amt'],
  ['::', 'unspecified'],
  ['::1', 'loopback'],
  ['fe80::1', 'linkLocal'],
  ['febf::1', 'linkLocal'],
  ['fc00::1', 'uniqueLocal'],
  ['fd12:3456::1', 'uniqueLocal'],
  ['ff02::1', 'multicast'],
  ['fec0::1', 'siteLocal'],
  ['2001:db8::1', 'documentation'],
  ['3fff::1', 'documentation'],
  ['2001:2::1', 'benchmarking'],
  ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'teredo'],
  ['100::1', 'discard'],
  ['2001:3::1', 'amt'],
  ['2001:4:112::1', 'as112v6'],
  ['2620:4f:8000::1', 'as112v6'],
  ['2001:10::1', 'deprecatedOrchid'],
  ['2001:20::1', 'orchid2'],
  ['::ffff:127.0.0.1', 'ipv4Mapped(loopback)'],
  ['::ffff:7f00:1', 'ipv4Mapped(loopback)'],
  ['0:0:0:0:0:ffff:a9fe:a9fe', 'ipv4Mapped(linkLocal)'],
  ['::ffff:10.0.0.1', 'ipv4Mapped(private)'],
  ['::127.0.0.1', 'ipv4Compatible'],
  ['::a9fe:a9fe', 'ipv4Compatible'],
  ['64:ff9b::127.0.0.1', 'nat64(loopback)'],
  ['64:ff9b::a9fe:a9fe', 'nat64(linkLocal)'],
  ['64:ff9b::10.1.2.3', 'nat64(private)'],
  ['64:ff9b:1::1', 'nat64LocalUse'],
  ['2002:7f00:1::1', '6to4(loopback)'],
  ['2002:c0a8:101::1', '6to4(private)'],
  ['2002:a9fe:a9fe::', '6to4(linkLocal)'],
  ['fe80::1%eth0', 'linkLocal'],
  ['4000::1', 'notGlobalUnicast'],
];

describe('classifyAddress', () => {
  it.each(REFUSED)('%s is refused (%s)', (address, range) => {
    const v = classifyAddress(address);
    expect(v.allowed).toBe(false);
    expect(v.allowed === false && v.range).toBe(range);
  });

  it('public unicast passes, in every form that embeds a public IPv4 too (the positive controls)', () => {
    for (const a of ['93.184.216.34', '8.8.8.8', '1.1.1.1', '100.63.255.255', '100.128.0.1', '172.32.0.1', '169.253.255.255', '2606:4700::1111', '2a00:1450:4001::200e', '::ffff:8.8.8.8', '64:ff9b::8.8.8.8', '2002:808:808::1']) {
      expect(classifyAddress(a), a).toMatchObject({ allowed: true });
    }
  });

  it('refuses what does not parse as an address, and the non-strict IPv4 spellings a resolver never returns', () => {
    for (const a of ['', 'localhost', 'example.com', '127.1', '0x7f.0.0.1', '0177.0.0.1', '2130706433', '１２７.０.０.１', '127.0.0.1.', '1.2.3.4/8']) {
      expect(classifyAddress(a), a).toMatchObject({ allowed: false, range: 'unparseable' });
    }
  });

  it('refuses IPv6 text that only a lenient parser would read: half brackets, an empty zone, control characters, non-strict embedded IPv4', () => {
    // A bracket is stripped only as a pair: "[::1" is not "::", "1::1]" is not "::1".
    // WHATWG URL drops tabs and newlines anywhere in a URL; an address with one is still not an address.
    // ipaddr reads "::ffff:0x7f.0.0.1" as 127.0.0.1; the kernel never sees that spelling, so it is refused, not guessed.
    for (const a of ['[::1', '1::1]', '[', ']', '::1%', '::\t1', '::1\n', '::ffff:0x7f.0.0.1', '::ffff:0177.0.0.1', '::ffff:127.0.0.01']) {
      expect(classifyAddress(a), JSON.stringify(a)).toEqual({ allowed: false, address: a, family: 0, range: 'unparseable' });
    }
    // The positive controls: the same addresses written properly are classified.
    expect(classifyAddress('[::1]')).toMatchObject({ allowed: false, family: 6, range: 'loopback' });
    expect(classifyAddress('::ffff:127.0.0.1')).toMatchObject({ allowed: false, family: 6, range: 'ipv4Mapped(loopback)' });
    expect(classifyAddress('fe80::1%eth0')).toMatchObject({ family: 6, range: 'linkLocal' });
  });
});

/** Every spelling must land on a host the connect-time check sees as the refused address. */
const SPELLINGS: [string, string][] = [
  ['http://127.0.0.1/', '127.0.0.1'],
  ['http://2130706433/', '127.0.0.1'],
  ['http://017700000001/', '127.0.0.1'],
  ['http://0x7f000001/', '127.0.0.1'],
  ['http://0177.0.0.1/', '127.0.0.1'],
  ['http://0x7f.1/', '127.0.0.1'],
  ['http://0x7f.0x0.0x0.0x1/', '127.0.0.1'],
  ['http://127.1/', '127.0.0.1'],
  ['http://127.0.1/', '127.0.0.1'],
  ['http://１２７.０.０.１/', '127.0.0.1'],
  ['http://①②⑦.0.0.1/', '127.0.0.1'],
  ['http://127.0.0.1./', '127.0.0.1'],
  ['http://127.0.0.1%2e/', '127.0.0.1'],
  ['http://evil.example@127.0.0.1/', '127.0.0.1'],
  ['http://user:pass@127.0.0.1:8080/', '127.0.0.1'],
  ['http://0/', '0.0.0.0'],
  ['http://0.0.0.0/', '0.0.0.0'],
  ['http://[::1]/', '::1'],
  ['http://[::]/', '::'],
  ['http://[::ffff:127.0.0.1]/', '::ffff:7f00:1'],
  ['http://[0:0:0:0:0:ffff:7f00:1]/', '::ffff:7f00:1'],
  ['http://[::127.0.0.1]/', '::7f00:1'],
  ['http://[64:ff9b::7f00:1]/', '64:ff9b::7f00:1'],
  ['http://[2002:7f00:1::]/', '2002:7f00:1::'],
  ['http://[fe80::1]/', 'fe80::1'],
  ['http://[fd00::1]/', 'fd00::1'],
  ['http://169.254.169.254/latest/meta-data/', '169.254.169.254'],
  ['http://0xa9fea9fe/', '169.254.169.254'],
  ['http://2852039166/', '169.254.169.254'],
  ['http://0251.0376.0251.0376/', '169.254.169.254'],
  ['http://10.1/', '10.0.0.1'],
  ['http://192.168.257/', '192.168.1.1'],
  ['https://100.64.0.1:8443/', '100.64.0.1'],
];

describe('parseTarget: WHATWG URL normalises every spelling to the literal the guard checks', () => {
  it.each(SPELLINGS)('%s → %s, refused', (raw, literal) => {
    const t = parseTarget(raw);
    if ('refused' in t) throw new Error(`refused at parse: ${t.message}`);
    expect(t.literal).toBe(literal);
    expect(classifyAddress(t.literal!).allowed).toBe(false);
    // Credentials never travel: userinfo is stripped from what is requested.
    expect(t.url.username).toBe('');
    expect(t.url.password).toBe('');
  });

  it('names stay names (the connect-time check resolves them); IDN folds to its ASCII form', () => {
    expect(parseTarget('http://ⓛocalhost/')).toMatchObject({ hostname: 'localhost' });
    expect(parseTarget('http://LOCALHOST./')).toMatchObject({ hostname: 'localhost' });
    const idn = parseTarget('http://bücher.example/');
    expect(idn).toMatchObject({ hostname: 'xn--bcher-kva.example' });
    expect('literal' in idn).toBe(false);
    // userinfo that looks like a host is not the host
    expect(parseTarget('http://127.0.0.1:80@evil.example/')).toMatchObject({ hostname: 'evil.example' });
  });

  it('only http and https; bad URLs are refused at parse', () => {
    for (const raw of ['file:///etc/passwd', 'ftp://example.com/', 'gopher://127.0.0.1:25/', 'data:text/plain,x', 'javascript:alert(1)', 'ws://example.com/']) {
      expect(parseTarget(raw), raw).toMatchObject({ refused: true, code: 'scheme_refused' });
    }
    for (const raw of ['not a url', '//example.com/', 'http://']) expect(parseTarget(raw), raw).toMatchObject({ refused: true, code: 'bad_url' });
    expect(parseTarget('https://example.com:8443/x?y#frag')).toMatchObject({ hostname: 'example.com', port: 8443 });
    expect((parseTarget('https://example.com/x#frag') as { url: URL }).url.href).toBe('https://example.com/x');
  });
});

describe('allowPrivate rules', () => {
  it('IP, CIDR and IP:port entries open exactly what they name', () => {
    const rules = ['127.0.0.1:8080', '10.1.2.0/24', '192.168.5.5', 'fd00::/8', '[::1]:9000'].map(parsePrivateAllowRule);
    expect(privateAllowed(rules, '127.0.0.1', 8080)?.text).toBe('127.0.0.1:8080');
    expect(privateAllowed(rules, '127.0.0.1', 8081)).toBeUndefined();
    expect(privateAllowed(rules, '10.1.2.77', 443)?.text).toBe('10.1.2.0/24');
    expect(privateAllowed(rules, '10.1.3.1', 443)).toBeUndefined();
    expect(privateAllowed(rules, '192.168.5.5', 1)?.text).toBe('192.168.5.5');
    expect(privateAllowed(rules, 'fd12::1', 80)?.text).toBe('fd00::/8');
    expect(privateAllowed(rules, '::1', 9000)?.text).toBe('[::1]:9000');
    expect(privateAllowed(rules, '::1', 9001)).toBeUndefined();
    // An IPv4-mapped IPv6 answer matches its IPv4 rule, nothing more.
    expect(privateAllowed(rules, '::ffff:127.0.0.1', 8080)?.text).toBe('127.0.0.1:8080');
    expect(privateAllowed(rules, '::ffff:127.0.0.1', 80)).toBeUndefined();
    // An answer that is not an address opens nothing (and does not throw).
    for (const junk of ['', 'localhost', '127.1', '[::1']) expect(privateAllowed(rules, junk, 8080), junk).toBeUndefined();
  });

  it('refuses names, bad ports and malformed entries, without echoing the entry', () => {
    for (const bad of ['localhost', 'intranet.corp:443', '127.0.0.1:0', '127.0.0.1:70000', '127.0.0.1:x', '10.0.0.0/33', '10.0.0.0/8:80', '0x7f.1', '0x7f.1/8', '10.0.0.0/', '10.0.0.0/08', '[::1]', '']) {
      expect(() => parsePrivateAllowRule(bad), bad).toThrow(/^(?!.*").+/);
    }
  });
});

describe('host patterns', () => {
  it('exact names and *.suffix, case and trailing dot folded; a suffix does not match its apex or a lookalike', () => {
    expect(hostMatches('docs.example.org', 'DOCS.example.org.')).toBe(true);
    expect(hostMatches('docs.example.org', 'x.docs.example.org')).toBe(false);
    expect(hostMatches('*.example.org', 'a.b.example.org')).toBe(true);
    expect(hostMatches('*.example.org', 'example.org')).toBe(false);
    expect(hostMatches('*.example.org', 'badexample.org')).toBe(false);
  });
});

describe('what the guard reports (mutation testing found these unpinned)', () => {
  it('classifyAddress names the family and the address as checked', () => {
    expect(classifyAddress('8.8.8.8')).toEqual({ allowed: true, address: '8.8.8.8', family: 4 });
    expect(classifyAddress('2606:4700:0:0:0:0:0:1111')).toEqual({ allowed: true, address: '2606:4700::1111', family: 6 });
    expect(classifyAddress('127.0.0.1')).toEqual({ allowed: false, address: '127.0.0.1', family: 4, range: 'loopback' });
    expect(classifyAddress('::1')).toEqual({ allowed: false, address: '0:0:0:0:0:0:0:1', family: 6, range: 'loopback' });
    expect(classifyAddress('[::1]')).toMatchObject({ allowed: false, family: 6, range: 'loopback' });
    expect(classifyAddress('fe80::1%eth0')).toEqual({ allowed: false, address: 'fe80:0:0:0:0:0:0:1', family: 6, range: 'linkLocal' });
    expect(classifyAddress('nope')).toEqual({ allowed: false, address: 'nope', family: 0, range: 'unparseable' });
  });

  it('allowPrivate entries are refused with a message saying what is wrong', () => {
    const msg = (text: string): string => {
      try {
        parsePrivateAllowRule(text);
      } catch (err) {
        return (err as Error).message;
      }
      return 'accepted';
    };
    expect(msg('127.0.0.1:x')).toBe('the port must be a number');
    expect(msg('127.0.0.1:')).toBe('the port must be a number');
    expect(msg('127.0.0.1:080')).toBe('the port must be a number');
    expect(msg('127.0.0.1:1.5')).toBe('the port must be a number');
    expect(msg('127.0.0.1:8e3')).toBe('the port must be a number');
    expect(msg('[::1]:')).toBe('the port must be a number');
    expect(msg('[::1]')).toBe('write a bracketed IPv6 entry as [address]:port');
    expect(msg('[::1:80')).toBe('write a bracketed IPv6 entry as [address]:port');
    expect(msg('127.0.0.1:0')).toBe('the port must be 1-65535');
    expect(msg('127.0.0.1:65536')).toBe('the port must be 1-65535');
    expect(msg('127.0.0.1:65535')).toBe('accepted');
    expect(msg('127.0.0.1:1')).toBe('accepted');
    expect(msg('10.0.0.0/8:80')).toBe('a CIDR range takes no port');
    expect(msg('10.0.0.0/33')).toBe('not an IP address, CIDR range or IP:port');
    expect(msg('10.0.0.0/32')).toBe('accepted');
    expect(msg('::/128')).toBe('accepted');
    expect(msg('::/129')).toBe('not an IP address, CIDR range or IP:port');
    expect(msg('10.0.0.0/-1')).toBe('not an IP address, CIDR range or IP:port');
    expect(msg('10.0.0.0/8.5')).toBe('not an IP address, CIDR range or IP:port');
    expect(msg('example.com/8')).toBe('not an IP address, CIDR range or IP:port');
    expect(msg('/8')).toBe('not an IP address, CIDR range or IP:port');
    // A zero-length prefix is the operator opening every private address of a family, on purpose.
    expect(msg('0.0.0.0/0')).toBe('accepted');
    expect(msg('::/0')).toBe('accepted');
    // Empty brackets are config syntax around no address.
    expect(msg('[]:80')).toBe('not an IP address, CIDR range or IP:port (host names are not accepted: DNS decides where a name points)');
    expect(msg('localhost')).toBe('not an IP address, CIDR range or IP:port (host names are not accepted: DNS decides where a name points)');
    expect(parsePrivateAllowRule('[::1]:9000')).toMatchObject({ port: 9000, text: '[::1]:9000' });
    expect('port' in parsePrivateAllowRule('10.0.0.1')).toBe(false);
    expect(parsePrivateAllowRule('10.0.0.0/8').range[1]).toBe(8);
    expect(parsePrivateAllowRule('10.0.0.1').range[1]).toBe(32);
    expect(parsePrivateAllowRule('fd00::1').range[1]).toBe(128);
  });

  it('parseTarget: default ports, the refused scheme named, brackets off a host', () => {
    expect(parseTarget('http://example.com/')).toMatchObject({ hostname: 'example.com', port: 80 });
    expect(parseTarget('https://example.com/')).toMatchObject({ hostname: 'example.com', port: 443 });
    expect(parseTarget('http://example.com:443/')).toMatchObject({ port: 443 });
    expect(parseTarget('ftp://example.com/')).toEqual({ refused: true, code: 'scheme_refused', message: 'the ftp: scheme is refused (only http and https)' });
    expect(parseTarget('not a url')).toEqual({ refused: true, code: 'bad_url', message: 'not a valid absolute URL' });
    expect(parseTarget('/next', new URL('http://example.com/a'))).toMatchObject({ hostname: 'example.com' });
    expect(parseTarget('http://[::1]:8080/')).toMatchObject({ hostname: '::1', literal: '::1', port: 8080 });
  });

  it('parseTarget: one trailing dot is the same name; an empty label anywhere is refused (a resolver may drop it, the host policy would not)', () => {
    expect(parseTarget('http://example.com./')).toMatchObject({ hostname: 'example.com' });
    for (const url of ['http://example.com../', 'http://example.com.../', 'http://example..com/', 'http://.example.com/', 'http://example.com%2e%2e/']) {
      expect(parseTarget(url), url).toEqual({ refused: true, code: 'bad_url', message: 'the host has an empty label (two dots in a row, or a leading or an extra trailing dot)' });
    }
    // An IP literal is not a name: its dots are not labels, and it normalises in the parser.
    expect(parseTarget('http://127.0.0.1./')).toMatchObject({ hostname: '127.0.0.1', literal: '127.0.0.1' });
    expect(parseTarget('http://[::ffff:127.0.0.1]/')).toMatchObject({ literal: '::ffff:7f00:1' });
  });

  it('host patterns: a suffix pattern needs a label before the suffix', () => {
    expect(hostMatches('*.example.org', '.example.org')).toBe(false);
    expect(hostMatches('*.example.org', 'a.example.org')).toBe(true);
    expect(hostMatches('EXAMPLE.org.', 'example.ORG')).toBe(true);
    expect(hostMatches('[::1]', '::1')).toBe(true);
  });

  it('normaliseHostname folds case, one trailing dot and a pair of IPv6 brackets, and nothing else', () => {
    expect(normaliseHostname('Docs.Example.ORG.')).toBe('docs.example.org');
    expect(normaliseHostname('[::1]')).toBe('::1');
    expect(normaliseHostname('[FE80::1].')).toBe('fe80::1');
    // Half a bracket pair is left as written: it is not a bracketed literal, and no pattern can match it by accident.
    expect(normaliseHostname('[::1')).toBe('[::1');
    expect(normaliseHostname('::1]')).toBe('::1]');
    expect(hostMatches('[::1', '::1')).toBe(false);
    expect(hostMatches('::1]', '::1')).toBe(false);
  });
});
