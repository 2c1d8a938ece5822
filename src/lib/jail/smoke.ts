/**
 * The smoke test of the jail: it builds the REAL hardened jail (same builder
 * as every run: no network, read-only system, a writable scratch workspace,
 * seccomp, rlimits, the unprivileged uid) and runs a trivial program in it
 * that reports what it sees; each report line becomes a named check.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';

import { makeOwnedTempDir } from '../temp-dir.js';
import { DEFAULT_JAIL_LIMITS } from './defaults.js';
import { isRoot } from './host.js';
import { dataFdsFromFiles, prepareLaunch, withInheritedFdsCovered } from './launch.js';
import { prepareWritableDir } from './mounts.js';
import { tmpfsMountMode, type JailTools } from './plan.js';
import type { SeccompArch } from './seccomp.js';
import { DEFAULT_TMP_INODES, type SmokeCheck } from './types.js';

/** The shell program of the smoke test: it reports what the jail looks like from inside. */
export const SMOKE_WORKSPACE = '/workspace';
const SMOKE_SCRIPT = [
  'while IFS= read -r l; do case "$l" in Uid:*|CapEff:*|NoNewPrivs:*|Seccomp:*) echo "status $l";; esac; done < /proc/self/status',
  'echo "pid $$"',
  'while IFS= read -r l; do echo "netdev $l"; done < /proc/net/dev',
  // Subshells: a failed redirection of a special builtin would end the whole script.
  `if (echo ok > ${SMOKE_WORKSPACE}/.comis-probe) 2>/dev/null && read -r v < ${SMOKE_WORKSPACE}/.comis-probe && [ "$v" = ok ]; then echo "ws writable"; else echo "ws readonly"; fi`,
  'if (: > /usr/.comis-probe) 2>/dev/null; then echo "usr writable"; else echo "usr readonly"; fi',
  'if [ -e /etc/shadow ]; then echo "etc host"; else echo "etc synthetic"; fi',
  // Total inodes of each private tmpfs (statfs f_files): the nr_inodes bound, or the kernel's RAM-sized default.
  'echo "tmpinodes $(stat -f -c %c /tmp) $(stat -f -c %c /dev/shm)"',
].join('\n');

/** Reads the smoke program's report into named checks. */
export function parseSmokeOutput(out: string, expectTmpInodes?: number): SmokeCheck[] {
  const lines = out.split('\n');
  const status = (key: string): string | undefined => {
    const l = lines.find((x) => x.startsWith(`status ${key}:`));
    return l?.slice(`status ${key}:`.length).trim().split(/\s+/)[0];
  };
  const uid = status('Uid');
  const capEff = status('CapEff');
  const nnp = status('NoNewPrivs');
  const seccomp = status('Seccomp');
  const pid = lines
    .find((l) => l.startsWith('pid '))
    ?.slice(4)
    .trim();
  const ifaces = lines
    .filter((l) => l.startsWith('netdev '))
    .map((l) => l.slice(7))
    .filter((l) => l.includes(':') && !/[|]/.test(l))
    .map((l) => l.split(':')[0]!.trim());
  const has = (l: string): boolean => lines.includes(l);
  const inodes =
    lines
      .find((l) => l.startsWith('tmpinodes '))
      ?.slice(10)
      .trim()
      .split(/\s+/)
      .map(Number) ?? [];
  const bounded = expectTmpInodes !== undefined && inodes.length === 2 && inodes.every((n) => n === expectTmpInodes);
  const tmpCheck: SmokeCheck =
    expectTmpInodes === undefined
      ? { name: 'tmp inodes bounded', ok: false, advisory: true, detail: `no user namespace of our own here: /tmp and /dev/shm are bounded in bytes only (${inodes.join(' and ') || '?'} inodes)` }
      : { name: 'tmp inodes bounded', ok: bounded, detail: `nr_inodes ${inodes.join(' and ') || '?'} (want ${expectTmpInodes})` };
  return [
    { name: 'not root inside', ok: uid !== undefined && uid !== '0', detail: uid === undefined ? 'no answer' : `uid ${uid}` },
    { name: 'no capabilities', ok: capEff !== undefined && /^0+$/.test(capEff), detail: `CapEff ${capEff ?? '?'}` },
    { name: 'no_new_privs', ok: nnp === '1', detail: `NoNewPrivs ${nnp ?? '?'}` },
    { name: 'seccomp filter', ok: seccomp === '2', detail: `Seccomp ${seccomp ?? '?'}` },
    { name: 'no network', ok: ifaces.length > 0 && ifaces.every((i) => i === 'lo'), detail: `interfaces: ${ifaces.join(', ') || 'none'}` },
    { name: 'own pid namespace', ok: pid === '1', detail: `program is pid ${pid ?? '?'}` },
    { name: 'workspace writable', ok: has('ws writable'), detail: has('ws writable') ? `${SMOKE_WORKSPACE} writable` : `${SMOKE_WORKSPACE} not writable` },
    { name: '/usr read-only', ok: has('usr readonly'), detail: has('usr readonly') ? 'write refused' : 'write succeeded' },
    { name: 'host /etc hidden', ok: has('etc synthetic'), detail: has('etc synthetic') ? 'synthetic /etc' : 'host /etc visible' },
    tmpCheck,
  ];
}

