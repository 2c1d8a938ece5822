/**
 * `comis jail probe`'s last *working* report, kept in `$COMIS_HOME/cache`:
 * a second probe of an unchanged machine answers from it instead of
 * building four jails again.
 *
 * It stands on the same facts as the verdict cache (comis version, PATH,
 * kernel, arch, who we run as, the user-namespace sysctls) and on the
 * identity (device, inode, size, mtime, ctime) of every binary the report
 * names — bubblewrap, each helper, node, python3, jq, DuckDB's package.json —
 * and it is trusted for an hour at most: a probe is a diagnosis, so a change
 * the facts cannot see (an AppArmor profile, a library under /usr) is
 * picked up soon. A report with anything missing or failing is never
 * cached, so a broken machine is always probed afresh.
 */
import { join } from 'node:path';

import type { ProbeReport } from './probe.js';
import { currentContext, fileId, hostFacts, type VerdictContext } from './verdict-cache.js';
import { readPrivateFile, writePrivateFileAtomic } from '../private-file.js';

export const PROBE_CACHE_TTL_MS = 60 * 60 * 1000;

const ENTRY_VERSION = 1;

interface Entry {
  v: number;
  at: number;
  facts: string;
  files: Record<string, string>;
  report: ProbeReport;
}

/** Every file a working report's verdict rests on. */
function reportFiles(r: ProbeReport): string[] {
  const out = [r.binary, r.runtime.node.path, r.runtime.python3.path, r.runtime.jq.path, r.runtime.duckdb.path ? join(r.runtime.duckdb.path, 'package.json') : undefined];
  return [...new Set(out.filter((p): p is string => typeof p === 'string' && p !== ''))].sort();
}

/** A report is cached only when nothing in it is missing or failing. */
export function cacheableReport(r: ProbeReport): boolean {
  const parts = [r.runtime.node, r.runtime.python3, r.runtime.jq];
  return r.working && !r.problem && r.missing.length === 0 && r.checks.length > 0 && r.checks.every((c) => c.ok) && parts.every((p) => p.found && p.runsInJail === true) && r.runtime.duckdb.found;
}

/** The cached report, when every file it rests on (the report's binaries and the jail's helpers, as written) is unchanged. */
export function readCachedProbe(file: string, over: Partial<VerdictContext> = {}): ProbeReport | undefined {
  try {
    const entry = JSON.parse(readPrivateFile(file)) as Entry;
    const ctx = currentContext(over);
    if (entry?.v !== ENTRY_VERSION || typeof entry.at !== 'number' || ctx.now - entry.at > PROBE_CACHE_TTL_MS || entry.at > ctx.now) return undefined;
    if (entry.facts !== hostFacts(ctx) || !entry.report || !cacheableReport(entry.report)) return undefined;
    if (!entry.files || typeof entry.files !== 'object') return undefined;
    const files = Object.keys(entry.files);
    if (!reportFiles(entry.report).every((f) => files.includes(f))) return undefined;
    for (const f of files) if (entry.files[f] === undefined || entry.files[f] === '?' || entry.files[f] !== fileId(f)) return undefined;
    return entry.report;
  } catch {
    return undefined;
  }
}

/** Caches a working report; `helpers` are the jail's own tools the detection resolved (prlimit, setpriv…). */
export function writeCachedProbe(file: string, report: ProbeReport, helpers: readonly string[], over: Partial<VerdictContext> = {}): void {
  if (!cacheableReport(report)) return;
  const ctx = currentContext(over);
  const files: Record<string, string> = {};
  for (const f of [...new Set([...reportFiles(report), ...helpers])].sort()) files[f] = fileId(f);
  try {
    writePrivateFileAtomic(file, JSON.stringify({ v: ENTRY_VERSION, at: ctx.now, facts: hostFacts(ctx), files, report } satisfies Entry));
  } catch {
    /* best effort */
  }
}
