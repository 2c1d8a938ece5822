/**
 * Attack battery, the terminal: a jailed script never reaches the controlling terminal of the comis
 * process that started it, and never reaches the processes that supervise it.
 *
 * comis keeps bubblewrap's `--new-session` when it has a controlling terminal (or leads its session),
 * and leaves it out when it has none, so the jail stays in comis's session and scheduler autogroup
 * (src/lib/jail/plan.ts, `sharesSession`). Both branches run here for real, with a caller started
 * under a pseudo-terminal (python3's pty module) and one started without any:
 * - with a terminal: the jail is a session of its own; /dev/tty gets ENXIO, nothing reaches the pty;
 * - without one: the jail shares the caller's session and autogroup; /dev/tty gets ENXIO too, and
 *   kill(0, …), which would reach the deadline supervisor's process group, gets EPERM, and the
 *   autogroup's nice value (/proc/self/autogroup, one per session) cannot be written: /proc is read-only;
 *   the other calls that name a group or a process by number (tgkill and rt_sigqueueinfo with pid 0,
 *   kill(-1), SIGIO owners set with F_SETOWN / F_SETOWN_EX to the group) reach nothing outside the
 *   jail's pid namespace, where the supervisor and the caller have no number.
 * Positive controls: a bare bubblewrap without `--new-session` (and without our filter) on the pty
 * opens /dev/tty, writes to the user's screen and injects input with TIOCSTI; with the seccomp
 * process-group rule left out, a script's kill(0, SIGKILL) kills its supervisor's group and the run
 * looks like a deadline kill; with /proc left writable, a script sets the caller's autogroup to nice 19.
 */
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { deriveJailUid } from '../../src/lib/jail/host.js';
import { prepareWritableDir } from '../../src/lib/jail/spawn.js';
import { underPty as runUnderPty } from '../helpers/pty.js';
import { tempDir } from '../helpers/temp.js';
import { bareBwrapPython, bundleJail, root, workspace } from '../jail/helpers.js';

const PY = '/usr/bin/python3';
const ENXIO = 6;
const EPERM = 1;
const EROFS = 30;
const ESRCH = 3;
const EINVAL = 22;

/** Runs in the jail: what it can reach of a terminal and of its process group, as JSON on stdout. */
const PROBE = `
import errno, fcntl, json, os, signal, sys, termios
mark, attack = sys.argv[1], sys.argv[2] == '1'
r = {}
st = open('/proc/self/stat').read()
f = st[st.rindex(')') + 2:].split()
r['sid'], r['tty_nr'] = int(f[3]), int(f[4])
try:
    r['autogroup'] = open('/proc/self/autogroup').read().split()[0]
except OSError:
    r['autogroup'] = '?'
# The autogroup's nice value: one per session, so shared with the caller when the jail is in its session.
try:
    with open('/proc/self/autogroup', 'w') as fh:
        fh.write('19')
    r['ag_write'] = 0
except OSError as e:
    r['ag_write'] = e.errno
try:
    fd = os.open('/dev/tty', os.O_RDWR | os.O_NOCTTY)
    r['tty'] = 0
    os.write(fd, ('JAIL-WROTE-' + mark + '\\n').encode())
    try:
        for c in b'INJ':
            fcntl.ioctl(fd, termios.TIOCSTI, bytes([c]))
        r['tiocsti'] = 0
    except OSError as e:
        r['tiocsti'] = e.errno
except OSError as e:
    r['tty'] = e.errno
try:
    os.kill(0, 0)
    r['kill0'] = 0
except OSError as e:
    r['kill0'] = e.errno
print(json.dumps(r), flush=True)
if attack:
    # Every other way a process names its group or session, or a process outside its pid namespace.
    # Each answers from the jail's pid namespace, where the caller, the supervisor and bubblewrap have no
    # number (the group and session leaders show as 0): tgkill and rt_sigqueueinfo with pid 0, kill(-1),
    # and SIGIO/SIGURG owners set to "the caller's group" with F_SETOWN and F_SETOWN_EX.
    import ctypes, platform, struct
    libc = ctypes.CDLL(None, use_errno=True)
    arm = platform.machine() == 'aarch64'
    def sc(nr, *args):
        return 0 if libc.syscall(nr, *args) >= 0 else ctypes.get_errno()
    s = {}
    s['tgkill0'] = sc(131 if arm else 234, 0, 0, signal.SIGKILL)
    info = ctypes.create_string_buffer(struct.pack('iii', signal.SIGKILL, 0, -1), 128)
    s['sigqueue0'] = sc(138 if arm else 129, 0, signal.SIGKILL, info)
    try:
        os.kill(-1, signal.SIGKILL)
        s['killall'] = 0
    except OSError as e:
        s['killall'] = e.errno
    got = []
    signal.signal(signal.SIGIO, lambda *a: got.append(1))
    rd, wr = os.pipe()
    fcntl.fcntl(rd, fcntl.F_SETFL, fcntl.fcntl(rd, fcntl.F_GETFL) | os.O_ASYNC)
    # Control: the mechanism works in the jail, towards the script itself.
    fcntl.fcntl(rd, fcntl.F_SETOWN, os.getpid())
    os.write(wr, b'x')
    os.read(rd, 1)
    s['sigio_self'] = len(got)
    # Towards its group: 0 (how the jail sees the supervisor's group) as F_SETOWN's -pgid and as F_OWNER_PGRP.
    fcntl.fcntl(rd, fcntl.F_SETOWN, -os.getpgrp())
    s['own_pgrp'] = fcntl.fcntl(rd, fcntl.F_GETOWN)
    fcntl.fcntl(rd, 15, struct.pack('ii', 2, os.getpgrp()))
    s['own_ex'] = list(struct.unpack('ii', fcntl.fcntl(rd, 16, struct.pack('ii', 0, 0))))
    os.write(wr, b'x')
    os.read(rd, 1)
    s['sigio_after'] = len(got)
    print('signals ' + json.dumps(s), flush=True)
    # The supervisor's group (timeout, bubblewrap) when the jail shares the caller's session.
    try:
        os.kill(0, signal.SIGKILL)
        print('kill0-sent', flush=True)
    except OSError as e:
        print('kill0-refused', e.errno, flush=True)
`;

