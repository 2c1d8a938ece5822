/**
 * The sandbox provider of this machine, as one answer per process: the
 * verdict cache (verdict-cache.ts) when it still stands, else a fresh
 * detection (detect.ts: binary, helpers, smoke test in smoke.ts, user
 * namespace diagnosis in userns.ts).
 */
import type { Detection, WorkingJail } from './detect.js';
import { detectSandboxProviderFresh } from './detect.js';
import type { SandboxProviderInfo } from './types.js';
import { readCachedDetection, writeCachedDetection } from './verdict-cache.js';

export { DEFAULT_JAIL_LIMITS } from './defaults.js';
export { detectSandboxProviderFresh, parseBwrapVersion, type DetectOptions, type WorkingJail } from './detect.js';
export { parseSmokeOutput } from './smoke.js';
export { explainSmokeFailure, readUsernsFacts } from './userns.js';

let cached: Detection | undefined;

/**
 * The sandbox provider of this machine, detected once per process (binary
 * probe + smoke test of the real jail) and cached.
 *
 * Contract: `provider` is 'bwrap' on Linux with bubblewrap on PATH,
 * 'sandbox-exec' on macOS when present, 'none' otherwise; `problem` is set
 * whenever the jail cannot be used, with a message in words and an install
 * or fix hint. Security property: callers must refuse to run a script when
 * `provider !== 'bwrap' || problem` — there is no unjailed fallback.
 */
export function detectSandboxProvider(options: { cacheFile?: string } = {}): SandboxProviderInfo {
  if (!cached && options.cacheFile) cached = readCachedDetection(options.cacheFile);
  if (!cached) {
    cached = detectSandboxProviderFresh();
    if (options.cacheFile && !cached.info.problem) writeCachedDetection(options.cacheFile, cached);
  }
  return cached.info;
}

/** The tools and architecture of the cached detection, when it found a working bubblewrap. */
export function workingJail(): WorkingJail | undefined {
  const d = cached ?? (detectSandboxProvider(), cached);
  if (!d || d.info.problem || !d.tools || !d.arch) return undefined;
  return { tools: d.tools, arch: d.arch };
}

/** Forgets the cached detection (tests; a long-lived process after the user installed bubblewrap). */
export function resetSandboxProviderCache(): void {
  cached = undefined;
}
