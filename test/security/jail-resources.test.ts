/**
 * Attack battery, resources: every bound the jail promises holds — process
 * count (as root too), address space, file size, RAM-backed /tmp and
 * /dev/shm, the writable quota — and the host is fine afterwards.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { limits, node, pidsOfUid, python, root, runInJail, until, workspace } from '../jail/helpers.js';

const MIB = 1024 * 1024;

describe('jail resource limits', () => {
  it('a process-count probe stops at maxProcesses (EAGAIN), then everything is gone', async () => {
    const py = python();
    const script = `
import os, time, errno
kids = []
err = None
for i in range(500):
    try:
        pid = os.fork()
    except OSError as e:
        err = e.errno
        break
    if pid == 0:
        time.sleep(30); os._exit(0)
    kids.append(pid)
print(len(kids), err, flush=True)
for k in kids: os.kill(k, 9)
`;
    const r = await runInJail({ command: py.cmd(script), mounts: py.mounts, limits: { ...limits, maxProcesses: 24 } });
    expect(r.stderr).toBe('');
    const [count, err] = r.stdout.trim().split(' ');
    expect(Number(count)).toBeGreaterThan(5);
    expect(Number(count)).toBeLessThan(24);
    expect(err).toBe('11'); // EAGAIN: "Cannot fork"
    if (root) expect(pidsOfUid(r.hostUid)).toEqual([]);
  });

  it('a shell fork bomb hits the limit, is ended by kill(), leaves nothing, and the host still forks', async () => {
    const r = await runInJail({
      command: ['/bin/sh', '-c', 'echo go; b() { b | b & }; b; exec sleep 1000'], // pid 1 stays: only kill() ends it
      limits: { ...limits, maxProcesses: 32 },
      during: async (p, out) => {
        await until(() => out.stdout().includes('go'));
        await new Promise((res) => setTimeout(res, 1500));
        p.kill();
      },
    });
    expect(r.killedBy).toBe('kill');
    expect(r.stderr).toMatch(/Cannot fork|Resource temporarily unavailable/i);
    if (root) expect(pidsOfUid(r.hostUid)).toEqual([]);
    expect(spawnSync('/bin/true').status).toBe(0);
  });

  it('python: allocating past memoryMb fails with MemoryError inside', async () => {
    const py = python();
    const r = await runInJail({
      command: py.cmd(`
try:
    b = bytearray(300 * 1024 * 1024)
    print('allocated', len(b))
except MemoryError:
    print('MemoryError')
`),
      mounts: py.mounts,
      limits: { ...limits, memoryMb: 256 },
    });
    expect(r.stdout.trim()).toBe('MemoryError');
  });

  it('node at the default 4096 MiB: a 6 GiB allocation spree fails before reaching it', async () => {
    const n = node();
    const script = `
      const held = []; let total = 0;
      try { while (total < 6 * 1024) { held.push(Buffer.allocUnsafe(256 * 1024 * 1024)); total += 256; } console.log('allocated', total); }
      catch (e) { console.log('refused at', total, e.constructor.name); }`;
    const r = await runInJail({ command: n.cmd(script), mounts: n.mounts });
    const m = /refused at (\d+)/.exec(r.stdout);
    // Either a RangeError inside, or V8 aborts the process: both keep it below the limit.
    if (m) expect(Number(m[1])).toBeLessThan(4096);
    else expect(r.code).not.toBe(0);
    expect(r.stdout).not.toContain('allocated');
  });

  it('writing past fileSizeMb fails (EFBIG for python, SIGXFSZ for a shell)', async () => {
    const py = python();
    const r = await runInJail({
      command: py.cmd(`
import os
try:
    with open('/workspace/big', 'wb') as f:
        for _ in range(12): f.write(b'x' * (1024 * 1024))
    print('wrote all')
except OSError as e:
    print('refused', e.errno)
`),
      mounts: py.mounts,
      limits: { ...limits, fileSizeMb: 8 },
    });
    expect(r.stdout.trim()).toBe('refused 27'); // EFBIG
    expect(statSync(join(r.workspace, 'big')).size).toBeLessThanOrEqual(8 * MIB);
    const sh = await runInJail({ command: ['/bin/sh', '-c', 'head -c 9437184 /dev/zero > /workspace/big2'], limits: { ...limits, fileSizeMb: 8 } });
    expect(sh.code).toBe(128 + 25); // SIGXFSZ
    expect(statSync(join(sh.workspace, 'big2')).size).toBeLessThanOrEqual(8 * MIB);
  });

  it('filling /tmp or /dev/shm past tmpSizeMb fails with ENOSPC; / and /dev take nothing', async () => {
    const script =
      ['/tmp', '/dev/shm'].map((d) => `head -c 20971520 /dev/zero > ${d}/fill 2>/dev/null; echo "${d} rc=$? $(wc -c < ${d}/fill)"`).join('; ') +
      '; (echo x > /fill) 2>/dev/null || echo "root refused"; (echo x > /dev/fill) 2>/dev/null || echo "dev refused"';
    const r = await runInJail({ command: ['/bin/sh', '-c', script], limits: { ...limits, tmpSizeMb: 8 } });
    for (const d of ['/tmp', '/dev/shm']) {
      const m = new RegExp(`${d} rc=(\\d+) (\\d+)`).exec(r.stdout);
      expect(m, r.stdout).not.toBeNull();
      expect(Number(m![1])).not.toBe(0);
      expect(Number(m![2])).toBeLessThanOrEqual(8 * MIB);
    }
    expect(r.stdout).toContain('root refused');
    expect(r.stdout).toContain('dev refused');
  });

  it('the writable quota watchdog kills a run that writes past it', async () => {
    const ws = workspace();
    const r = await runInJail({
      ws,
      command: ['/bin/sh', '-c', 'i=0; while [ $i -lt 400 ]; do head -c 1048576 /dev/zero > /workspace/f$i; i=$((i+1)); sleep 0.02; done; echo finished'],
      writableQuota: { hostPath: ws.path, maxBytes: 8 * MIB },
    });
    expect(r.killedBy).toBe('quota');
    expect(r.stdout).not.toContain('finished');
    const written = readdirSync(ws.path).length;
    expect(written).toBeGreaterThanOrEqual(8);
    expect(written).toBeLessThan(400);
  });

  it('a run that stays under its quota is not touched', async () => {
    const ws = workspace();
    const r = await runInJail({ ws, command: ['/bin/sh', '-c', 'head -c 1048576 /dev/zero > /workspace/f; echo done'], writableQuota: { hostPath: ws.path, maxBytes: 8 * MIB } });
    expect(r.stdout).toBe('done\n');
    expect(r.killedBy).toBeUndefined();
    expect(r.code).toBe(0);
  });
});
