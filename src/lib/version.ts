/**
 * The version of this comis install, read once from its package.json (one
 * small file, no JSON schema library). Caches key on it, so an upgrade
 * re-validates what an older comis concluded.
 */
import { readFileSync } from 'node:fs';

let version: string | undefined;

export function comisVersion(): string {
  if (version === undefined) {
    try {
      // src/lib/version.ts and dist/lib/version.js are both two levels below the package root.
      const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: unknown };
      version = typeof pkg.version === 'string' ? pkg.version : 'unknown';
    } catch {
      version = 'unknown';
    }
  }
  return version;
}
