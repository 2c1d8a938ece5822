import { chmodSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { jailLimitsSchema } from '../../src/lib/config/schema.js';
import { FIRST_DATA_FD, buildJailPlan, checkRequest, fstabField, mayHaveTerminal, orderMounts, planOptions, reachableBy, resolveMounts, rlimitArgs, sharesSession, type PlanContext } from '../../src/lib/jail/plan.js';
import { DEFAULT_JAIL_LIMITS } from '../../src/lib/jail/provider.js';
import { buildSeccompFilter } from '../../src/lib/jail/seccomp.js';
import { expectInputInvalid } from './helpers.js';
import type { JailRequest } from '../../src/lib/jail/types.js';
import { tempDir } from '../helpers/temp.js';

const tools = { bwrap: '/usr/bin/bwrap', prlimit: '/usr/bin/prlimit', setpriv: '/usr/bin/setpriv', unshare: '/usr/bin/unshare', mount: '/usr/bin/mount', sh: '/usr/bin/sh' };
const rootCtx: PlanContext = { tools, root: true, arch: 'x64', hostUid: 234567 };
const BEARER = 'bearer-0123456789abcdef0123456789abcdef';

function request(overrides: Partial<JailRequest> = {}): JailRequest {
  return {
    command: ['/usr/bin/node', '/run/comis/script.mjs'],
    mounts: [],
    cwd: '/workspace',
    env: { PATH: '/usr/bin:/bin', COMIS_CAP_LEASE: BEARER },
    limits: DEFAULT_JAIL_LIMITS,
    ...overrides,
  };
}

const invalid = expectInputInvalid;

describe('jail plan', () => {
  it('marks as constant exactly the seccomp filter and the synthetic /etc, never the options fd that carries the env', () => {
    for (const ctx of [rootCtx, { ...rootCtx, root: false, hostUid: 1000, tasksOfUid: 3, hardLimits: {} }]) {
      const plan = buildJailPlan(request(), [], ctx);
      const argsIndex = Number(plan.args[plan.args.indexOf('--args') + 1]) - FIRST_DATA_FD;
      expect(plan.constantData).not.toContain(argsIndex);
      expect(plan.dataFds[argsIndex]!.toString('utf8')).toContain(BEARER);
      const opts = planOptions(plan);
      const fdOf = (opt: string, dest?: string): number => {
        const i = opts.findIndex((o, j) => o === opt && (dest === undefined || opts[j + 2] === dest));
        return Number(opts[i + 1]) - FIRST_DATA_FD;
      };
      const expected = [fdOf('--seccomp'), ...['/etc/passwd', '/etc/group', '/etc/hosts', '/etc/nsswitch.conf'].map((p) => fdOf('--ro-bind-data', p))];
      expect([...plan.constantData].sort()).toEqual(expected.sort());
      // Every other data fd holds something of this request: none of them is constant.
      expect(plan.constantData).toHaveLength(plan.dataFds.length - 1);
      for (const i of plan.constantData) expect(plan.dataFds[i]!.includes(BEARER)).toBe(false);
      expect(plan.dataFds[fdOf('--seccomp')]!.equals(buildSeccompFilter('x64'))).toBe(true);
    }
  });

  it('the inode-bounded tmpfs pair: root mounts it in the stager, not root in a user namespace of its own, weakened it is bubblewrap --tmpfs', () => {
    const opts = 'nosuid,nodev,mode=1777,size=67108864,nr_inodes=500';
    const req = request({ limits: { ...DEFAULT_JAIL_LIMITS, tmpInodes: 500 } });
    const asRoot = buildJailPlan(req, [], { ...rootCtx, tools: { ...tools, tmpfsMount: 'stage' }, stageDir: '/stage' });
    // Both tmpfs in one fstab, mounted by one `mount -a` (not one mount process per entry).
    const fstab = `tmpfs /stage/0 tmpfs ${opts} 0 0\ntmpfs /stage/1 tmpfs ${opts} 0 0\n`;
    expect(asRoot.stage).toEqual([
      { path: '/stage/0', isDir: true },
      { path: '/stage/1', isDir: true },
      { path: '/stage/fstab', isDir: false, content: fstab },
    ]);
    const rootArgs = asRoot.args.join(' ');
    expect(rootArgs).toContain(`/usr/bin/unshare --mount --propagation private -- /usr/bin/sh -c`);
    expect(rootArgs).toContain(`"$1" -n -a -i -T "$2"; shift 2; exec "$@" comis-stage /usr/bin/mount /stage/fstab /usr/bin/setpriv`);
    const inJail = planOptions(asRoot).join(' ');
    expect(inJail).toContain('--bind /stage/0 /tmp --bind /stage/1 /dev/shm');
    expect(inJail).not.toContain('--tmpfs');

    const user = buildJailPlan(req, [], { ...rootCtx, root: false, hostUid: 1000, tools: { ...tools, tmpfsMount: 'userns' }, stageDir: '/stage' });
    const userArgs = user.args.join(' ');
    expect(userArgs).toContain(`/usr/bin/unshare --user --map-root-user --mount --propagation private -- /usr/bin/sh -c`);
    expect(userArgs).toContain(`comis-stage /usr/bin/mount /stage/fstab /usr/bin/unshare --user --map-user=1000 --map-group=1000 -- /usr/bin/bwrap --args`);
    expect(user.stage.at(-1)).toEqual({ path: '/stage/fstab', isDir: false, content: fstab });
    expect(userArgs).not.toContain('setpriv --reuid');

    // A mode of the other kind of caller is ignored, and the test-only weakening goes back to bubblewrap's own tmpfs.
    for (const plan of [
      buildJailPlan(req, [], { ...rootCtx, root: false, hostUid: 1000, tools: { ...tools, tmpfsMount: 'stage' } }),
      buildJailPlan({ ...req, testOnlyWeaken: { tmpInodes: true } }, [], { ...rootCtx, tools: { ...tools, tmpfsMount: 'stage' } }),
    ]) {
      expect(plan.stage).toEqual([]);
      expect(planOptions(plan).join(' ')).toContain('--perms 1777 --size 67108864 --tmpfs /tmp');
    }
    for (const tmpInodes of [0, 63, 1.5, 16_777_217]) invalid(() => checkRequest(request({ limits: { ...DEFAULT_JAIL_LIMITS, tmpInodes } })));
  });

  it('default limits match the config schema defaults (the workspace quota is the runner limits, not the jail ones)', () => {
    const { timeoutMs: _t, stdoutCapBytes: _s, resultFileMb: _f, resultRunMb: _r, workspaceMb: _w, workspaceInodes: _i, ...schemaDefaults } = jailLimitsSchema.parse({});
    expect(DEFAULT_JAIL_LIMITS).toEqual(schemaDefaults);
  });

  it('as root: prlimit → setpriv to the unprivileged uid → bwrap --args; the env never on a command line', () => {
    const plan = buildJailPlan(request(), [], rootCtx);
    expect(plan.file).toBe('/usr/bin/prlimit');
    const mib = 1024 * 1024;
    expect(plan.args).toEqual([
      '--nproc=64:64',
      `--as=${4096 * mib}:${4096 * mib}`,
      `--fsize=${256 * mib}:${256 * mib}`,
      '--core=0:0',
      '--nofile=4096:4096',
      '--',
      '/usr/bin/setpriv',
      '--reuid=234567',
      '--regid=234567',
      '--clear-groups',
      '--inh-caps=-all',
      '--bounding-set=-all',
      '--no-new-privs',
      '/usr/bin/bwrap',
      '--args',
      String(FIRST_DATA_FD),
      '--',
      '/usr/bin/node',
      '/run/comis/script.mjs',
    ]);
    expect(plan.args.join(' ')).not.toContain(BEARER);
    expect(plan.stage).toEqual([]);
  });

  it('with a deadline: the supervisor (setpriv --pdeathsig, then timeout -s KILL) comes right after the rlimits, before the uid drop', () => {
    const plan = buildJailPlan(request({ deadlineMs: 1500 }), [], { ...rootCtx, tools: { ...tools, timeout: '/usr/bin/timeout' } });
    const dd = plan.args.indexOf('--');
    expect(plan.args.slice(dd + 1, dd + 11)).toEqual(['/usr/bin/setpriv', '--pdeathsig', 'ALRM', '--', '/usr/bin/timeout', '--signal=KILL', '--kill-after=1', '--', '1.500', '/usr/bin/setpriv']);
    expect(plan.args[dd + 11]).toBe('--reuid=234567');
    expect(() => buildJailPlan(request({ deadlineMs: 1500 }), [], rootCtx)).toThrow(/needs setpriv and timeout/);
    invalid(() => checkRequest(request({ deadlineMs: 0 })));
    invalid(() => checkRequest(request({ deadlineMs: 1.5 })));
    // Not root, the supervisor is one more task of our uid.
    const user = buildJailPlan(request({ deadlineMs: 1500 }), [], { tools: { ...tools, timeout: '/usr/bin/timeout' }, root: false, arch: 'x64', hostUid: 1000, tasksOfUid: 37, hardLimits: {} });
    expect(user.args[0]).toBe('--nproc=102:102');
  });

  it('keeps the jail in our session only under a deadline supervisor and without a controlling terminal', () => {
    const timeoutTools = { ...tools, timeout: '/usr/bin/timeout' };
    const has = (req: JailRequest, terminal: boolean): boolean => planOptions(buildJailPlan(req, [], { ...rootCtx, tools: timeoutTools, terminal })).includes('--new-session');
    expect(has(request({ deadlineMs: 1500 }), false)).toBe(false);
    expect(has(request({ deadlineMs: 1500 }), true)).toBe(true);
    // Without a supervisor the jail would be in comis's own process group.
    expect(has(request(), false)).toBe(true);
    expect(has(request(), true)).toBe(true);
    expect(sharesSession({ deadlineMs: 1 }, { terminal: false })).toBe(true);
    expect(sharesSession({}, { terminal: false })).toBe(false);
    // The filter that goes with it: kill(0) refused only in the shared session.
    const plan = buildJailPlan(request({ deadlineMs: 1500 }), [], { ...rootCtx, tools: timeoutTools, terminal: false });
    expect(plan.dataFds[plan.constantData[0]!]).toEqual(buildSeccompFilter('x64', { sharedSession: true }));
    expect(buildSeccompFilter('x64', { sharedSession: true })).not.toEqual(buildSeccompFilter('x64'));
  });

  it('reads a controlling terminal or session leadership from /proc/<pid>/stat, and assumes one when it cannot', () => {
    // pid (comm) state ppid pgrp session tty_nr …
    expect(mayHaveTerminal('4242 (node) S 10 4242 100 0 -1 4194560')).toBe(false);
    expect(mayHaveTerminal('4242 (node) S 10 4242 100 34816 4242 4194560')).toBe(true); // /dev/pts/0
    expect(mayHaveTerminal('4242 (node) S 10 4242 4242 0 -1 4194560')).toBe(true); // a session leader
    expect(mayHaveTerminal('4242 (a) b) (c) S 10 4242 100 0 -1 4194560')).toBe(false); // comm with ") "
    expect(mayHaveTerminal('4242 (a) b) (c) S 10 4242 100 1 -1 4194560')).toBe(true);
    for (const bad of ['', 'garbage', '4242 (node) S 10']) expect(mayHaveTerminal(bad), bad).toBe(true);
    // This process: the same answer as its own /proc entry gives.
    const stat = readFileSync('/proc/self/stat', 'latin1');
    expect(mayHaveTerminal()).toBe(mayHaveTerminal(stat));
  });

  it('passes the hardened system base, the env and the seccomp filter through fds', () => {
    const plan = buildJailPlan(request(), [], rootCtx);
    const opts = planOptions(plan);
    const joined = opts.join(' ');
    for (const flag of ['--unshare-all', '--unshare-user', '--disable-userns', '--die-with-parent', '--new-session', '--as-pid-1']) expect(opts).toContain(flag);
    expect(joined).toContain('--uid 1000 --gid 1000');
    expect(joined).toContain('--cap-drop ALL');
    expect(joined).toContain('--hostname comis-jail');
    expect(joined).toContain('--ro-bind /usr /usr');
    expect(joined).toContain('--proc /proc --dev /dev');
    expect(joined).toContain(`--perms 1777 --size ${64 * 1024 * 1024} --tmpfs /tmp`);
    expect(joined).toContain(`--perms 1777 --size ${64 * 1024 * 1024} --tmpfs /dev/shm`);
    expect(joined).toMatch(/--remount-ro \/dev --remount-ro \/proc --remount-ro \/ --chdir \/workspace --clearenv --setenv PATH \/usr\/bin:\/bin --setenv COMIS_CAP_LEASE bearer-/);
    // /etc is synthetic: four data fds, nothing bound from the host /etc.
    expect(opts.filter((o) => o.startsWith('/etc/'))).toEqual(['/etc/passwd', '/etc/group', '/etc/hosts', '/etc/nsswitch.conf']);
    expect(joined).not.toMatch(/--(ro-)?bind \/etc/);
    const seccompFd = Number(opts[opts.indexOf('--seccomp') + 1]);
    expect(plan.dataFds[seccompFd - FIRST_DATA_FD]).toEqual(buildSeccompFilter('x64'));
    const statusFd = Number(opts[opts.indexOf('--json-status-fd') + 1]);
    expect(statusFd).toBe(plan.statusFd);
    expect(statusFd).toBe(FIRST_DATA_FD + plan.dataFds.length);
    const passwd = opts[opts.indexOf('/etc/passwd') - 1]!;
    expect(plan.dataFds[Number(passwd) - FIRST_DATA_FD]!.toString()).toContain('comis:x:1000:1000');
  });

  it('refuses a NUL anywhere that would smuggle bwrap options', () => {
    invalid(() => checkRequest(request({ env: { A: 'x\0--bind\0/\0/x' } })));
    invalid(() => checkRequest(request({ cwd: '/w\0s' })));
    invalid(() => checkRequest(request({ mounts: [{ kind: 'ro', source: '/tmp\0', target: '/x' }] })));
    invalid(() => checkRequest(request({ env: { 'BAD=NAME': 'x' } })));
  });

  it('refuses relative or unnormalized paths and mounts over the system base', () => {
    invalid(() => checkRequest(request({ cwd: 'workspace' })));
    invalid(() => checkRequest(request({ command: ['node', 'x'] })));
    invalid(() => checkRequest(request({ command: [] })));
    for (const target of ['/', '/etc', '/etc/passwd', '/usr/bin', '/proc/self', '/dev/null', '/tmp', '/a/../etc', '/a/', 'rel']) {
      invalid(() => checkRequest(request({ mounts: [{ kind: 'ro', source: '/tmp', target }] })));
    }
    invalid(() => checkRequest(request({ limits: { ...DEFAULT_JAIL_LIMITS, maxProcesses: 0 } })));
    invalid(() =>
      checkRequest(
        request({
          mounts: [
            { kind: 'ro', source: '/tmp', target: '/a' },
            { kind: 'ro', source: '/var', target: '/a' },
          ],
        }),
      ),
    );
  });

  it('resolves mount sources: real path, right type, never the host root', () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'real'));
    writeFileSync(join(dir, 'file'), 'x');
    symlinkSync(join(dir, 'real'), join(dir, 'link'));
    const [m] = resolveMounts([{ kind: 'ro', source: join(dir, 'link'), target: '/x' }], { root: false, hostUid: 1 });
    expect(m!.realSource).toBe(join(dir, 'real'));
    expect(m!.isDir).toBe(true);
    invalid(() => resolveMounts([{ kind: 'socket', source: join(dir, 'file'), target: '/s' }], { root: false, hostUid: 1 }));
    invalid(() => resolveMounts([{ kind: 'ro', source: join(dir, 'missing'), target: '/x' }], { root: false, hostUid: 1 }));
    symlinkSync('/', join(dir, 'slash'));
    invalid(() => resolveMounts([{ kind: 'ro', source: join(dir, 'slash'), target: '/x' }], { root: false, hostUid: 1 }));
  });

  it('orders mounts parent first, whatever order the caller used', () => {
    const ordered = orderMounts([
      { kind: 'ro', source: '/a', target: '/workspace/results' },
      { kind: 'rw', source: '/b', target: '/workspace' },
      { kind: 'socket', source: '/c', target: '/run/comis-cap/cap.sock' },
      { kind: 'ro', source: '/d', target: '/run/comis' },
    ]);
    expect(ordered.map((m) => m.target)).toEqual(['/workspace', '/workspace/results', '/run/comis', '/run/comis-cap/cap.sock']);
  });

  it('as root, stages a source the jail uid cannot reach, in a private mount namespace', () => {
    const dir = tempDir();
    const locked = join(dir, 'locked');
    mkdirSync(join(locked, 'ws'), { recursive: true });
    chmodSync(locked, 0o700);
    const uid = 234567;
    expect(reachableBy(join(locked, 'ws'), uid, uid)).toBe(process.getuid!() === uid);
    expect(reachableBy(dir, uid, uid)).toBe(true);
    const mounts = resolveMounts([{ kind: 'rw', source: join(locked, 'ws'), target: '/workspace' }], { root: true, hostUid: uid });
    expect(mounts[0]!.staged).toBe(true);
    const plan = buildJailPlan(request(), mounts, { ...rootCtx, stageDir: '/tmp/stage' });
    expect(plan.stage).toEqual([
      { path: '/tmp/stage/0', isDir: true },
      { path: '/tmp/stage/fstab', isDir: false, content: `${fstabField(join(locked, 'ws'))} /tmp/stage/0 none bind 0 0\n` },
    ]);
    const i = plan.args.indexOf('/usr/bin/unshare');
    expect(plan.args.slice(i, i + 6)).toEqual(['/usr/bin/unshare', '--mount', '--propagation', 'private', '--', '/usr/bin/sh']);
    // The source travels in the stage fstab, not on a host command line.
    expect(plan.args).not.toContain(join(locked, 'ws'));
    expect(plan.args.indexOf('/usr/bin/setpriv')).toBeGreaterThan(plan.args.indexOf('/tmp/stage/fstab'));
    expect(planOptions(plan).join(' ')).toContain('--bind /tmp/stage/0 /workspace');
  });

  it('fstab fields: every byte outside a plain path alphabet is an octal escape, so no path can split a field, start a comment or add an option', () => {
    expect(fstabField('/home/a b/c\td\ne#f\\g')).toBe('/home/a\\040b/c\\011d\\012e\\043f\\134g');
    expect(fstabField('/é')).toBe('/\\303\\251');
    expect(fstabField('/plain/path-1_2.x,y=z')).toBe('/plain/path-1_2.x,y=z');
    invalid(() => fstabField('/a\0b'));
  });

  it('not root: no setpriv; RLIMIT_NPROC = tasks of our uid + maxProcesses outside, maxProcesses inside (through the nproc gate)', () => {
    const plan = buildJailPlan(request(), [], { tools: { bwrap: tools.bwrap, prlimit: tools.prlimit }, root: false, arch: 'arm64', hostUid: 1000, tasksOfUid: 37, hardLimits: {} });
    expect(plan.args).not.toContain('/usr/bin/setpriv');
    expect(plan.args[0]).toBe('--nproc=101:101');
    const dd = plan.args.indexOf('--', plan.args.indexOf('/usr/bin/bwrap'));
    // No stage inside the jail: bubblewrap execs the command itself, so its exit-code status means the command ran.
    expect(plan.args.slice(dd + 1)).toEqual(['/usr/bin/node', '/run/comis/script.mjs']);
    expect(plan.nprocGate).toEqual({ fd: plan.statusFd + 1, nproc: 64 });
    const opts = planOptions(plan);
    expect(opts.slice(opts.indexOf('--block-fd'), opts.indexOf('--block-fd') + 2)).toEqual(['--block-fd', String(plan.statusFd + 1)]);
    expect(buildJailPlan(request(), [], rootCtx).nprocGate).toBeUndefined();
    expect(rlimitArgs(DEFAULT_JAIL_LIMITS, { root: false, tasksOfUid: 10, hardLimits: { nproc: 50, nofile: 1024, as: 1 << 30 } })).toEqual([
      '--nproc=50:50',
      `--as=${1 << 30}:${1 << 30}`,
      `--fsize=${256 * 1024 * 1024}:${256 * 1024 * 1024}`,
      '--core=0:0',
      '--nofile=1024:1024',
    ]);
  });
});
