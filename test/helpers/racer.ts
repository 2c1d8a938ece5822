/**
 * Scaffolding of the race tests in test/security: a second filesystem for moves that must cross
 * devices, and a python racer run as another uid (as root) or as ourselves (not root), the way a
 * concurrent jail of the same workspace would race comis.
 */
import { spawn } from 'node:child_process';
import { chownSync, existsSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { tempDir } from './temp.js';
import { until } from './until.js';

export const SHM = '/dev/shm';

/** Whether /dev/shm is another filesystem than the temp dir (a rename between them fails with EXDEV). */
export const crossDevice = ((): boolean => {
  try {
    return statSync(SHM).isDirectory() && statSync(SHM).dev !== statSync(tmpdir()).dev;
  } catch {
    return false;
  }
})();

/** A fresh directory on /dev/shm, removed after the current test. */
export function scratchOnShm(prefix = 'comis-shm-'): string {
  return tempDir(prefix, SHM);
}

export const root = process.getuid?.() === 0;
export const hasPython = existsSync('/usr/bin/python3');

/**
 * What every racer starts with: libc through ctypes (`libc.renameat2` …), its working directory
 * (argv[1]) and its end time (argv[2] seconds from now) set, the file `started` (argv[3], a path)
 * created, and `n = 0`. The body races until `end`; its own arguments follow from argv[4].
 */
const RACER_PREAMBLE = `
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
os.chdir(sys.argv[1])
end = time.time() + float(sys.argv[2])
open(sys.argv[3], 'w').close()
n = 0
`;

/**
 * Starts the python racer `body` (after {@link RACER_PREAMBLE}) in `dir` for `seconds`, as `uid`
 * when we are root (as ourselves otherwise), with `args` as its argv[4…], and returns once it has
 * started racing.
 */
export async function startRacer(body: string, dir: string, seconds: number, args: readonly string[], uid: number): Promise<{ stop: () => Promise<void> }> {
  // Its own directory for the file, the racer's (as root: it runs as another uid).
  const flagDir = tempDir('comis-racer-');
  if (root) chownSync(flagDir, uid, uid);
  const started = join(flagDir, 'started');
  const cmd = root ? ['setpriv', `--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', '/usr/bin/python3'] : ['/usr/bin/python3'];
  const racer = spawn(cmd[0]!, [...cmd.slice(1), '-c', RACER_PREAMBLE + body, dir, String(seconds), started, ...args], { stdio: 'ignore' });
  const gone = new Promise((r) => racer.on('exit', r));
  await until('the racer', () => existsSync(started));
  return {
    stop: async () => {
      racer.kill('SIGKILL');
      await gone;
    },
  };
}