/**
 * The caller: a node process that starts one supervised jail (as every orchestrate run is) running
 * PROBE, and writes its own terminal facts, the probe's output and the exit to `result`.
 */
function driverSource(bundle: string, ws: { path: string; hostUid: number }, probe: string, mark: string, attack: boolean, weaken: 'process-groups' | 'proc' | undefined, result: string): string {
  return `import { readFileSync, writeFileSync } from 'node:fs';
import { spawnJail, resolveInterpreter, DEFAULT_JAIL_LIMITS } from ${JSON.stringify(bundle)};
const py = resolveInterpreter('python3');
const stat = readFileSync('/proc/self/stat', 'latin1');
const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
const self = { pid: Number.parseInt(stat, 10), sid: Number(f[3]), ttyNr: Number(f[4]), autogroup: readFileSync('/proc/self/autogroup', 'utf8').split(' ')[0] };
const p = spawnJail({
  command: [py.jailPath, '-I', ${JSON.stringify(`/workspace/${probe}`)}, ${JSON.stringify(mark)}, ${attack ? "'1'" : "'0'"}],
  mounts: [...py.mounts, { kind: 'rw', source: ${JSON.stringify(ws.path)}, target: '/workspace' }],
  cwd: '/workspace', env: { PATH: '/usr/bin:/bin' }, limits: DEFAULT_JAIL_LIMITS, hostUid: ${ws.hostUid},
  deadlineMs: 600000,
  ${weaken === 'process-groups' ? "testOnlyWeaken: { seccomp: ['process-groups'] }," : weaken === 'proc' ? 'testOnlyWeaken: { procWritable: true },' : ''}
});
let out = '', err = '';
p.stdout.on('data', (d) => (out += d));
p.stderr.on('data', (d) => (err += d));
const exit = await p.exited;
// The caller's autogroup after the run: its nice value is what a jail in its session could change.
self.autogroupAfter = readFileSync('/proc/self/autogroup', 'utf8').trim();
writeFileSync(${JSON.stringify(result)}, JSON.stringify({ self, out, err, exit }));
`;
}

interface Outcome {
  self: { pid: number; sid: number; ttyNr: number; autogroup: string; autogroupAfter: string };
  probe: { sid: number; tty_nr: number; autogroup: string; ag_write: number; tty: number; tiocsti?: number; kill0: number };
  out: string;
  err: string;
  exit: { code: number | null; signal: string | null; killedBy?: string };
  /** What the pseudo-terminal showed (its master side), when there was one. */
  screen: string;
}

/**
 * Runs `argv` under a new pseudo-terminal: a shell leads the new session with the pty as its
 * controlling terminal and runs `argv` as its own child, which inherits the terminal without
 * leading the session. Returns what appeared on the terminal.
 */
function underPty(argv: string[]): { screen: string; status: number | null } {
  const { status, bytes } = runUnderPty(['/bin/sh', '-c', '"$@"; exit $?', 'sh', ...argv], { timeoutMs: 60_000 });
  return { screen: bytes.toString('utf8'), status };
}

