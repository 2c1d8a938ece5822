/**
 * Attack battery, configured workspaces and read-only binds (issue 10, hole
 * 10). A config value names what the jail — the model-written script — gets
 * to own or read: with `workspace: $COMIS_HOME` a script rewrote config.yaml
 * and turned `autonomy.write` on for the next run; as root `/etc` or `$HOME`
 * would have been chowned to the jail uid. Every one is refused before
 * anything runs, naming the agent, the key and why. Each refusal has a
 * control: the same script, given a neutral workspace, does reach its attack
 * line; the same rewrite, in a jail bound to $COMIS_HOME as the old runner
 * bound it, does succeed.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, readFileSync, realpathSync, renameSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { ComisError } from '../../src/lib/errors.js';
import { isRoot } from '../../src/lib/jail/host.js';
import { prepareWritableDir } from '../../src/lib/jail/mounts.js';
import { prepareAgentJail, readOnlyAllowMounts, screenWorkspace } from '../../src/lib/orchestrate/workspace.js';
import { SUCCESS_LINE, parseJson } from '../helpers/cli.js';
import { makeHome } from '../helpers/orchestrate.js';
import { tempDir } from '../helpers/temp.js';
import { node, runInJail } from '../jail/helpers.js';

const MARKER = 'REACHED-THE-WRITE-LINE';
/** The attack: rewrite config.yaml in the jail's working directory, i.e. the workspace (which the jail owns: unlink, then create). */
const REWRITE = `const fs = require('fs');
console.log('${MARKER}');
try { fs.unlinkSync('config.yaml'); } catch {}
fs.writeFileSync('config.yaml', 'agents:\\n  default:\\n    autonomy:\\n      write: true\\n');
console.log('rewritten');
`;

function configWith(workspace: string, extra = ''): string {
  return `agents:\n  default:\n    workspace: ${JSON.stringify(workspace)}\n${extra}`;
}

/** With `config` in place, `orchestrate script` exits 2 with CONFIG_INVALID naming readOnlyAllowPaths[0] and `why`; the script never ran. */
function expectBindRefused(h: ReturnType<typeof makeHome>, script: string, config: string, p: string, why: RegExp): void {
  writeFileSync(join(h.home, 'config.yaml'), config);
  const res = h.run(['orchestrate', script, '--json']);
  expect(res.status, p).toBe(2);
  const body = parseJson(res.stdout);
  expect(body.error.code, p).toBe('CONFIG_INVALID');
  expect(body.error.message, p).toContain('agents.default.skills.execSandbox.readOnlyAllowPaths[0]');
  expect(body.error.message, p).toMatch(why);
  expect(res.stdout, p).not.toContain(MARKER);
}

function expectRefused(fn: () => unknown, key: RegExp, why: RegExp): ComisError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ComisError);
    expect((err as ComisError).code).toBe('CONFIG_INVALID');
    expect((err as ComisError).message).toMatch(key);
    expect((err as ComisError).message).toMatch(why);
    return err as ComisError;
  }
  throw new Error('expected a CONFIG_INVALID refusal');
}

