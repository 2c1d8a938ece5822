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
 */
import { copyFileSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { materializeChildOutput } from '../../src/lib/coordinator/coordinator.js';
import { tempDir } from '../helpers/temp.js';

const SHM = '/dev/shm';
const crossDevice = ((): boolean => {
  try {
    return statSync(SHM).isDirectory() && statSync(SHM).dev !== statSync(tmpdir()).dev;
  } catch {
    return false;
  }
})();

const shmDirs: string[] = [];
afterEach(() => {
  while (shmDirs.length) rmSync(shmDirs.pop()!, { recursive: true, force: true });
});

function scratchOnShm(): string {
  const dir = mkdtempSync(join(SHM, 'comis-coord-'));
  shmDirs.push(dir);
  return dir;
}

describe.skipIf(!crossDevice)('coordinator: a child cannot redirect where its output is moved (no second filesystem: skipped)', () => {
  it('clears planted links and copies exclusively across devices', () => {
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

    const scratch = scratchOnShm();
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

    const info = materializeChildOutput(tee, kept, workspace, runId, tempDir('comis-home-'), 'lead--c1');
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
