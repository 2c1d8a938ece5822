import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const comisBin = join(repoRoot, 'bin', 'comis.js');

/** The one stderr line a successful human-mode `comis orchestrate` ends with (see successLine). */
export const SUCCESS_LINE = /^comis: run r-[0-9a-f]+ ok in \d+ ms(, [^\n]+)? · comis explain --last\n$/;

export interface CliResult {
  status: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the built `bin/comis.js` as a user would, with an isolated COMIS_HOME
 * and a clean environment (only PATH and what the test passes).
 */
export function runComis(args: string[], options: { home: string; env?: Record<string, string | undefined>; input?: string; cwd?: string; timeoutMs?: number }): CliResult {
  const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: options.home, COMIS_HOME: options.home };
  for (const [k, v] of Object.entries(options.env ?? {})) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  const res = spawnSync(process.execPath, [comisBin, ...args], {
    env,
    cwd: options.cwd ?? repoRoot,
    input: options.input,
    encoding: 'utf8',
    timeout: options.timeoutMs ?? 120_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  return { status: res.status, stdout: res.stdout, stderr: res.stderr };
}

export function parseJson<T = any>(text: string): T {
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new Error(`not JSON:\n${text.slice(0, 2000)}`);
  }
}