/** Runs `argv` with no controlling terminal: in a new session (setsid), as the child of its leader (a shell). */
async function withoutTerminal(argv: string[]): Promise<void> {
  const child = spawn('/bin/sh', ['-c', '"$@"; exit $?', 'sh', ...argv], { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stdout.resume();
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const code = await new Promise<number | null>((resolveExit) => child.on('close', resolveExit));
  expect(err).toBe('');
  expect(code).toBe(0);
}

describe.skipIf(!existsSync(PY))(`the jail and the caller's terminal${existsSync(PY) ? '' : ' [needs /usr/bin/python3]'}`, () => {
  /** One supervised jail from a caller with (`pty`) or without a controlling terminal. */
  async function runCaller(terminal: boolean, opts: { attack?: boolean; weaken?: 'process-groups' | 'proc' } = {}): Promise<Outcome> {
    const ws = workspace();
    const mark = `m${process.pid}${Math.floor(Math.random() * 1e9)}`;
    writeFileSync(join(ws.path, 'probe.py'), PROBE);
    const dir = tempDir();
    const bundle = bundleJail(dir);
    const driver = join(dir, 'driver.mjs');
    const result = join(dir, 'result.json');
    writeFileSync(driver, driverSource(bundle, ws, 'probe.py', mark, opts.attack === true, opts.weaken, result));
    let screen = '';
    if (terminal) ({ screen } = underPty([process.execPath, driver]));
    else await withoutTerminal([process.execPath, driver]);
    const got = JSON.parse(readFileSync(result, 'utf8')) as Omit<Outcome, 'probe' | 'screen'>;
    // As root, where the weakened filter lets the script SIGKILL bubblewrap, the stager that outlives
    // it reports that on the jail's stderr (plan.ts, HOLDING_STAGE_SCRIPT); otherwise nothing.
    if (root && opts.attack === true && opts.weaken === 'process-groups') expect(got.err).toMatch(/^[^\n]*Killed[^\n]*\n$/);
    else expect(got.err).toBe('');
    const probe = JSON.parse(got.out.split('\n')[0]!) as Outcome['probe'];
    // The attack line ran: the probe printed its figures.
    expect(typeof probe.tty).toBe('number');
    expect(screen.includes(`JAIL-WROTE-${mark}`), 'the jail wrote to the terminal').toBe(false);
    return { ...got, probe, screen };
  }

  it('with a controlling terminal: the jail is a session of its own, /dev/tty gets ENXIO, nothing reaches the terminal', async () => {
    const o = await runCaller(true);
    // The caller has the pty as its terminal, and does not lead the session.
    expect(o.self.ttyNr).not.toBe(0);
    expect(o.self.sid).not.toBe(o.self.pid);
    // --new-session: the jail's pid 1 leads its own session (sid 1 in its pid namespace), no terminal.
    expect(o.probe.sid).toBe(1);
    expect(o.probe.tty_nr).toBe(0);
    expect(o.probe.tty).toBe(ENXIO);
    expect(o.probe.kill0).toBe(0); // its own group: the jail's processes only
    expect(o.screen).not.toContain('INJ');
    expect(o.exit.code).toBe(0);
  });

  it("without a controlling terminal: the jail shares the caller's session and autogroup, /dev/tty gets ENXIO, kill(0) gets EPERM and the run ends as the script ended it", async () => {
    const o = await runCaller(false, { attack: true });
    expect(o.self.ttyNr).toBe(0);
    expect(o.self.sid).not.toBe(o.self.pid);
    // In the caller's session: its leader is outside the jail's pid namespace (sid 0 there), and the
    // scheduler autogroup (one per session) is the caller's.
    expect(o.probe.sid).toBe(0);
    expect(o.probe.autogroup).toBe(o.self.autogroup);
    expect(o.probe.tty_nr).toBe(0);
    expect(o.probe.tty).toBe(ENXIO);
    expect(o.probe.kill0).toBe(EPERM);
    expect(o.out).toContain(`kill0-refused ${EPERM}`);
    // The other calls that name a group or a process by number reach nothing outside the jail's pid
    // namespace: tgkill(0) is invalid, rt_sigqueueinfo(0) and kill(-1) find no process, and a SIGIO
    // owner of "group 0" is no owner at all (F_GETOWN_EX: type F_OWNER_PGRP, pid 0). Control: the same SIGIO set up towards the script itself
    // arrives, so the attack line ran and the mechanism works in the jail.
    const signals = JSON.parse(/^signals (.*)$/m.exec(o.out)![1]!) as Record<string, unknown>;
    expect(signals).toEqual({ tgkill0: EINVAL, sigqueue0: ESRCH, killall: ESRCH, sigio_self: 1, own_pgrp: 0, own_ex: [2, 0], sigio_after: 1 });
    // The jail's /proc is read-only: the shared autogroup's nice value stays the caller's.
    expect(o.probe.ag_write).toBe(EROFS);
    expect(o.self.autogroupAfter).toBe(`${o.self.autogroup} nice 0`);
    expect(o.exit.code).toBe(0);
    expect(o.exit.killedBy).toBeUndefined();
  });

  it("control: with the jail's /proc left writable, the script sets the nice value of the caller's autogroup", async () => {
    // The caller runs in a session of its own (setsid), so the value set here dies with it.
    const o = await runCaller(false, { weaken: 'proc' });
    expect(o.probe.sid).toBe(0);
    expect(o.probe.autogroup).toBe(o.self.autogroup);
    expect(o.probe.ag_write).toBe(0);
    expect(o.self.autogroupAfter).toBe(`${o.self.autogroup} nice 19`);
    expect(o.exit.code).toBe(0);
  });

  it("control: with the process-group rule left out, the script's kill(0, SIGKILL) reaches its supervisor's group (and, not root, forges a deadline kill)", async () => {
    const o = await runCaller(false, { attack: true, weaken: 'process-groups' });
    expect(o.probe.sid).toBe(0);
    expect(o.probe.kill0).toBe(0);
    expect(o.out).not.toContain('kill0-refused');
    if (root) {
      // Only bubblewrap, of the jail uid, died of the SIGKILL. The stager, root, outlived it and
      // passed its status on (plan.ts, HOLDING_STAGE_SCRIPT): no deadline was forged.
      expect(o.exit.signal).toBeNull();
      expect(o.exit.code).toBe(137);
      expect(o.exit.killedBy).toBeUndefined();
    } else {
      // `timeout` died too, and the supervisor ended with SIGKILL, which is what a real deadline
      // (600 s away) looks like.
      expect(o.exit.signal).toBe('SIGKILL');
      expect(o.exit.killedBy).toBe('deadline');
    }
  });

  // A bare bubblewrap on the pty, as the jail would be without --new-session and without our filter:
  // the script reaches the user's terminal. As root it drops to a jail uid as the jail does.
  function bareBwrap(newSession: boolean): { screen: string; probe: Outcome['probe'] } {
    const parent = tempDir();
    chmodSync(parent, 0o711);
    const dir = join(parent, 'w');
    mkdirSync(dir);
    const uid = root ? deriveJailUid(dir) : process.getuid!();
    prepareWritableDir(dir, uid);
    writeFileSync(join(dir, 'probe.py'), PROBE);
    const mark = `c${process.pid}${Math.floor(Math.random() * 1e9)}`;
    const bwrap = bareBwrapPython(join(dir, 'probe.py'), uid, [mark, '0'], { newSession });
    const { screen, status } = underPty(bwrap);
    expect(status).toBe(0);
    // The probe's line; TIOCSTI's echo may come right before it on the same line.
    const line = /\{"sid".*\}/.exec(screen);
    expect(line, screen).not.toBeNull();
    const probe = JSON.parse(line![0]) as Outcome['probe'];
    if (!newSession) expect(screen).toContain(`JAIL-WROTE-${mark}`);
    else expect(screen).not.toContain(`JAIL-WROTE-${mark}`);
    return { screen, probe };
  }

  it('control: a bare bubblewrap without --new-session and without the filter, on a pty, writes to the terminal and injects input', () => {
    const { screen, probe } = bareBwrap(false);
    expect(probe.tty_nr).not.toBe(0);
    expect(probe.tty).toBe(0);
    // TIOCSTI: typed into the terminal's input (echoed back on the screen), or EIO where
    // dev.tty.legacy_tiocsti=0 turned it off for everyone.
    let legacy = '1';
    try {
      legacy = readFileSync('/proc/sys/dev/tty/legacy_tiocsti', 'utf8').trim();
    } catch {
      /* an older kernel: always on */
    }
    if (legacy === '0') expect(probe.tiocsti).toBe(5);
    else {
      expect(probe.tiocsti).toBe(0);
      expect(screen).toContain('INJ');
    }
  });

  it('control: the same bare bubblewrap with --new-session cannot open /dev/tty', () => {
    const { probe } = bareBwrap(true);
    expect(probe.tty).toBe(ENXIO);
    expect(probe.sid).toBe(1);
  });
});
