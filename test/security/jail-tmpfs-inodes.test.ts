/**
 * Issue 10, hole 4 (last item): the jail's RAM-backed /tmp and /dev/shm are
 * bounded in inodes, not only bytes. bubblewrap's `--tmpfs` takes a size
 * only, and a tmpfs without `nr_inodes` gets the kernel's default (half the
 * RAM pages: millions of inodes, each one kernel memory no byte limit
 * counts), so a script could pin gigabytes of the host's memory with empty
 * files. The stager mounts both with `nr_inodes` (as root in its private
 * mount namespace; not root in a user namespace of our own).
 *
 * Positive control: the same flood with the bound taken out
 * (`testOnlyWeaken.tmpInodes`, bubblewrap's own --tmpfs) creates more files
 * than the limit, so the bound, not the script, is what stops it.
 */
import { describe, expect, it } from 'vitest';

import { detectSandboxProviderFresh } from '../../src/lib/jail/provider.js';
import { limits, runInJail } from '../jail/helpers.js';

const LIMIT = 300;
/** Creates empty files until one fails; prints how many it made, the errno text, and statfs's inode total. */
const FLOOD = ['/tmp', '/dev/shm'].map((d) => `i=0; while [ $i -lt 1000 ] && touch ${d}/f$i 2>/dev/null; do i=$((i+1)); done; echo "${d} made=$i total=$(stat -f -c %c ${d})"`).join('; ');

function made(stdout: string, dir: string): { made: number; total: number } {
  const m = new RegExp(`${dir} made=(\\d+) total=(\\d+)`).exec(stdout);
  expect(m, stdout).not.toBeNull();
  return { made: Number(m![1]), total: Number(m![2]) };
}

describe('jail tmpfs inode bound', () => {
  const bounded = detectSandboxProviderFresh().tools?.tmpfsMount !== undefined;

  it.skipIf(!bounded)('an empty-file flood in /tmp or /dev/shm stops at autonomy.limits.tmpInodes', async () => {
    const r = await runInJail({ command: ['/bin/sh', '-c', FLOOD], limits: { ...limits, tmpInodes: LIMIT } });
    for (const d of ['/tmp', '/dev/shm']) {
      const { made: n, total } = made(r.stdout, d);
      expect(total).toBe(LIMIT);
      // The root directory is one of the inodes.
      expect(n).toBe(LIMIT - 1);
    }
  });

  it('positive control: without the bound the same flood passes the limit', async () => {
    const r = await runInJail({ command: ['/bin/sh', '-c', FLOOD], limits: { ...limits, tmpInodes: LIMIT }, testOnlyWeaken: { tmpInodes: true } });
    for (const d of ['/tmp', '/dev/shm']) {
      const { made: n, total } = made(r.stdout, d);
      expect(n).toBe(1000);
      expect(total).toBeGreaterThan(LIMIT);
    }
  });

  it('the detection bounds the tmpfs as root always, and not root wherever a user namespace of our own is allowed', () => {
    const d = detectSandboxProviderFresh();
    expect(d.info.problem).toBeUndefined();
    const check = d.info.checks!.find((c) => c.name === 'tmp inodes bounded')!;
    if (process.geteuid?.() === 0) {
      expect(d.tools!.tmpfsMount).toBe('stage');
      expect(check).toMatchObject({ ok: true });
    } else {
      // This machine allows unprivileged user namespaces (bubblewrap needs them too).
      expect(d.tools!.tmpfsMount).toBe('userns');
      expect(check).toMatchObject({ ok: true });
    }
  });
});
