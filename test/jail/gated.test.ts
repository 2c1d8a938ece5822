/**
 * A gated jail (JailRequest.gated): bubblewrap builds it and then waits, before it execs the
 * command, until the caller releases it; killed instead, the command never runs. The orchestrate
 * runner relies on it as root, to let nothing of a script run before the store has confirmed the
 * jail uid it guessed (test/security/jail-uids.test.ts). Control: the same jail without the gate
 * runs the command at once.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { spawnJail } from '../../src/lib/jail/spawn.js';
import type { JailRequest } from '../../src/lib/jail/types.js';
import { limits, node, until, workspace, WS } from './helpers.js';

/** Long enough for bubblewrap to have built the jail and for an ungated command to have run (the control shows it). */
const SETTLE_MS = 1_500;

function request(ws: { path: string; hostUid: number }, gated: boolean): JailRequest {
  const n = node();
  return {
    command: n.cmd(`require('fs').writeFileSync('${WS}/ran', 'x'); console.log('ran')`),
    mounts: [...n.mounts, { kind: 'rw', source: ws.path, target: WS }],
    cwd: WS,
    env: { PATH: '/usr/bin:/bin', HOME: '/tmp' },
    limits,
    hostUid: ws.hostUid,
    deadlineMs: 60_000,
    ...(gated ? { gated: true } : {}),
  };
}

const settle = (): Promise<void> => new Promise((r) => setTimeout(r, SETTLE_MS));

describe('a gated jail runs nothing until it is released', () => {
  it('control: without the gate the command runs at once', async () => {
    const ws = workspace();
    const p = spawnJail(request(ws, false));
    await until(() => existsSync(join(ws.path, 'ran')), 20_000, 'the ungated command to run');
    const exit = await p.exited;
    expect(exit.code).toBe(0);
  });

  it('gated: nothing runs until release(), then the command runs and exits as usual', async () => {
    const ws = workspace();
    const p = spawnJail(request(ws, true));
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
    await settle();
    expect(existsSync(join(ws.path, 'ran'))).toBe(false);
    p.release();
    const exit = await p.exited;
    expect(exit).toMatchObject({ code: 0, started: true });
    expect(out).toBe('ran\n');
    expect(existsSync(join(ws.path, 'ran'))).toBe(true);
  });

  it('gated and killed instead: the command never ran, and release() after it starts nothing', async () => {
    const ws = workspace();
    const p = spawnJail(request(ws, true));
    await settle();
    p.kill();
    p.release();
    const exit = await p.exited;
    expect(exit.started).toBe(false);
    expect(existsSync(join(ws.path, 'ran'))).toBe(false);
  });
});
