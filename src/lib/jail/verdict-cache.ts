/**
 * The verdict cache: a *working* detection kept in `$COMIS_HOME/cache`, so
 * that a CLI invocation does not pay for the smoke test each time.
 */
import { chmodSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { release } from 'node:os';
import { dirname } from 'node:path';

import type { Detection } from './detect.js';
import { findHelper, findOnPath } from './host.js';
import { readUsernsFacts } from './userns.js';

/** A verified detection is trusted for this long before the smoke test runs again. */
export const DETECTION_CACHE_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * What must be unchanged for a cached detection to stand: the binaries
 * (path, inode, size, mtime), the kernel, who we run as, and the user
 * namespace sysctls. Anything else changing re-runs the smoke test.
 */
function detectionFingerprint(): string | undefined {
  const bwrap = findOnPath('bwrap');
  if (!bwrap) return undefined;
  const files = [bwrap, findHelper('prlimit'), findHelper('setpriv'), findHelper('timeout'), findHelper('unshare'), findHelper('mount')].map((f) => {
    if (!f) return '-';
    try {
      const st = statSync(f);
      return `${f}:${st.ino}:${st.size}:${st.mtimeMs}`;
    } catch {
      return `${f}:?`;
    }
  });
  return JSON.stringify({ v: 2, files, kernel: release(), arch: process.arch, euid: process.geteuid?.(), userns: readUsernsFacts() });
}

/**
 * Reads a cached *working* detection, so that a CLI invocation does not pay
 * for the smoke test each time. Only successes are cached; a stale or
 * mismatched entry is ignored. The jail's flags are applied in full on every
 * spawn either way, and bubblewrap fails loudly when one cannot be.
 */
export function readCachedDetection(file: string): Detection | undefined {
  try {
    const entry = JSON.parse(readFileSync(file, 'utf8')) as { fingerprint: string; at: number; detection: Detection };
    if (Date.now() - entry.at > DETECTION_CACHE_TTL_MS || entry.at > Date.now()) return undefined;
    if (entry.fingerprint !== detectionFingerprint()) return undefined;
    if (entry.detection.info.problem || !entry.detection.tools || !entry.detection.arch) return undefined;
    return entry.detection;
  } catch {
    return undefined;
  }
}

export function writeCachedDetection(file: string, detection: Detection): void {
  const fingerprint = detectionFingerprint();
  if (!fingerprint) return;
  try {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    const temp = `${file}.${process.pid}.tmp`;
    writeFileSync(temp, JSON.stringify({ fingerprint, at: Date.now(), detection }), { mode: 0o600 });
    chmodSync(temp, 0o600);
    renameSync(temp, file);
  } catch {
    /* a cache that cannot be written only costs the next run a smoke test */
  }
}
