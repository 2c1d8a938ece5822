/**
 * Layer 2 of the slicer: before any query, the run's results directory must
 * hold only plain files and directories (no symlinks, no multiply-linked
 * files, no devices or FIFOs). A symlink, a hard link (a file with more than
 * one name) or a special file there could point the engine's by-path check
 * (`allowed_directories`) at data outside the run, or hang it.
 *
 * The walk goes through the confinement module (each name looked up with
 * O_PATH|O_NOFOLLOW from its directory's handle), so the audit itself never
 * follows, opens or lists anything outside the directory.
 */
import { closeSync, lstatSync, readlinkSync } from 'node:fs';

import { listDir, lookup, openRoot, procPath, type Handle } from '../../confine/index.js';
import type { SliceQueryError } from './slice-types.js';

export const MAX_AUDIT_ENTRIES = 10_000;

/** Resolves the results directory (its real path, as the child must be told it) and audits it; or says why not. */
export function checkResultsDir(resultsDir: string): { real: string } | SliceQueryError {
  let root: Handle;
  let real: string;
  try {
    root = openRoot(resultsDir);
    real = readlinkSync(procPath(root.fd));
  } catch {
    return { code: 'results_unavailable', error: "this run's results directory is not available" };
  }
  const open: Handle[] = [root];
  try {
    const pending: Handle[] = [root];
    let seen = 0;
    while (pending.length > 0) {
      const dir = pending.pop()!;
      const names = listDir(dir, undefined);
      if (!names) return { code: 'results_unavailable', error: "this run's results directory cannot be listed" };
      for (const name of names) {
        if (++seen > MAX_AUDIT_ENTRIES) return { code: 'results_unsafe', error: `the results directory holds more than ${MAX_AUDIT_ENTRIES} entries` };
        const relPath = dir.rel === '.' ? name : `${dir.rel}/${name}`;
        let found;
        try {
          found = lookup(dir.fd, name);
        } catch {
          return { code: 'results_unsafe', error: `results/${relPath} cannot be checked; refusing to query the results directory` };
        }
        if (!found) {
          // Gone meanwhile, or a symlink: lookup answers both alike, so ask once more without following.
          try {
            lstatSync(procPath(dir.fd, name));
          } catch {
            continue; // removed meanwhile: nothing to read
          }
          return { code: 'results_unsafe', error: `results/${relPath} is a link or special file; refusing to query the results directory` };
        }
        if (found.stat.isDirectory()) {
          const h = { ...found, rel: relPath };
          open.push(h);
          pending.push(h);
        } else {
          closeSync(found.fd);
          if (!found.stat.isFile() || found.stat.nlink > 1) {
            return { code: 'results_unsafe', error: `results/${relPath} is a link or special file; refusing to query the results directory` };
          }
        }
      }
    }
    return { real };
  } finally {
    for (const h of open) closeSync(h.fd);
  }
}
