import { readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { cacheableReport, PROBE_CACHE_TTL_MS, readCachedProbe, writeCachedProbe } from '../../src/lib/jail/probe-cache.js';
import { probeJailCached, type ProbeReport } from '../../src/lib/jail/probe.js';
import { tempDir } from '../helpers/temp.js';

function cacheFile(): string {
  return join(tempDir(), 'cache', 'jail-probe.json');
}

describe('the jail probe cache', () => {
  it('a working report is cached privately and answers the next probe (positive control: a planted report is returned)', async () => {
    const file = cacheFile();
    const report = await probeJailCached(file);
    if (!cacheableReport(report)) return expect(() => statSync(file)).toThrow(); // this host lacks a part: nothing is cached
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(await probeJailCached(file)).toEqual(report);
    const entry = JSON.parse(readFileSync(file, 'utf8'));
    entry.report.version = '9.9.9-planted';
    writeFileSync(file, JSON.stringify(entry));
    expect((await probeJailCached(file)).version).toBe('9.9.9-planted');
    // A corrupt entry is ignored: the probe runs afresh and rewrites it.
    writeFileSync(file, '{"v":1,');
    expect((await probeJailCached(file)).version).toBe(report.version);
    expect(JSON.parse(readFileSync(file, 'utf8')).report.version).toBe(report.version);
  });

  it('a changed binary, another comis version or PATH, or age makes it stale; a failing report is never cached', async () => {
    const file = cacheFile();
    const report = await probeJailCached(cacheFile());
    if (!cacheableReport(report)) return;
    const helper = join(tempDir(), 'prlimit');
    writeFileSync(helper, '#!/bin/sh\n');
    const now = Date.now();
    writeCachedProbe(file, report, [helper], { now });
    expect(readCachedProbe(file, { now })).toEqual(report);
    expect(readCachedProbe(file, { now, comisVersion: '0.0.0-other' })).toBeUndefined();
    expect(readCachedProbe(file, { now, pathEnv: '/somewhere/else:/usr/bin' })).toBeUndefined();
    expect(readCachedProbe(file, { now: now + PROBE_CACHE_TTL_MS + 1000 })).toBeUndefined();
    utimesSync(helper, new Date(2020, 0, 1), new Date(2020, 0, 1));
    expect(readCachedProbe(file, { now })).toBeUndefined();
    const broken: ProbeReport = { ...report, working: false, missing: [{ part: 'jq', hint: 'apt-get install jq' }] };
    const other = cacheFile();
    writeCachedProbe(other, broken, []);
    expect(() => statSync(other)).toThrow();
    // An entry edited to hold a failing report is not used either.
    writeCachedProbe(file, report, [], { now });
    const entry = JSON.parse(readFileSync(file, 'utf8'));
    entry.report.checks[0].ok = false;
    writeFileSync(file, JSON.stringify(entry));
    expect(readCachedProbe(file, { now })).toBeUndefined();
  });
});