/** Runs the smoke program in the real jail, synchronously. */
export function smokeTest(tools: JailTools, arch: SeccompArch): { checks?: SmokeCheck[]; stderr: string; code: number | null } {
  const root = isRoot();
  // Ours, named for the next comis to sweep should this one die now; the jail's
  // workspace inside it, which root hands to the jail uid (the 0711 lets it through).
  const scratch = makeOwnedTempDir('comis-probe-', root ? 0o711 : 0o700);
  const ws = join(scratch, 'ws');
  try {
    mkdirSync(ws, { mode: 0o700 });
    const launch = prepareLaunch(
      {
        command: ['/bin/sh', '-c', SMOKE_SCRIPT],
        mounts: [{ kind: 'rw', source: ws, target: SMOKE_WORKSPACE }],
        cwd: SMOKE_WORKSPACE,
        env: { PATH: '/usr/bin:/bin' },
        limits: DEFAULT_JAIL_LIMITS,
        // The same supervisor real runs get, so the smoke test proves that chain starts too.
        deadlineMs: 20_000,
      },
      tools,
      arch,
    );
    if (root) prepareWritableDir(ws, launch.hostUid);
    const data = dataFdsFromFiles(launch.plan.dataFds);
    // spawnSync cannot answer bubblewrap's nproc gate after the start: the
    // gate is opened at once, so comis's own fixed smoke program runs without
    // the in-jail process limit (real runs always get it, see spawnJail).
    const gate = launch.plan.nprocGate ? dataFdsFromFiles([Buffer.from('1')]) : undefined;
    const io = withInheritedFdsCovered<'ignore' | 'pipe' | number>(['ignore', 'pipe', 'pipe', ...data.fds, 'pipe', ...(gate?.fds ?? [])]);
    try {
      const res = spawnSync(launch.plan.file, launch.plan.args, {
        env: {},
        cwd: '/',
        stdio: io.stdio,
        timeout: 20_000,
        killSignal: 'SIGKILL',
        maxBuffer: 1024 * 1024,
      });
      const stdout = res.stdout?.toString('utf8') ?? '';
      const stderr = (res.stderr?.toString('utf8') ?? '') + (res.error ? `\n${res.error.message}` : '');
      if (res.status !== 0) return { stderr, code: res.status };
      return { checks: parseSmokeOutput(stdout, tmpfsMountMode({ tools, root }) ? DEFAULT_TMP_INODES : undefined), stderr, code: 0 };
    } finally {
      io.close();
      data.close();
      gate?.close();
      launch.cleanup();
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}
