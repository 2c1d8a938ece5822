/**
 * A child of a plan can plant `comis-results/<runId>.stdout` and
 * `<runId>.results` in its own workspace as links out of it (it can learn
 * its run id from its mounts). When the coordinator moves the child's
 * output there across filesystems (the workspace on another device than
 * $COMIS_HOME), a plain copy would follow the link and write, as root,
 * wherever it points. The planted names are cleared and the copy is
 * exclusive: the output lands in the workspace, the link's target is untouched.
 *
 * Positive control: the move really crosses devices (rename fails with
 * EXDEV), and the same copy without the protection writes through the link.
 *
 * The child's jail is not the only one that may run in that workspace: a
 * second run of the same plan (same lead and child ids) has the same
 * workspace and, as root, the same jail uid, and can swap `comis-results`
 * for a link while the first run's output is moved. A racer exchanging the
 * directory with a link to a canary (renameat2 RENAME_EXCHANGE, as the
 * workspace's owner) never gets an output into the canary; the path-based
 * move (check, then rename by path) does.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { materializeChildOutput } from '../../src/lib/coordinator/coordinator.js';
import { crossDevice, hasPython, root, scratchOnShm, startRacer } from '../helpers/racer.js';
import { tempDir } from '../helpers/temp.js';

describe.skipIf(!crossDevice)('coordinator: a child cannot redirect where its output is moved (no second filesystem: skipped)', () => {
  it('clears planted links and copies exclusively across devices', async () => {
    const workspace = tempDir('comis-ws-');
    const outside = tempDir('comis-outside-');
    const victim = join(outside, 'victim');
    writeFileSync(victim, 'ORIGINAL');
    const victimDir = join(outside, 'victim-dir');
    mkdirSync(victimDir);
    const runId = 'r-planted';
    const results = join(workspace, 'comis-results');
    mkdirSync(results);
    symlinkSync(victim, join(results, `${runId}.stdout`));
    symlinkSync(victimDir, join(results, `${runId}.results`));

    const scratch = scratchOnShm('comis-coord-');
    const tee = join(scratch, 'child.stdout');
    writeFileSync(tee, 'CHILD STDOUT');
    const kept = join(scratch, 'child.results');
    mkdirSync(kept);
    writeFileSync(join(kept, 'ref-1.json'), '{"a":1}');

    // Positive control: the move crosses devices, and an unprotected copy follows the link.
    expect(() => renameSync(tee, join(workspace, 'probe'))).toThrow(expect.objectContaining({ code: 'EXDEV' }));
    const probeTee = join(scratch, 'probe.stdout');
    writeFileSync(probeTee, 'WRITTEN THROUGH');
    const probeLink = join(workspace, 'probe-link');
    const probeVictim = join(outside, 'probe-victim');
    writeFileSync(probeVictim, 'x');
    symlinkSync(probeVictim, probeLink);
    copyFileSync(probeTee, probeLink);
    expect(readFileSync(probeVictim, 'utf8')).toBe('WRITTEN THROUGH');

    const info = await materializeChildOutput(tee, kept, workspace, runId, tempDir('comis-home-'), 'lead--c1');
    expect(readFileSync(victim, 'utf8')).toBe('ORIGINAL');
    expect(readdirSync(victimDir)).toEqual([]);
    const target = join(results, `${runId}.stdout`);
    expect(lstatSync(target).isFile()).toBe(true);
    expect(readFileSync(target, 'utf8')).toBe('CHILD STDOUT');
    expect(lstatSync(join(results, `${runId}.results`)).isDirectory()).toBe(true);
    expect(readFileSync(join(results, `${runId}.results`, 'ref-1.json'), 'utf8')).toBe('{"a":1}');
    expect(info).toMatchObject({ ref: `workspaces/lead--c1/comis-results/${runId}.stdout`, bytes: 12 });
  });
});

const RACER_UID = 2_900_023;
/**
 * Exchanges `comis-results` with `l` (a link to the canary) as fast as it
 * can, so half the time `comis-results` is the link. Every 64 exchanges it
 * repairs what the move under test may have changed: it needs one link and
 * one directory (a directory at both names sends one aside; a link at both
 * becomes a directory again).
 */
