import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { lookupJailUid } from '../../src/lib/store/jail-uids.js';
import { openStore } from '../../src/lib/store/store.js';
import { comisBin, parseJson, repoRoot } from '../helpers/cli.js';
import { schemaValidator } from '../obs/schema.js';
import { makeHome } from '../helpers/orchestrate.js';
import { tempDir } from '../helpers/temp.js';
import { until } from '../jail/helpers.js';

/** The uid the store's registry gave a workspace (as root, each workspace has its own). */
function jailUidFor(home: string, workspace: string): number {
  const store = openStore({ home, readonly: true });
  try {
    const uid = lookupJailUid(store.db, workspace);
    if (uid === undefined) throw new Error(`no jail uid registered for ${workspace}`);
    return uid;
  } finally {
    store.close();
  }
}

function ndjson(text: string): any[] {
  return text
    .trim()
    .split('\n')
    .map((l) => parseJson(l));
}

function writePlan(text: string): string {
  const file = join(tempDir('comis-plan-'), 'plan.yaml');
  writeFileSync(file, text);
  return file;
}

/** Starts `comis` in the background; resolves lines of stdout as they come. */
function startComis(args: string[], home: string) {
  const child = spawn(process.execPath, [comisBin, ...args], { cwd: repoRoot, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, COMIS_HOME: home }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const waiters: { pred: (s: string) => boolean; resolve: () => void }[] = [];
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    for (const w of waiters.splice(0)) (w.pred(out) ? w.resolve : () => waiters.push(w))();
  });
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  return {
    child,
    exited,
    output: () => out,
    waitFor: (pred: (s: string) => boolean) => new Promise<void>((resolve) => (pred(out) ? resolve() : waiters.push({ pred, resolve }))),
  };
}

/** Live (non-zombie) processes running as `uid`: each jail runs as its workspace's own unprivileged uid. */
function processesOfUid(uid: number): number[] {
  const found: number[] = [];
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      if (new RegExp(`^Uid:\\s+${uid}\\s`, 'm').test(status) && !/^State:\s+Z/m.test(status)) found.push(Number(pid));
    } catch {
      /* gone */
    }
  }
  return found;
}

const DAG_PLAN = `
name: e2e
children:
  - id: first
    language: js
    inline: "console.log('SUMMARY: first ok')"
  - id: second
    language: py
    inline: "print('second')"
    dependsOn: [first]
  - id: broken
    language: js
    inline: "console.error('broken: \\\\x1b[31m no config'); process.exit(3)"
  - id: after-broken
    language: js
    inline: "console.log('never')"
    dependsOn: [broken]
  - id: slow
    language: js
    inline: "setTimeout(() => {}, 60000)"
    timeoutMs: 400
  - id: writer
    language: js
    inline: "console.log('ran')"
    capabilities: [orch:read, orch:write]
`;

