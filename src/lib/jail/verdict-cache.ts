/**
 * The verdict cache: a *working* detection kept in `$COMIS_HOME/cache`, so
 * that a CLI invocation does not pay for the smoke test each time.
 *
 * Checking it is a handful of stats: the entry records the exact tool paths
 * the detection resolved (the ones every spawn then uses) with their inode,
 * size, mtime and ctime, and the facts the verdict depends on (comis version,
 * PATH, kernel, arch, who we run as, the user-namespace sysctls). The first
 * difference re-runs the smoke test: an upgrade of comis, a swapped or
 * reinstalled bubblewrap or helper, a changed PATH, a new kernel.
 */
import { existsSync, statSync } from 'node:fs';
import { release } from 'node:os';

import { fileURLToPath } from 'node:url';

import { comisVersion } from '../version.js';
import type { Detection } from './detect.js';
import { readUsernsFacts } from './userns.js';
import { readPrivateFile, writePrivateFileAtomic } from '../private-file.js';

/** A verified detection is trusted for this long before the smoke test runs again. */
export const DETECTION_CACHE_TTL_MS = 24 * 60 * 60 * 1000;

const ENTRY_VERSION = 4;

/** What the entry's facts are compared against; tests override one at a time. */
export interface VerdictContext {
  comisVersion: string;
  pathEnv: string;
  now: number;
}

export function currentContext(over: Partial<VerdictContext> = {}): VerdictContext {
  return { comisVersion: comisVersion(), pathEnv: process.env.PATH ?? '', now: Date.now(), ...over };
}

/** Identity of one file as stat sees it; a replaced binary has another inode or ctime. */
export function fileId(path: string): string {
  try {
    const st = statSync(path);
    return `${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}`;
  } catch {
    return '?';
  }
}

/**
 * The files a verdict stands on: every tool the detection resolved, and the
 * compiled modules that build the jail and its smoke test (a rebuilt comis
 * with the same version number still re-runs it).
 */
function verdictFiles(detection: Detection): string[] {
  const tools = detection.tools ? Object.values(detection.tools).filter((p): p is string => typeof p === 'string' && p.startsWith('/')) : [];
  // dist/ holds .js; tests run the .ts sources.
  const own = ['smoke', 'plan', 'launch'].map((name) => {
    const js = fileURLToPath(new URL(`./${name}.js`, import.meta.url));
    return existsSync(js) ? js : fileURLToPath(new URL(`./${name}.ts`, import.meta.url));
  });
  return [...new Set([...tools, ...own])].sort();
}

export function hostFacts(ctx: VerdictContext): string {
  return JSON.stringify({ comis: ctx.comisVersion, path: ctx.pathEnv, kernel: release(), arch: process.arch, euid: process.geteuid?.(), userns: readUsernsFacts() });
}

interface Entry {
  v: number;
  at: number;
  facts: string;
  files: Record<string, string>;
  detection: Detection;
}

/**
 * Reads a cached *working* detection. Only successes are cached; a stale,
 * mismatched, unreadable or malformed entry is ignored (the caller detects
 * afresh and rewrites it). The jail's flags are applied in full on every
 * spawn either way, and bubblewrap fails loudly when one cannot be.
 */
export function readCachedDetection(file: string, over: Partial<VerdictContext> = {}): Detection | undefined {
  try {
    const entry = JSON.parse(readPrivateFile(file)) as Entry;
    const ctx = currentContext(over);
    if (entry?.v !== ENTRY_VERSION || typeof entry.at !== 'number') return undefined;
    if (ctx.now - entry.at > DETECTION_CACHE_TTL_MS || entry.at > ctx.now) return undefined;
    const d = entry.detection;
    if (!d?.info || d.info.provider !== 'bwrap' || d.info.problem || !d.tools || typeof d.tools.bwrap !== 'string' || !d.arch) return undefined;
    if (entry.facts !== hostFacts(ctx)) return undefined;
    const files = verdictFiles(d);
    if (!entry.files || files.length !== Object.keys(entry.files).length) return undefined;
    for (const f of files) if (entry.files[f] !== fileId(f) || entry.files[f] === '?') return undefined;
    return d;
  } catch {
    return undefined;
  }
}

export function writeCachedDetection(file: string, detection: Detection, over: Partial<VerdictContext> = {}): void {
  if (detection.info.problem || !detection.tools) return;
  const ctx = currentContext(over);
  const files: Record<string, string> = {};
  for (const f of verdictFiles(detection)) files[f] = fileId(f);
  const entry: Entry = { v: ENTRY_VERSION, at: ctx.now, facts: hostFacts(ctx), files, detection };
  try {
    writePrivateFileAtomic(file, JSON.stringify(entry));
  } catch {
    /* a cache that cannot be written only costs the next run a smoke test */
  }
}