describe('configured workspaces are screened', () => {
  it('workspace: $COMIS_HOME is refused before anything runs and config.yaml stays as it was (controls: a neutral workspace reaches the write line; a jail on $COMIS_HOME rewrites it)', async () => {
    const h = makeHome();
    const config = configWith(h.home);
    writeFileSync(join(h.home, 'config.yaml'), config);
    const script = h.script('rewrite.cjs', REWRITE);
    const res = h.run(['orchestrate', script, '--json']);
    expect(res.status).toBe(2);
    const body = parseJson(res.stdout);
    expect(body.error.code).toBe('CONFIG_INVALID');
    expect(body.error.message).toContain('agents.default.workspace');
    expect(body.error.message).toMatch(/\$COMIS_HOME/);
    expect(res.stdout + res.stderr).not.toContain(MARKER); // nothing ran
    expect(readFileSync(join(h.home, 'config.yaml'), 'utf8')).toBe(config);

    // Control 1: the same script and command with a neutral workspace reaches its write line.
    const neutral = join(tempDir('comis-neutral-'), 'ws');
    writeFileSync(join(h.home, 'config.yaml'), configWith(neutral));
    const ok = h.run(['orchestrate', script]);
    expect(ok.stderr).toMatch(SUCCESS_LINE);
    expect(ok.stdout).toBe(`${MARKER}\nrewritten\n`);
    expect(readFileSync(join(neutral, 'config.yaml'), 'utf8')).toContain('write: true');

    // Control 2: what the old runner did with workspace: $COMIS_HOME (bound it read-write at
    // /workspace, the script's cwd): the same script rewrites the real config.yaml.
    const victim = makeHome();
    writeFileSync(join(victim.home, 'config.yaml'), config);
    const n = node();
    const hostUid = isRoot() ? 0x7c00_1234 : process.getuid!();
    prepareWritableDir(victim.home, hostUid);
    const r = await runInJail({ command: n.cmd(REWRITE), mounts: n.mounts, ws: { path: victim.home, hostUid } });
    expect(r.stdout).toBe(`${MARKER}\nrewritten\n`);
    expect(readFileSync(join(victim.home, 'config.yaml'), 'utf8')).toContain('write: true');
  });

  it('/etc, $HOME, / and an ancestor of $COMIS_HOME are refused through the CLI; /etc keeps its owner', () => {
    const h = makeHome();
    const otherHome = tempDir('comis-user-home-');
    const cases: [string, Record<string, string>, RegExp][] = [
      ['/etc', {}, /host configuration \(\/etc\)/],
      [otherHome, { HOME: otherHome }, /your home directory \(\$HOME\)/],
      ['/', {}, /host root/],
      [join(h.home, '..'), {}, /contains comis state|shared \/tmp/],
    ];
    const etcOwner = statSync('/etc').uid;
    const script = h.script('rewrite.cjs', REWRITE);
    for (const [ws, env, why] of cases) {
      writeFileSync(join(h.home, 'config.yaml'), configWith(ws));
      const res = h.run(['orchestrate', script, '--json'], { env });
      expect(res.status, ws).toBe(2);
      const body = parseJson(res.stdout);
      expect(body.error.message, ws).toContain('agents.default.workspace');
      expect(body.error.message, ws).toMatch(why);
      expect(res.stdout, ws).not.toContain(MARKER);
    }
    expect(statSync('/etc').uid).toBe(etcOwner);
  });

  it('refuses system trees, secrets, comis state and symlinks; accepts a neutral directory and $COMIS_HOME/workspaces/<name>', () => {
    const comisHome = tempDir('comis-home-');
    const home = tempDir('comis-user-home-');
    const ctx = { agentId: 'ops', comisHome, home };
    const key = /agents\.ops\.workspace/;
    expectRefused(() => screenWorkspace('/usr/local/ws', ctx), key, /system programs/);
    expectRefused(() => screenWorkspace('/proc/self', ctx), key, /\/proc/);
    expectRefused(() => screenWorkspace('/root', ctx), key, /root's home/);
    expectRefused(() => screenWorkspace('/home', ctx), key, /all homes/);
    expectRefused(() => screenWorkspace('/tmp', ctx), key, /shared \/tmp/);
    expectRefused(() => screenWorkspace(join(home, '.ssh'), ctx), key, /~\/\.ssh/);
    expectRefused(() => screenWorkspace(join(home, '.config', 'x'), ctx), key, /~\/\.config/);
    expectRefused(() => screenWorkspace(join(comisHome, 'logs'), ctx), key, /inside comis state/);
    expectRefused(() => screenWorkspace(join(comisHome, 'workspaces'), ctx), key, /all agent workspaces/);
    expectRefused(() => screenWorkspace('relative/ws', ctx), key, /not an absolute path/);
    // Symlinks: the configured path itself, and one whose target is comis state.
    const real = join(tempDir(), 'real');
    mkdirSync(real);
    const link = join(tempDir(), 'link');
    symlinkSync(real, link);
    expectRefused(() => screenWorkspace(link, ctx), key, /symlink/);
    const sneaky = join(tempDir(), 'sneaky');
    symlinkSync(comisHome, sneaky);
    expectRefused(() => screenWorkspace(join(sneaky, 'x'), ctx), key, /comis state/);
    // Positive controls: the screen does accept what a workspace should be.
    expect(screenWorkspace(real, ctx)).toBe(realpathSync(real));
    const fresh = join(comisHome, 'workspaces', 'ops');
    expect(screenWorkspace(fresh, ctx)).toBe(join(realpathSync(comisHome), 'workspaces', 'ops'));
    expect(statSync(fresh).isDirectory()).toBe(true);
  });

  it('refuses a workspace whose parent other users can write (controls: the same under a sticky or a private parent is accepted)', () => {
    const ctx = { agentId: 'ops', comisHome: tempDir('comis-home-'), home: tempDir('comis-user-home-') };
    const open = join(tempDir(), 'open');
    mkdirSync(open);
    chmodSync(open, 0o777);
    expectRefused(() => screenWorkspace(join(open, 'ws'), ctx), /agents\.ops\.workspace/, /writable by other users/);
    chmodSync(open, 0o1777); // sticky: others cannot rename what they do not own
    expect(screenWorkspace(join(open, 'ws2'), ctx)).toBe(join(realpathSync(open), 'ws2'));
    chmodSync(open, 0o755);
    expect(screenWorkspace(join(open, 'ws'), ctx)).toBe(join(realpathSync(open), 'ws'));
  });
});

describe('workspace ownership', () => {
  it.skipIf(!isRoot())(`a workspace owned by another user is refused (control: the same directory owned by root is accepted and handed to its jail uid)${isRoot() ? '' : ' [needs root to chown]'}`, async () => {
    const h = makeHome();
    const ws = join(tempDir('comis-owned-'), 'ws');
    mkdirSync(ws, { mode: 0o700 });
    chownSync(ws, 4242, 4242); // some other user's directory
    const { loadConfig, resolveAgent } = await import('../../src/lib/config/load.js');
    const agent = { ...resolveAgent(await loadConfig({ home: h.home })), workspace: ws };
    await expect(prepareAgentJail(agent, h.home)).rejects.toThrow(/agents\.default\.workspace.*owned by uid 4242/);
    chownSync(ws, 0, 0);
    const plan = await prepareAgentJail(agent, h.home);
    expect(statSync(ws).uid).toBe(plan.hostUid);
  });
});

describe('execSandbox.readOnlyAllowPaths', () => {
  it('a listed directory is readable in the jail at the same path and not writable (EROFS), though it is 0777 on the host', () => {
    const h = makeHome();
    const ro = join(tempDir('comis-ro-'), 'ref');
    mkdirSync(ro);
    writeFileSync(join(ro, 'data.txt'), 'reference content\n');
    chmodSync(join(ro, 'data.txt'), 0o666);
    chmodSync(ro, 0o777); // only the read-only mount can stop the write
    writeFileSync(join(h.home, 'config.yaml'), `agents:\n  default:\n    skills:\n      execSandbox:\n        readOnlyAllowPaths: [${JSON.stringify(ro)}]\n`);
    const script = h.script(
      'ro.cjs',
      `const fs = require('fs');
process.stdout.write('read:' + fs.readFileSync(${JSON.stringify(join(ro, 'data.txt'))}, 'utf8'));
fs.writeFileSync('/workspace/ok.txt', 'x'); // control: writing as such works
console.log('workspace write ok');
for (const target of [${JSON.stringify(join(ro, 'new.txt'))}, ${JSON.stringify(join(ro, 'data.txt'))}]) {
  try { fs.writeFileSync(target, 'pwned'); console.log('WROTE', target); } catch (e) { console.log('write:', e.code); }
}
`,
    );
    const res = h.run(['orchestrate', script]);
    expect(res.stderr).toMatch(SUCCESS_LINE);
    expect(res.stdout).toBe('read:reference content\nworkspace write ok\nwrite: EROFS\nwrite: EROFS\n');
    expect(readFileSync(join(ro, 'data.txt'), 'utf8')).toBe('reference content\n');
  });

  it('/root/.ssh, $COMIS_HOME, /etc, trees under /usr and /lib and a missing path are refused, naming the key; nothing runs', () => {
    const h = makeHome();
    const script = h.script('marker.cjs', `console.log('${MARKER}')`);
    const cases: [string, RegExp][] = [
      ['/root/.ssh', /root's home/],
      [h.home, /\$COMIS_HOME/],
      ['/etc/ssl', /\/etc/],
      // The jail builds its own /usr and /lib: an entry under them is refused here, naming the key, not at spawn.
      ['/usr/share', /jail's own \/usr/],
      ['/lib/x86_64-linux-gnu', /jail's own \/lib/],
      [join(tempDir(), 'absent'), /does not exist/],
    ];
    for (const [p, why] of cases) expectBindRefused(h, script, `agents:\n  default:\n    skills:\n      execSandbox:\n        readOnlyAllowPaths: [${JSON.stringify(p)}]\n`, p, why);
    // Control: with no entry the same script runs.
    writeFileSync(join(h.home, 'config.yaml'), 'agents:\n  default: {}\n');
    expect(h.run(['orchestrate', script]).stdout).toBe(`${MARKER}\n`);
  });

  it("an entry in or holding an agent's workspace, or under a directory another user can rewrite, is refused, naming the key; nothing runs", () => {
    const h = makeHome();
    const script = h.script('marker.cjs', `console.log('${MARKER}')`);
    // Agent a's workspace outside $COMIS_HOME: its jail (or a run of any agent racing there) can swap a
    // component of a path in it for a link between the check and the bind.
    const wsA = join(tempDir('comis-ws-parent-'), 'wsA');
    mkdirSync(join(wsA, 'out'), { recursive: true });
    const config = (bind: string): string => `agents:\n  a:\n    workspace: ${JSON.stringify(wsA)}\n  default:\n    skills:\n      execSandbox:\n        readOnlyAllowPaths: [${JSON.stringify(bind)}]\n`;
    const cases: [string, RegExp][] = [
      [join(wsA, 'out'), /is inside an agent's workspace/],
      [wsA, /is an agent's workspace/],
      [dirname(wsA), /holds an agent's workspace/],
    ];
    if (isRoot()) {
      // A directory whose parent another user owns: that user can rename it and put a link in its place.
      const theirs = tempDir('comis-theirs-');
      mkdirSync(join(theirs, 'data'));
      chownSync(theirs, 12_345, 12_345);
      cases.push([join(theirs, 'data'), /ancestor .* is owned by uid 12345, who could swap it for a link/]);
    }
    const groupWritable = tempDir('comis-shared-');
    mkdirSync(join(groupWritable, 'data'));
    chmodSync(groupWritable, 0o775);
    cases.push([join(groupWritable, 'data'), /ancestor .* is writable by other users \(mode 775\)/]);
    for (const [p, why] of cases) expectBindRefused(h, script, config(p), p, why);
    // Control: a directory of ours beside them is bound, and the script runs.
    const ours = join(tempDir('comis-ours-'), 'data');
    mkdirSync(ours);
    writeFileSync(join(h.home, 'config.yaml'), config(ours));
    expect(h.run(['orchestrate', script]).stdout).toBe(`${MARKER}\n`);
  });

  it.skipIf(!isRoot())('control: a stage bind follows a component swapped for a link after the path was checked', () => {
    // What the refusal above prevents: the path is checked, then bound by mount(8) as root, which
    // follows links. A component swapped in between takes the bind anywhere.
    const base = tempDir('comis-bind-swap-');
    const checked = join(base, 'src', 'data');
    mkdirSync(checked, { recursive: true });
    writeFileSync(join(checked, 'file'), 'CHECKED');
    const elsewhere = join(base, 'elsewhere');
    mkdirSync(elsewhere);
    writeFileSync(join(elsewhere, 'file'), 'ELSEWHERE');
    const resolved = readOnlyAllowMounts([checked], { agentId: 'ops', comisHome: tempDir('comis-home-'), home: tempDir('comis-user-home-') })[0]!.source;
    expect(resolved).toBe(realpathSync(checked));
    // Between the check and the bind: the directory moved away, a link to elsewhere in its place.
    renameSync(join(base, 'src'), join(base, 'src-away'));
    mkdirSync(join(base, 'src'));
    symlinkSync(elsewhere, join(base, 'src', 'data'));
    const target = join(base, 'target');
    mkdirSync(target);
    const seen = execFileSync('unshare', ['--mount', '--propagation', 'private', '--', 'sh', '-c', 'mount --bind "$1" "$2" && cat "$2/file"', 'sh', resolved, target], { encoding: 'utf8' });
    expect(seen).toBe('ELSEWHERE');
  });

  it('an entry that would cover a path the jail builds itself is refused', () => {
    const ctx = { agentId: 'ops', comisHome: tempDir('comis-home-'), home: tempDir('comis-user-home-') };
    expectRefused(() => readOnlyAllowMounts(['/usr'], ctx), /readOnlyAllowPaths\[0\]/, /jail's own \/usr/);
    const ok = join(tempDir(), 'ref');
    mkdirSync(ok);
    expect(readOnlyAllowMounts([ok], ctx)).toEqual([{ kind: 'ro', source: realpathSync(ok), target: ok }]);
  });
});