describe('comis run', () => {
  it('--json: a DAG with a failing and a timing-out child, as NDJSON', () => {
    const h = makeHome('agents:\n  lead:\n    autonomy:\n      profile: standard\n');
    const res = h.run(['run', writePlan(DAG_PLAN), '--json', '--progress-interval-ms', '200']);
    expect(res.status).toBe(1);
    const lines = ndjson(res.stdout);
    const envelope = lines.at(-1)!;
    expect(envelope.status).toBe('fail');
    const events = lines.slice(0, -1);
    expect(events[0].type).toBe('plan:started');
    expect(events.at(-1).type).toBe('plan:finished');
    const writer = events[0].children.find((c: any) => c.childId === 'writer');
    expect(writer).toMatchObject({ agentId: 'lead--writer', grantedCaps: ['orch:read', 'orch:write'], deniedCaps: [] });
    expect(events[0].leadRole).toBe('coordinator');
    const states = Object.fromEntries(events.filter((e) => e.type === 'child:finished').map((e) => [e.childId, e.state]));
    expect(states).toEqual({ first: 'done', second: 'done', broken: 'failed', 'after-broken': 'skipped', slow: 'timed_out', writer: 'done' });
    const result = envelope.result;
    expect(result.totals).toMatchObject({ done: 3, failed: 1, timed_out: 1, skipped: 1 });
    const first = result.children.find((c: any) => c.childId === 'first');
    expect(first.summary).toBe('first ok');
    // The failed child's stderr tail is in its result, terminal-escaped; never in an event.
    const broken = result.children.find((c: any) => c.childId === 'broken');
    expect(broken.stderrTail).toBe('broken: \\x1b[31m no config');
    expect(first.stderrTail).toBeUndefined();
    expect(JSON.stringify(events)).not.toContain('no config');
    expect(readFileSync(join(h.home, first.resultRef.ref), 'utf8')).toBe('SUMMARY: first ok\n');
    expect(readFileSync(result.leadContext.file, 'utf8')).toContain(`Full result (drill in with read/grep/jq): ${first.resultRef.ref} (18B, text)`);
    // Child runs are recorded under the session with the plan run as parent.
    const explain = h.run(['explain', result.sessionKey, '--json']);
    expect(explain.status).toBe(0);
    const report = parseJson(explain.stdout);
    expect(JSON.stringify(report)).toContain(first.runId);
    // The coordinator section groups the children under their plan run, content-free.
    schemaValidator('explain')(report);
    const [plan] = report.result.coordinator;
    expect(plan).toMatchObject({ leadAgentId: 'lead', status: 'failure', leadContextChars: expect.any(Number) });
    expect(Object.fromEntries(plan.children.map((c: any) => [c.childId, c.state]))).toEqual(states);
    expect(plan.children.find((c: any) => c.childId === 'writer')).toMatchObject({ grantedCaps: ['orch:read', 'orch:write'], deniedCaps: [] });
    expect(plan.children.find((c: any) => c.childId === 'first').runId).toBe(first.runId);
    const pretty = h.run(['explain', result.sessionKey]);
    expect(pretty.stdout).toMatch(/Coordinator plan \S+ \(lead lead\): failure, 6 children/);
  });

  it("a child's full output (stdout and its ResultRefs) is kept in its own workspace", () => {
    const h = makeHome();
    const plan = `name: keep\nchildren:\n  - id: big\n    language: js\n    capabilities: [orch:read]\n    inline: |\n      const fs = require('node:fs');\n      const { comis_tools } = require('./comis_tools.js');\n      fs.writeFileSync('data.txt', 'row\\n'.repeat(10000));\n      comis_tools.read({ path: 'data.txt' }).then((r) => console.log('SUMMARY: ' + r.type + ' ' + r.ref));\n`;
    const res = h.run(['run', writePlan(plan), '--json']);
    const envelope = ndjson(res.stdout).at(-1)!;
    expect(envelope.status, res.stdout + res.stderr).toBe('ok');
    const child = envelope.result.children[0];
    expect(child.summary).toBe('ResultRef results/ref-1.txt');
    const kept = join(h.home, 'workspaces', 'default--big', 'comis-results', `${child.runId}.results`, 'ref-1.txt');
    expect(readFileSync(kept, 'utf8')).toBe('row\n'.repeat(10000));
  });

  it('a cycle is a usage error before anything runs', () => {
    const h = makeHome();
    const res = h.run(['run', writePlan('children:\n  - {id: a, inline: x, language: js, dependsOn: [b]}\n  - {id: b, inline: x, language: js, dependsOn: [a]}\n')]);
    expect(res.status).toBe(2);
    expect(res.stderr).toContain('cycle: a → b → a');
    expect(existsSync(join(h.home, 'workspaces'))).toBe(false);
    // With --json the error is one NDJSON line, like every other line of the stream.
    const json = h.run(['run', writePlan('children:\n  - {id: a, inline: x, language: js, dependsOn: [a]}\n'), '--json']);
    expect(json.status).toBe(2);
    expect(json.stdout.trim().split('\n')).toHaveLength(1);
    expect(parseJson(json.stdout)).toMatchObject({ status: 'error', error: { code: 'INPUT_INVALID' } });
  });

  it('plain lines without a TTY: progress at the interval, stopping at the child end; the process exits', () => {
    const h = makeHome();
    const plan = writePlan('children:\n  - id: ticker\n    language: js\n    inline: "setTimeout(() => console.log(\'SUMMARY: ticked\'), 900)"\n');
    const res = h.run(['run', plan, '--progress-interval-ms', '200']);
    expect(res.status).toBe(0);
    const lines = res.stdout.split('\n');
    const progress = lines.filter((l) => /^\[ticker\] running, step 0 \(tool calls so far\), \d+s$/.test(l));
    expect(progress.length).toBeGreaterThanOrEqual(2);
    const end = lines.findIndex((l) => l.startsWith('[ticker] done'));
    expect(lines.slice(end).some((l) => l.includes('running, step'))).toBe(false);
    expect(res.stdout).toContain('--- lead context');
    expect(res.stdout).toContain('ticked');
  });

  it("plain lines: a failed child's stderr tail follows its line, escaped", () => {
    const h = makeHome();
    const plan = writePlan('children:\n  - id: oops\n    language: py\n    inline: |\n      import sys\n      print("bad \\x1b]0;title\\x07 input", file=sys.stderr)\n      sys.exit(5)\n');
    const res = h.run(['run', plan]);
    expect(res.status).toBe(1);
    expect(res.stdout).toMatch(/^\[oops\] FAILED \(nonzero_exit\) after \d+ ms, 0 tool calls, result 0B text; lead context \d+ chars\n\[oops\] stderr \(last \d+ chars\):\n {2}\| bad \\x1b\]0;title\\x07 input\n/m);
    expect(res.stdout).not.toContain('\x1b');
  });

  it('--follow sees a run another process is executing', async () => {
    const h = makeHome();
    const plan = writePlan('children:\n  - id: a\n    language: js\n    inline: "setTimeout(() => console.log(\'a\'), 1500)"\n  - id: b\n    language: js\n    dependsOn: [a]\n    inline: "console.log(\'b\')"\n');
    const runner = startComis(['run', plan, '--json', '--progress-interval-ms', '200'], h.home);
    await runner.waitFor((s) => s.includes('"child:started"'));
    const planRunId = ndjson(runner.output().split('\n')[0]!)[0].planRunId as string;
    const follower = startComis(['run', '--follow', planRunId, '--json'], h.home);
    const [code, followCode] = await Promise.all([runner.exited, follower.exited]);
    expect(code).toBe(0);
    expect(followCode).toBe(0);
    const seen = ndjson(follower.output());
    const types = seen.map((e) => e.type);
    expect(types[0]).toBe('plan:started');
    expect(types).toContain('child:started');
    expect(types).toContain('session:sub_agent_progress');
    expect(seen.at(-2).type).toBe('plan:finished');
    expect(seen.at(-1).result).toEqual({ planRunId, status: 'success' });
    const unknown = h.run(['run', '--follow', 'p-000000000000']);
    expect(unknown.status).toBe(2);
  });

  it('Ctrl-C stops the children: no jailed process is left alive', async () => {
    const h = makeHome();
    const plan = writePlan('children:\n  - id: forever\n    language: js\n    inline: "setInterval(() => {}, 1000)"\n    timeoutMs: 600000\n  - id: later\n    language: js\n    dependsOn: [forever]\n    inline: "console.log(1)"\n');
    const runner = startComis(['run', plan, '--no-tui'], h.home);
    await runner.waitFor((s) => s.includes('[forever] running'));
    const uid = process.getuid?.() === 0 ? jailUidFor(h.home, realpathSync(join(h.home, 'workspaces', 'default--forever'))) : -1;
    // Control: the jail runs. "[forever] running" is printed at spawn, before prlimit, the supervisor, the stager and
    // setpriv have exec'd down to the jail uid, so on a loaded machine that uid can still have no process: wait for it.
    if (uid >= 0) await until(() => processesOfUid(uid).length > 0, 20_000, `a process of jail uid ${uid}`);
    runner.child.kill('SIGINT');
    const code = await runner.exited;
    expect(code).toBe(1);
    expect(runner.output()).toMatch(/\[forever\] cancelled after/);
    expect(runner.output()).toMatch(/\[later\] cancelled/);
    expect(runner.output()).toContain('plan interrupted');
    if (uid >= 0) expect(processesOfUid(uid)).toEqual([]);
  });

  it('TUI at 60 columns: a first frame that says what is happening, a failed child with its stderr, every line fitting', () => {
    const h = makeHome();
    const plan = writePlan(
      'name: narrow\nchildren:\n  - id: a-rather-long-child-name-x\n    language: js\n    inline: "console.log(\'SUMMARY: fine\')"\n  - id: oops\n    language: js\n    inline: "console.error(\'oops: \\\\x1b[2J no such key\'); process.exit(2)"\n',
    );
    const driver = join(tempDir(), 'drive_tty60.py');
    writeFileSync(
      driver,
      `import os, pty, select, struct, fcntl, sys, termios, time
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack('HHHH', 40, 60, 0, 0))
chunks, t0 = [], time.time()
while time.time() - t0 < 60:
    r, _, _ = select.select([fd], [], [], 0.1)
    if r:
        try:
            d = os.read(fd, 65536)
        except OSError:
            break
        if not d:
            break
        chunks.append(d)
_, status = os.waitpid(pid, 0)
sys.stdout.write('EXIT %d\\n' % os.waitstatus_to_exitcode(status))
sys.stdout.flush()
sys.stdout.buffer.write(b''.join(chunks))
`,
    );
    const res = spawnSync('python3', [driver, process.execPath, comisBin, 'run', plan], { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: h.home, COMIS_HOME: h.home }, encoding: 'utf8', timeout: 90_000 });
    expect(res.stderr).toBe('');
    expect(res.stdout).toMatch(/^EXIT 1$/m);
    const raw = res.stdout.slice(res.stdout.indexOf('\n') + 1);
    // The very first thing Ink drew names the plan and what is going on (not an empty frame).
    const text = raw.replace(/\x1b\[[0-9;?]*[a-zA-Z]/g, '');
    const [firstLine, secondLine] = text.trimStart().split(/\r?\n/);
    expect(firstLine!.length).toBeLessThanOrEqual(60);
    expect(`comis run ${plan}`.startsWith(firstLine!.replace(/…$/, ''))).toBe(true);
    expect(secondLine).toBe('starting: reading the plan and config…');
    // The last TUI frame (before the lead context is printed): the failed row, its escaped stderr, the legend.
    const tui = text.slice(0, text.indexOf('--- lead context'));
    const last = tui.slice(tui.lastIndexOf('comis run narrow'));
    expect(last).toMatch(/✘ oops\s+FAILED\s+\S+\s+0 calls\s+nonzero_exit/);
    expect(last).toMatch(/│ oops: \\x1b\[2J no such key/);
    expect(last).toContain('calls = tool calls the child made so far');
    expect(last).toContain('failure in');
    for (const line of last.split(/\r?\n/)) expect(line.length, line).toBeLessThanOrEqual(60);
    // The child's own ESC never reached the terminal: only Ink's own sequences did.
    expect(raw).not.toContain('\x1b[2J no such key');
  });

  it('TUI on a terminal: Ctrl-C stops the plan cleanly, no jailed process left', () => {
    const h = makeHome();
    const plan = writePlan('children:\n  - id: forever\n    language: js\n    inline: "setInterval(() => {}, 1000)"\n    timeoutMs: 600000\n');
    // A real pseudo-terminal (python3's pty), so Ink renders and reads keys in raw mode.
    const driver = join(tempDir(), 'drive_tty.py');
    writeFileSync(
      driver,
      `import os, pty, select, struct, fcntl, termios, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack('HHHH', 40, 130, 0, 0))
out, sent, t0 = b'', False, time.time()
while time.time() - t0 < 60:
    r, _, _ = select.select([fd], [], [], 0.1)
    if r:
        try:
            d = os.read(fd, 65536)
        except OSError:
            break
        if not d:
            break
        out += d
    if not sent and b'running ' in out and b'started' in out:
        os.write(fd, b'\\x03'); sent = True
_, status = os.waitpid(pid, 0)
sys.stdout.write('EXIT %d\\n' % os.waitstatus_to_exitcode(status))
sys.stdout.buffer.write(out)
`,
    );
    const res = spawnSync('python3', [driver, process.execPath, comisBin, 'run', plan], { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: h.home, COMIS_HOME: h.home }, encoding: 'utf8', timeout: 90_000 });
    expect(res.stderr).toBe('');
    const text = res.stdout.replace(/\x1b\[[0-9;?]*[a-zA-Z]/g, '');
    expect(text).toMatch(/^EXIT 1$/m);
    expect(text).toContain('q or Ctrl-C: quit');
    expect(text).toMatch(/forever\s+cancelled/);
    expect(text).toContain('interrupted in');
    const uid = process.getuid?.() === 0 ? jailUidFor(h.home, realpathSync(join(h.home, 'workspaces', 'default--forever'))) : -1;
    if (uid >= 0) expect(processesOfUid(uid)).toEqual([]);
  });
});
