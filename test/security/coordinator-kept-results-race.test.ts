/**
 * A child's kept ResultRefs and writes (`<runId>.results`, a directory tree)
 * go beside its stdout in `comis-results/` of its workspace. When the
 * workspace is on another filesystem than $COMIS_HOME, the move is a copy:
 * the directory is made first, then each file is written into it. A second
 * run of the same plan (same workspace, and as root the same jail uid) owns
 * `comis-results` when it made it, so it may rename any entry there: it can
 * swap the freshly made `<runId>.results` for a link to anywhere between the
 * directory's creation and the files' (renameat2 RENAME_EXCHANGE). A copy
 * that reaches each file by path through that name then writes, as root,
 * where the link points. The copy must reach every name below a held fd.
 *
 * Positive control: the same race against a path-based recursive copy (what
 * the move did, `cpSync` into the held directory) lands files in the canary.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, closeSync, constants, cpSync, lstatSync, mkdirSync, openSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { materializeChildOutput } from '../../src/lib/coordinator/coordinator.js';
import { O_PATH, procPath } from '../../src/lib/confine/index.js';
import { crossDevice, hasPython, root, scratchOnShm, startRacer } from '../helpers/racer.js';
import { tempDir } from '../helpers/temp.js';

const RACER_UID = 2_900_024;
const FILES = 40;

/**
 * In `comis-results`, exchanges every real `*.results` directory it sees with
 * a fresh link to the canary, as fast as it can: the name then points out of
 * the workspace while the directory lives on under another name.
 */
const RACER = `
while time.time() < end:
    for name in os.listdir('.'):
        if not name.endswith('.results') or os.path.islink(name):
            continue
        n += 1
        t = 't%d' % n
        try:
            os.symlink(sys.argv[4], t)
            libc.renameat2(-100, name.encode(), -100, t.encode(), 2)
        except OSError:
            pass
`;

describe.skipIf(!crossDevice || !hasPython)('coordinator: a run racing in the same workspace cannot redirect the copy of kept results (no second filesystem: skipped)', () => {
  async function race(): Promise<{ workspace: string; results: string; canary: string; stop: () => Promise<void> }> {
    const base = tempDir('comis-kept-race-');
    chmodSync(base, 0o711);
    const canary = join(base, 'canary'); // ours, outside the workspace: nothing may land here
    mkdirSync(canary, { mode: 0o777 });
    const workspace = join(base, 'ws');
    const results = join(workspace, 'comis-results');
    mkdirSync(results, { recursive: true });
    if (root) for (const p of [workspace, results]) chownSync(p, RACER_UID, RACER_UID);
    const racer = await startRacer(RACER, results, 90, [canary], RACER_UID);
    return { workspace, results, canary, stop: racer.stop };
  }

  /** A child's output on the other filesystem: its stdout and a kept tree of FILES files in two levels. */
  function childOutput(i: number): { tee: string; kept: string } {
    const scratch = scratchOnShm('comis-kept-');
    const tee = join(scratch, 'child.stdout');
    writeFileSync(tee, `OUTPUT ${i}`);
    const kept = join(scratch, 'child.results');
    mkdirSync(join(kept, 'writes'), { recursive: true });
    for (let f = 0; f < FILES; f++) writeFileSync(join(kept, f % 2 ? 'writes' : '', `ref-${f}.json`), `{"i":${i},"f":${f}}`);
    return { tee, kept };
  }

  it('kept results never land through a swapped name; a path-based copy does', { timeout: 180_000 }, async () => {
    // Positive control: the copy as the move made it (recursive, by path below the held directory).
    const control = await race();
    let landed = 0;
    let attempts = 0;
    const controlEnd = Date.now() + 30_000; // until one lands, at most 30 s: under load the racer gets few turns
    try {
      for (let i = 0; Date.now() < controlEnd && landed === 0; i++) {
        attempts++;
        const { kept } = childOutput(i);
        const held = openSync(control.results, O_PATH | constants.O_DIRECTORY);
        try {
          cpSync(kept, procPath(held, `r-control-${i}.results`), { recursive: true, verbatimSymlinks: true, errorOnExist: true, force: false });
        } catch {
          /* the race may make it fail */
        } finally {
          closeSync(held);
        }
        landed = readdirSync(control.canary).length;
      }
    } finally {
      await control.stop();
    }
    expect(landed, `the swap race never redirected a path-based copy in ${attempts} copies`).toBeGreaterThan(0);

    const s = await race();
    let moved = 0;
    try {
      for (let i = 0; i < 150; i++) {
        const { tee, kept } = childOutput(i);
        try {
          await materializeChildOutput(tee, kept, s.workspace, `r-race-${i}`, tempDir('comis-kept-home-'), 'lead--c1');
          moved++;
        } catch {
          /* a move may give up while the racer keeps swapping; it must never write outside */
        }
      }
    } finally {
      await s.stop();
    }
    expect(readdirSync(s.canary)).toEqual([]);
    expect(moved).toBeGreaterThan(50); // the attack ran against real copies
    // The racer really swapped names during the protected moves: links to the canary sit in comis-results.
    expect(readdirSync(s.results).some((n) => n.endsWith('.results') && lstatSync(join(s.results, n)).isSymbolicLink())).toBe(true);
    // Nothing of comis's was written as root outside the workspace tree.
    expect(spawnSync('find', [s.canary, '-mindepth', '1']).stdout.toString()).toBe('');
  });
});
