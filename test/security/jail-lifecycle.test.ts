/**
 * Attack battery, lifecycle: nothing a script starts outlives its jail —
 * not a setsid'd or double-forked daemon, not after kill(), not after the
 * jail's pid 1 exits on its own, not after the comis process is SIGKILLed.
 */
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { tempDir } from '../helpers/temp.js';
import { bundleJail, pidsOfUid, pidsWithCmdline, python, root, runInJail, sleepMarker, until, workspace } from '../jail/helpers.js';

function daemonScript(mark: string): string {
  // setsid'd background sleep, a python double-fork daemon with its own session, then report.
  return `
import os, subprocess, sys
subprocess.Popen(['/usr/bin/setsid', '/bin/sleep', '${mark}'], start_new_session=True)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv('/bin/sleep', ['/bin/sleep', '${mark}'])
    os._exit(0)
`;
}

describe('jail lifecycle', () => {
  it('kill() leaves nothing: setsid and double-forked daemons are gone when exited resolves', async () => {
    const mark = sleepMarker();
    const py = python();
    const r = await runInJail({
      command: py.cmd(`${daemonScript(mark)}
import time
print('ready', flush=True)
time.sleep(1000)
`),
      mounts: py.mounts,
      during: async (p, out) => {
        await until(() => out.stdout().includes('ready'));
        await until(() => pidsWithCmdline(mark).length >= 2, 20_000, 'the daemons to start');
        p.kill();
      },
    });
    expect(r.killedBy).toBe('kill');
    // The contract: when exited resolves, the jail is already empty. No polling here.
    expect(pidsWithCmdline(mark)).toEqual([]);
    if (root) expect(pidsOfUid(r.hostUid)).toEqual([]);
  });

  it('when pid 1 exits by itself, its daemons die with the pid namespace before exited resolves', async () => {
    const mark = sleepMarker();
    const py = python();
    const r = await runInJail({ command: py.cmd(`${daemonScript(mark)}\nimport time; time.sleep(0.3); print('bye')`), mounts: py.mounts });
    expect(r.stdout).toBe('bye\n');
    expect(r.code).toBe(0);
    expect(pidsWithCmdline(mark)).toEqual([]);
    if (root) expect(pidsOfUid(r.hostUid)).toEqual([]);
  });

  it('SIGKILL of the node process that spawned the jail leaves no jailed process behind', async () => {
    const dir = tempDir();
    const bundle = bundleJail(dir);
    const ws = workspace();
    const mark = sleepMarker();
    const driver = join(dir, 'driver.mjs');
    writeFileSync(
      driver,
      `import { spawnJail, DEFAULT_JAIL_LIMITS } from ${JSON.stringify(bundle)};
const p = spawnJail({
  command: ['/bin/sh', '-c', '/usr/bin/setsid /bin/sleep ${mark} & /bin/sleep ${mark} & echo ready; exec /bin/sleep ${mark}'],
  mounts: [{ kind: 'rw', source: ${JSON.stringify(ws.path)}, target: '/workspace' }],
  cwd: '/workspace', env: { PATH: '/usr/bin:/bin' }, limits: DEFAULT_JAIL_LIMITS, hostUid: ${ws.hostUid},
});
p.stdout.on('data', (d) => { if (String(d).includes('ready')) process.stdout.write('ready ' + p.pid + '\\n'); });
`,
    );
    writeFileSync(
      join(dir, 'again.mjs'),
      `import { spawnJail, DEFAULT_JAIL_LIMITS } from ${JSON.stringify(bundle)};
const p = spawnJail({ command: ['/bin/true'], mounts: [{ kind: 'rw', source: ${JSON.stringify(ws.path)}, target: '/workspace' }],
  cwd: '/workspace', env: {}, limits: DEFAULT_JAIL_LIMITS, hostUid: ${ws.hostUid} });
process.stdout.write(String((await p.exited).code) + '\\n');
`,
    );
    const parent = spawn(process.execPath, [driver], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    parent.stdout.on('data', (d: Buffer) => (out += d.toString()));
    parent.stderr.on('data', (d: Buffer) => (err += d.toString()));
    try {
      await until(() => out.includes('ready') || parent.exitCode !== null, 30_000, 'the driver to start the jail');
      expect(err).toBe('');
      const bwrapPid = Number(/ready (\d+)/.exec(out)![1]);
      await until(() => pidsWithCmdline(mark).length >= 3, 20_000, 'the jailed sleeps');
      const parentGone = new Promise((res) => parent.once('exit', res));
      parent.kill('SIGKILL');
      // The kernel delivers the parent-death signals asynchronously: poll until all are gone.
      await until(() => pidsWithCmdline(mark).length === 0, 20_000, 'the jailed processes to die');
      await until(() => pidsWithCmdline('bwrap').every((p) => p !== bwrapPid), 20_000, 'bubblewrap to die');
      if (root) await until(() => pidsOfUid(ws.hostUid).length === 0, 20_000, 'no process of the jail uid');

      // The dead driver could not remove its stage directory; the next comis process
      // that stages a bind sweeps it — and leaves a planted symlink and its target alone.
      await parentGone;
      // (Another comis process running meanwhile may sweep it first: that is fine too.)
      const stale = (): string[] => readdirSync(tmpdir()).filter((n) => n.startsWith(`comis-stage-${parent.pid}-`));
      const decoyTarget = tempDir();
      writeFileSync(join(decoyTarget, 'keep.txt'), 'keep');
      const decoy = join(tmpdir(), `comis-stage-${parent.pid}-decoy`);
      symlinkSync(decoyTarget, decoy);
      try {
        const again = spawnSync(process.execPath, [driver.replace('driver.mjs', 'again.mjs')], { encoding: 'utf8', timeout: 60_000 });
        expect(again.stderr).toBe('');
        expect(again.stdout).toBe('0\n');
        expect(stale()).toEqual([`comis-stage-${parent.pid}-decoy`]);
        expect(readFileSync(join(decoyTarget, 'keep.txt'), 'utf8')).toBe('keep');
      } finally {
        rmSync(decoy, { force: true });
      }
    } finally {
      parent.kill('SIGKILL');
    }
  });
});
