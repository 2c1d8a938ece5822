/**
 * The SSRF guard parses its refused-range tables once, when its module loads,
 * so the connect-time check pays nothing per call for them. A table row that
 * does not parse is then a failure to import: a test file that imports the
 * guard statically reports that as a collection error with no failed test,
 * and Stryker's vitest runner counts such a run as "every test passed"
 * (a mutant in a table row would survive unseen). Here the guard is imported
 * inside a test, so a table that does not load fails this test by name.
 * scripts/mutation-modules.mjs runs this file first for the ssrf module.
 */
import { expect, it } from 'vitest';

it('the SSRF guard module loads: its refused-range tables and embedded-IPv4 prefixes parse', async () => {
  const { classifyAddress } = await import('../../src/lib/net/ssrf.js');
  // Each kind of table the module builds at load is consulted once: the IPv4 rows, the IPv6 rows,
  // the embedded-IPv4 prefixes (mapped, NAT64, 6to4) and the global-unicast bound.
  expect(classifyAddress('10.0.0.1')).toMatchObject({ allowed: false, range: 'private' });
  expect(classifyAddress('fc00::1')).toMatchObject({ allowed: false, range: 'uniqueLocal' });
  expect(classifyAddress('::ffff:127.0.0.1')).toMatchObject({ allowed: false, range: 'ipv4Mapped(loopback)' });
  expect(classifyAddress('64:ff9b::7f00:1')).toMatchObject({ allowed: false, range: 'nat64(loopback)' });
  expect(classifyAddress('2002:7f00:1::1')).toMatchObject({ allowed: false, range: '6to4(loopback)' });
  expect(classifyAddress('4000::1')).toMatchObject({ allowed: false, range: 'notGlobalUnicast' });
  expect(classifyAddress('2606:4700::1111')).toMatchObject({ allowed: true });
});