const RACER = `
def repair():
    a, b = os.path.islink('comis-results'), os.path.islink('l')
    if a and b:
        os.unlink('l'); os.mkdir('l')
    elif not a and not b:
        if os.path.lexists('l'): os.rename('l', 'd%d' % n)
        os.symlink(sys.argv[4], 'l')
    if not os.path.lexists('comis-results'): os.mkdir('comis-results')
while time.time() < end:
    libc.renameat2(-100, b'comis-results', -100, b'l', 2)
    n += 1
    if n % 64 == 0:
        try:
            repair()
        except OSError:
            pass
`;

describe.skipIf(!hasPython)('coordinator: a run racing in the same workspace cannot redirect the move', () => {
  /** A workspace owned by the racer (the jail uid), a canary outside it, and the racer running. */
  async function race(): Promise<{ workspace: string; canary: string; stop: () => Promise<void> }> {
    const base = tempDir('comis-coord-race-');
    chmodSync(base, 0o711);
    const canary = join(base, 'canary'); // ours, outside the workspace: nothing may land here
    mkdirSync(canary, { mode: 0o755 });
    const workspace = join(base, 'ws');
    mkdirSync(join(workspace, 'comis-results'), { recursive: true });
    symlinkSync(canary, join(workspace, 'l'));
    if (root) {
      for (const p of [workspace, join(workspace, 'comis-results')]) chownSync(p, RACER_UID, RACER_UID);
      spawnSync('chown', ['-h', `${RACER_UID}:${RACER_UID}`, join(workspace, 'l')]);
    }
    const racer = await startRacer(RACER, workspace, 60, [canary], RACER_UID);
    return { workspace, canary, stop: racer.stop };
  }

  function teeFile(scratch: string, i: number): string {
    const tee = join(scratch, `c${i}.stdout`);
    writeFileSync(tee, `OUTPUT ${i}`);
    return tee;
  }

  it('the output never lands through a swapped link; a path-based move does', { timeout: 120_000 }, async () => {
    const scratch = tempDir('comis-coord-scratch-');
    // Positive control: check, then rename by path, as the move did, until one lands in the canary (at most
    // 30 s: under load the racer may get few turns, so a count of moves alone made the control flaky).
    const control = await race();
    let landed = false;
    const controlEnd = Date.now() + 30_000;
    try {
      for (let i = 0; Date.now() < controlEnd && !landed; i++) {
        const tee = teeFile(scratch, i);
        const dir = join(control.workspace, 'comis-results');
        try {
          if (lstatSync(dir).isDirectory()) renameSync(tee, join(dir, `r-control-${i}.stdout`));
        } catch {
          /* the race may make it fail */
        }
        landed = readdirSync(control.canary).length > 0;
      }
    } finally {
      await control.stop();
    }
    expect(landed, 'the swap race never redirected a path-based move').toBe(true);

    const s = await race();
    const moved: string[] = [];
    try {
      for (let i = 0; i < 200; i++) {
        try {
          const info = await materializeChildOutput(teeFile(scratch, i), join(scratch, 'none'), s.workspace, `r-race-${i}`, scratch, 'lead--c1');
          moved.push(info.ref);
        } catch {
          /* a run may give up while the racer keeps swapping; it must never write outside */
        }
      }
    } finally {
      await s.stop();
    }
    expect(readdirSync(s.canary)).toEqual([]);
    expect(moved.length).toBeGreaterThan(100); // the attack ran against real moves
    // Every output is in the workspace, in a directory under whichever name the racer left it.
    const dirs = readdirSync(s.workspace).filter((d) => lstatSync(join(s.workspace, d)).isDirectory());
    const placed = dirs.flatMap((d) => readdirSync(join(s.workspace, d)).filter((n) => n.startsWith('r-race-')));
    expect(placed.length).toBe(moved.length);
  });
});
