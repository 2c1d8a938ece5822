/**
 * Attack battery, secrets: nothing of the host's environment, files or
 * comis state reaches the jail, and the lease bearer handed to the script
 * shows on no host command line.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { tempDir } from '../helpers/temp.js';
import { bundleJail, node, python, root, runInJail, until, workspace } from '../jail/helpers.js';

const DECOYS = {
  DECOY_API_KEY: 'decoy-key-7f3a9c2e51b84d06',
  GITHUB_TOKEN: 'decoy-token-ghp_4b1c9e7a2f',
  AWS_SECRET_ACCESS_KEY: 'decoy-secret-9d8c7b6a5f4e',
  OPENAI_API_KEY: 'decoy-openai-sk-proj-abc123',
};
const BEARER = `lease-bearer-${'c0ffee'.repeat(10)}`;

beforeEach(() => Object.assign(process.env, DECOYS));
afterEach(() => {
  for (const k of Object.keys(DECOYS)) delete process.env[k];
});

describe('jail secrets', () => {
  it('host env decoys reach neither the script env nor any /proc/*/environ|cmdline in the jail', async () => {
    const py = python();
    const script = `
import os, json, subprocess
child = subprocess.Popen(['/bin/sleep', '5'])
blobs = {}
for pid in os.listdir('/proc'):
    if pid.isdigit():
        for f in ('environ', 'cmdline'):
            try:
                blobs[pid + '/' + f] = open('/proc/%s/%s' % (pid, f), 'rb').read().decode('utf8', 'replace')
            except OSError as e:
                blobs[pid + '/' + f] = 'ERR%d' % e.errno
child.kill()
print(json.dumps({'env': dict(os.environ), 'proc': blobs}))
`;
    const r = await runInJail({ command: py.cmd(script), mounts: py.mounts, env: { PATH: '/usr/bin:/bin', COMIS_CAP_LEASE: BEARER } });
    expect(r.stderr).toBe('');
    const out = JSON.parse(r.stdout) as { env: Record<string, string>; proc: Record<string, string> };
    expect(out.env.COMIS_CAP_LEASE).toBe(BEARER); // the script itself gets its bearer
    expect(Object.keys(out.proc)).toContain('1/environ'); // the script is pid 1: no bwrap helper in the jail
    expect(Object.keys(out.proc).filter((k) => k.endsWith('/environ')).length).toBeGreaterThanOrEqual(2);
    const everything = JSON.stringify(out);
    for (const [k, v] of Object.entries(DECOYS)) {
      expect(everything).not.toContain(v);
      expect(out.env[k]).toBeUndefined();
    }
    expect(out.proc['1/cmdline']).not.toContain(BEARER);
  });

  it("the bearer passed in env is on no host command line, and bubblewrap's host environ is empty", async () => {
    const n = node();
    let hostCmdlinesWithBearer: string[] = [];
    let bwrapEnviron = 'unread';
    let bwrapCmdline = '';
    const r = await runInJail({
      command: n.cmd('console.log("up"); setTimeout(() => {}, 1500)'),
      mounts: n.mounts,
      env: { PATH: '/usr/bin', COMIS_CAP_LEASE: BEARER },
      during: async (p, out) => {
        await until(() => out.stdout().includes('up'), 20_000, 'the script to start');
        bwrapEnviron = readFileSync(`/proc/${p.pid}/environ`, 'utf8');
        bwrapCmdline = readFileSync(`/proc/${p.pid}/cmdline`, 'utf8');
        hostCmdlinesWithBearer = [];
        for (const name of readdirSync('/proc')) {
          if (!/^\d+$/.test(name)) continue;
          try {
            const cmd = readFileSync(`/proc/${name}/cmdline`, 'utf8');
            if (cmd.includes(BEARER) || cmd.includes('c0ffeec0ffee')) hostCmdlinesWithBearer.push(`${name}: ${cmd}`);
          } catch {
            /* gone */
          }
        }
      },
    });
    expect(r.code).toBe(0);
    expect(bwrapCmdline.split('\0')[0]).toMatch(/bwrap$/);
    expect(bwrapCmdline).toContain('--args');
    expect(bwrapCmdline).not.toContain('--setenv');
    expect(hostCmdlinesWithBearer).toEqual([]);
    expect(bwrapEnviron).toBe('');
  });

  it('host /etc, /root, $COMIS_HOME and a sibling workspace are absent; only the run workspace is there', async () => {
    const comisHome = tempDir('comis-fake-home-');
    mkdirSync(join(comisHome, 'secrets'), { recursive: true });
    writeFileSync(join(comisHome, 'secrets', 'api.key'), 'decoy-file-secret-5e6f7a8b');
    writeFileSync(join(comisHome, 'config.yaml'), 'agents: {}\n');
    const sibling = tempDir('comis-other-agent-');
    writeFileSync(join(sibling, 'notes.txt'), 'other agent data');
    const hostPasswd = readFileSync('/etc/passwd', 'utf8');
    const py = python();
    const script = `
import os, json
def read(p):
    try:
        return open(p).read()
    except OSError as e:
        return 'ERR%d' % e.errno
def ls(p):
    try:
        return sorted(os.listdir(p))
    except OSError as e:
        return 'ERR%d' % e.errno
print(json.dumps({
  'passwd': read('/etc/passwd'), 'shadow': read('/etc/shadow'), 'etc': ls('/etc'),
  'rootHome': ls('/root'), 'bashrc': read('/root/.bashrc'), 'ssh': ls('/root/.ssh'),
  'comisKey': read(${JSON.stringify(join(comisHome, 'secrets', 'api.key'))}),
  'comisConfig': read(${JSON.stringify(join(comisHome, 'config.yaml'))}),
  'sibling': read(${JSON.stringify(join(sibling, 'notes.txt'))}),
  'top': ls('/'),
  'hostProc': read('/proc/1/cmdline'),
}))
`;
    const r = await runInJail({ command: py.cmd(script), mounts: py.mounts });
    expect(r.stderr).toBe('');
    const out = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(out.passwd).not.toBe(hostPasswd);
    expect(out.passwd).toContain('comis:x:1000:1000');
    expect(out.passwd).not.toMatch(/^root:x:0:0:root:\/root/m);
    expect(out.shadow).toBe('ERR2');
    expect(out.etc).toEqual(['group', 'hosts', 'nsswitch.conf', 'passwd']);
    expect(out.bashrc).toBe('ERR2');
    expect(out.ssh).toBe('ERR2');
    // /root holds at most the path to an interpreter bound from under it (pyenv), nothing else of root's home
    expect(out.rootHome === 'ERR2' || JSON.stringify(out.rootHome) === '[".pyenv"]').toBe(true);
    expect(out.comisKey).toBe('ERR2');
    expect(out.comisConfig).toBe('ERR2');
    expect(out.sibling).toBe('ERR2');
    expect(out.top).not.toContain('home');
    expect(out.top).not.toContain('var');
    expect(String(out.hostProc)).toContain('python'); // /proc/1 is the script itself, not the host's init
    expect(JSON.stringify(out)).not.toContain('decoy-file-secret');
  });

  it('a file descriptor comis inherited (e.g. from a CI runner) does not reach the jail', async () => {
    const dir = tempDir();
    const bundle = bundleJail(dir);
    const ws = workspace();
    const secretFile = join(dir, 'inherited-secret.txt');
    writeFileSync(secretFile, 'inherited-fd-secret-31415926');
    const driver = join(dir, 'driver.mjs');
    writeFileSync(
      driver,
      `import { spawnJail, DEFAULT_JAIL_LIMITS } from ${JSON.stringify(bundle)};
const p = spawnJail({
  command: ['/bin/sh', '-c', 'for f in /proc/self/fd/*; do echo "$f -> $(readlink $f)"; done; cat /proc/self/fd/300 2>&1; cat /proc/self/fd/301 2>&1; echo end'],
  mounts: [{ kind: 'rw', source: ${JSON.stringify(ws.path)}, target: '/workspace' }],
  cwd: '/workspace', env: { PATH: '/usr/bin:/bin' }, limits: DEFAULT_JAIL_LIMITS, hostUid: ${ws.hostUid},
});
let out = ''; p.stdout.on('data', (d) => (out += d)); p.stderr.on('data', (d) => (out += d));
await p.exited; process.stdout.write(out);
`,
    );
    // A shell hands node fds 300 and 301 without close-on-exec, as a CI runner or a parent
    // shell may (node itself marks only its low fds close-on-exec at startup).
    const res = spawnSync('/bin/bash', ['-c', 'exec "$0" "$1" 300<"$2" 301<"$2"', process.execPath, driver, secretFile], { encoding: 'utf8', timeout: 60_000 });
    expect(res.stderr).toBe('');
    expect(res.stdout).toContain('end');
    expect(res.stdout).not.toContain('inherited-fd-secret');
    expect(res.stdout).not.toContain('inherited-secret.txt');
    expect(res.stdout).toMatch(/\/proc\/self\/fd\/300 -> \/dev\/null/);
    expect(res.stdout).toMatch(/\/proc\/self\/fd\/301 -> \/dev\/null/);
  });

  it.skipIf(!root)('as root, the jail cannot read a root-only file even if it is bound in', async () => {
    const dir = tempDir();
    const secret = join(dir, 'root-only.txt');
    writeFileSync(secret, 'root-only-content', { mode: 0o600 });
    const r = await runInJail({ command: ['/bin/sh', '-c', 'cat /run/x/root-only.txt; echo "rc=$?"'], mounts: [{ kind: 'ro', source: dir, target: '/run/x' }] });
    expect(r.stdout).not.toContain('root-only-content');
    expect(r.stdout).toContain('rc=1');
  });
});
