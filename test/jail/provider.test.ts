import { chmodSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { detectSandboxProviderFresh, explainSmokeFailure, parseBwrapVersion, parseSmokeOutput, readUsernsFacts } from '../../src/lib/jail/provider.js';
import { tempDir } from '../helpers/temp.js';

function fakeSysctls(values: Record<string, string>): string {
  const root = tempDir();
  for (const [rel, v] of Object.entries(values)) {
    mkdirSync(join(root, rel, '..'), { recursive: true });
    writeFileSync(join(root, rel), `${v}\n`);
  }
  return root;
}

function pathWith(bins: Record<string, string>): string {
  const dir = tempDir();
  for (const [name, target] of Object.entries(bins)) {
    if (target.startsWith('#!')) {
      writeFileSync(join(dir, name), target);
      chmodSync(join(dir, name), 0o755);
    } else {
      symlinkSync(target, join(dir, name));
    }
  }
  return dir;
}

describe('detectSandboxProvider', () => {
  it('with bwrap not on PATH: provider none, in words, with the install hint', () => {
    const d = detectSandboxProviderFresh({ pathEnv: pathWith({ jq: '/usr/bin/jq' }) });
    expect(d.info.provider).toBe('none');
    expect(d.info.problem).toMatchObject({ code: 'BWRAP_MISSING', message: 'No sandbox provider: bubblewrap (bwrap) is not on PATH.' });
    expect(d.info.problem!.hint).toContain('apt-get install bubblewrap');
  });

  it('refuses a bubblewrap older than 0.8.0', () => {
    const d = detectSandboxProviderFresh({ pathEnv: pathWith({ bwrap: '#!/bin/sh\necho "bubblewrap 0.6.2"\n' }) });
    expect(d.info).toMatchObject({ provider: 'bwrap', version: '0.6.2', problem: { code: 'BWRAP_TOO_OLD' } });
  });

  it('a bwrap that does not answer --version is a problem, not a pass', () => {
    const d = detectSandboxProviderFresh({ pathEnv: pathWith({ bwrap: '#!/bin/sh\nexit 1\n' }) });
    expect(d.info.problem?.code).toBe('SMOKE_FAILED');
  });

  it('macOS: sandbox-exec is reported but refused for orchestrate; other platforms: none', () => {
    const mac = detectSandboxProviderFresh({ platform: 'darwin', pathEnv: pathWith({ 'sandbox-exec': '#!/bin/sh\nexit 0\n' }) });
    expect(mac.info).toMatchObject({ provider: 'sandbox-exec', problem: { code: 'SANDBOX_EXEC_ONLY' } });
    const macNone = detectSandboxProviderFresh({ platform: 'darwin', pathEnv: tempDir() });
    expect(macNone.info.provider).toBe('none');
    const win = detectSandboxProviderFresh({ platform: 'win32' });
    expect(win.info).toMatchObject({ provider: 'none', problem: { code: 'PLATFORM_UNSUPPORTED' } });
  });

  it('a restricting sysctl alone does not fail a jail that works', () => {
    const d = detectSandboxProviderFresh({ sysctlRoot: fakeSysctls({ 'kernel/apparmor_restrict_unprivileged_userns': '1' }) });
    expect(d.info.problem).toBeUndefined();
    expect(d.userns?.findings[0]).toMatch(/AppArmor/);
  });
});

describe('user namespace restrictions, in words', () => {
  it('reads the sysctls that restrict user namespaces', () => {
    const f = readUsernsFacts(fakeSysctls({ 'kernel/apparmor_restrict_unprivileged_userns': '1', 'kernel/unprivileged_userns_clone': '0', 'user/max_user_namespaces': '0' }));
    expect(f.findings).toHaveLength(3);
    expect(f.findings[0]).toContain('Ubuntu 24.04');
    expect(f.findings[1]).toContain('kernel.unprivileged_userns_clone=0');
    expect(f.findings[2]).toContain('user.max_user_namespaces=0');
    expect(f.hint).toContain('bwrap-userns-restrict');
    expect(readUsernsFacts(fakeSysctls({ 'user/max_user_namespaces': '15000' })).findings).toEqual([]);
  });

  it('Ubuntu 24.04 AppArmor: the raw bwrap error becomes a sentence and a fix', () => {
    const facts = readUsernsFacts(fakeSysctls({ 'kernel/apparmor_restrict_unprivileged_userns': '1' }));
    const p = explainSmokeFailure('bwrap: setting up uid map: Permission denied\n', facts);
    expect(p.code).toBe('USERNS_RESTRICTED');
    expect(p.message).toMatch(/^User namespaces are restricted on this machine/);
    expect(p.message).toContain('AppArmor');
    expect(p.hint).toContain('apparmor');
    expect(p.detail).toBe('bwrap: setting up uid map: Permission denied');
    const loop = explainSmokeFailure('bwrap: loopback: Failed RTM_NEWADDR: Operation not permitted', facts);
    expect(loop.code).toBe('USERNS_RESTRICTED');
  });

  it('Debian unprivileged_userns_clone=0 and max_user_namespaces=0', () => {
    const clone = explainSmokeFailure(
      "bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces. On e.g. debian this can be enabled with 'sysctl kernel.unprivileged_userns_clone=1'.",
      readUsernsFacts(fakeSysctls({ 'kernel/unprivileged_userns_clone': '0' })),
    );
    expect(clone).toMatchObject({ code: 'USERNS_RESTRICTED', hint: expect.stringContaining('kernel.unprivileged_userns_clone=1') });
    const max = explainSmokeFailure('bwrap: Creating new namespace failed: nesting depth or /proc/sys/user/max_*_namespaces exceeded (ENOSPC)', readUsernsFacts(fakeSysctls({ 'user/max_user_namespaces': '0' })));
    expect(max.code).toBe('USERNS_RESTRICTED');
    expect(max.message).toContain('user.max_user_namespaces');
  });

  it('anything else is a smoke failure that quotes the first line', () => {
    const p = explainSmokeFailure("bwrap: Can't mount proc on /newroot/proc: Operation not permitted\nmore", readUsernsFacts(fakeSysctls({})));
    expect(p.code).toBe('SMOKE_FAILED');
    expect(p.message).toContain("Can't mount proc");
  });
});

describe('smoke output', () => {
  it('parses the report of a hardened jail', () => {
    const ok = parseSmokeOutput(
      [
        'status Uid:\t1000\t1000\t1000\t1000',
        'status CapEff:\t0000000000000000',
        'status NoNewPrivs:\t1',
        'status Seccomp:\t2',
        'pid 1',
        'netdev Inter-|   Receive',
        'netdev  face |bytes',
        'netdev     lo:       0       0',
        'ws writable',
        'usr readonly',
        'etc synthetic',
        'tmpinodes 16384 16384',
      ].join('\n'),
      16_384,
    );
    expect(ok.every((c) => c.ok)).toBe(true);
  });

  it('the tmpfs inode bound: checked against the expected nr_inodes, advisory where the host cannot give it', () => {
    const lines = ['tmpinodes 3002235 3002235'];
    const wrong = parseSmokeOutput(lines.join('\n'), 16_384).find((c) => c.name === 'tmp inodes bounded')!;
    expect(wrong).toMatchObject({ ok: false, detail: 'nr_inodes 3002235 and 3002235 (want 16384)' });
    expect(wrong.advisory).toBeUndefined();
    const unavailable = parseSmokeOutput(lines.join('\n')).find((c) => c.name === 'tmp inodes bounded')!;
    expect(unavailable).toMatchObject({ ok: false, advisory: true });
    expect(unavailable.detail).toContain('bounded in bytes only');
  });

  it('flags root, capabilities, missing seccomp and a real network interface', () => {
    const bad = parseSmokeOutput(
      ['status Uid:\t0\t0\t0\t0', 'status CapEff:\t000001ffffffffff', 'status NoNewPrivs:\t0', 'status Seccomp:\t0', 'pid 2', 'netdev     lo: 0', 'netdev   eth0: 0', 'ws readonly', 'usr writable', 'etc host', 'tmpinodes 99 99'].join('\n'),
      16_384,
    );
    expect(bad.filter((c) => c.ok)).toEqual([]);
    expect(bad.find((c) => c.name === 'no network')!.detail).toBe('interfaces: lo, eth0');
  });

  it('parses bubblewrap versions', () => {
    expect(parseBwrapVersion('bubblewrap 0.8.0\n')).toEqual([0, 8, 0]);
    expect(parseBwrapVersion('bubblewrap 0.11')).toEqual([0, 11, 0]);
    expect(parseBwrapVersion('nope')).toBeUndefined();
  });
});
