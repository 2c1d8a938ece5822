import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { tempDir } from './temp.js';

/** python3's pty module: runs argv[1:] as the session leader of a fresh pty, writes every byte the terminal received. */
const PTY_RUN = `import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
out = b''
while True:
    try:
        data = os.read(fd, 65536)
    except OSError:
        break
    if not data:
        break
    out += data
_, status = os.waitpid(pid, 0)
sys.stdout.buffer.write(out)
sys.exit(os.waitstatus_to_exitcode(status))
`;

/**
 * Runs argv with stdin, stdout and stderr on a fresh pty, which is the controlling terminal of
 * argv[0] (it leads the new session); returns its exit status and every byte the terminal received.
 */
export function underPty(argv: string[], options: { env?: Record<string, string>; cwd?: string; timeoutMs?: number } = {}): { status: number | null; bytes: Buffer } {
  const driver = join(tempDir('comis-pty-'), 'pty_run.py');
  writeFileSync(driver, PTY_RUN);
  const res = spawnSync('python3', [driver, ...argv], {
    ...(options.env ? { env: { ...options.env, PATH: process.env.PATH ?? '/usr/bin:/bin' } } : {}),
    ...(options.cwd ? { cwd: options.cwd } : {}),
    timeout: options.timeoutMs ?? 120_000,
    maxBuffer: 16 * 1024 * 1024,
  });
  return { status: res.status, bytes: res.stdout };
}
