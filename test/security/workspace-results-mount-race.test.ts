/**
 * Before each run, comis clears what a previous run may have left where the
 * run's `results/` is mounted in the workspace: a file or a link there is
 * removed. The workspace is jail-writable, and another run of the same agent
 * (same workspace, and as root the same jail uid) may be racing in it at any
 * moment. A recursive removal by path (rm -rf) of that name, decided by an
 * lstat that saw a file, can meet a directory the racer swapped in, list
 * its entries, and then unlink each `results/<entry>` by path while the
 * racer has swapped `results` for a link to another directory: each unlink
 * then removes, as root, the file of that name there. The removal must not
 * recurse and must never reach through the name.
 *
 * Positive control: the removal as it was (lstat, then `rmSync(…, {
 * recursive: true })`) against the same racer deletes files of the canary.
 */
import { chmodSync, chownSync, existsSync, lstatSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { screenWorkspace } from '../../src/lib/orchestrate/workspace.js';
import { hasPython, root, startRacer } from '../helpers/racer.js';
import { tempDir } from '../helpers/temp.js';

const RACER_UID = 2_900_025;
const VICTIMS = 40;

/**
 * In the workspace: `results` cycles through a file, a directory of files named
 * like the canary's, and a link to the canary (exchanging `results` with `D`,
 * then with `L`, in turn), as fast as it can; every 32 turns it puts back what
 * a removal took (the names, the directory's entries).
 */
const RACER = `
RENAME_EXCHANGE = 2
victims = int(sys.argv[5])
def repair():
    for name in ('results', 'D', 'L'):
        if not os.path.lexists(name):
            live = [os.path.islink(x) for x in ('results', 'D', 'L') if os.path.lexists(x)]
            if True not in live:
                os.symlink(sys.argv[4], name)
            elif not any(os.path.isdir(x) and not os.path.islink(x) for x in ('results', 'D', 'L') if os.path.lexists(x)):
                os.mkdir(name)
            else:
                open(name, 'w').close()
    for name in ('results', 'D', 'L'):
        if os.path.isdir(name) and not os.path.islink(name):
            for i in range(victims):
                p = os.path.join(name, 'v%d' % i)
                if not os.path.lexists(p):
                    open(p, 'w').close()
while time.time() < end:
    libc.renameat2(-100, b'results', -100, b'D', RENAME_EXCHANGE)
    libc.renameat2(-100, b'results', -100, b'L', RENAME_EXCHANGE)
    n += 1
    if n % 32 == 0:
        try:
            repair()
        except OSError:
            pass
`;

describe.skipIf(!hasPython)('the results mount point of a workspace: a racing run cannot steer its clean-up out of the workspace', () => {
  async function race(): Promise<{ workspace: string; canary: string; stop: () => Promise<void> }> {
    const base = tempDir('comis-ws-race-');
    chmodSync(base, 0o711);
    // Ours, outside the workspace, not writable by the racer: nothing in it may disappear.
    const canary = join(base, 'canary');
    mkdirSync(canary, { mode: 0o755 });
    for (let i = 0; i < VICTIMS; i++) writeFileSync(join(canary, `v${i}`), 'VICTIM');
    const workspace = join(base, 'ws');
    mkdirSync(join(workspace, 'D'), { recursive: true });
    writeFileSync(join(workspace, 'results'), '');
    for (let i = 0; i < VICTIMS; i++) writeFileSync(join(workspace, 'D', `v${i}`), '');
    if (root) {
      for (const p of [workspace, join(workspace, 'D'), join(workspace, 'results'), ...Array.from({ length: VICTIMS }, (_, i) => join(workspace, 'D', `v${i}`))]) chownSync(p, RACER_UID, RACER_UID);
    }
    const racer = await startRacer(RACER, workspace, 90, [canary, String(VICTIMS)], RACER_UID);
    return { workspace, canary, stop: racer.stop };
  }

  it('a screened workspace never loses a file outside it; the recursive removal by path does', { timeout: 180_000 }, async () => {
    // Positive control: lstat, then rm -rf of the name when it is not a directory, as the screen did.
    const control = await race();
    const mount = join(control.workspace, 'results');
    let tries = 0;
    const controlEnd = Date.now() + 30_000;
    try {
      while (readdirSync(control.canary).length === VICTIMS && Date.now() < controlEnd) {
        tries++;
        try {
          if (!lstatSync(mount).isDirectory()) rmSync(mount, { force: true, recursive: true });
        } catch {
          /* the race may make it fail */
        }
      }
    } finally {
      await control.stop();
    }
    expect(readdirSync(control.canary).length, `the race never steered a recursive removal in ${tries} tries`).toBeLessThan(VICTIMS);

    const s = await race();
    const ctx = { agentId: 'ops', comisHome: tempDir('comis-home-'), home: tempDir('comis-user-home-') };
    let screened = 0;
    const end = Date.now() + 6_000;
    try {
      while (Date.now() < end) {
        try {
          screenWorkspace(s.workspace, ctx);
          screened++;
        } catch {
          /* a screen may refuse while the racer keeps swapping; it must never reach outside */
        }
      }
    } finally {
      await s.stop();
    }
    expect(readdirSync(s.canary).length).toBe(VICTIMS);
    expect(screened).toBeGreaterThan(100); // the attack ran against real screens
    expect(existsSync(s.workspace)).toBe(true);
  });
});
