/**
 * Which sandbox provider this machine has, and whether it really works.
 *
 * As seed 002 describes `detectSandboxProvider()`: probe the binary
 * (`bwrap --version`), then run a smoke test that builds the REAL hardened
 * jail (same builder as every run: no network, read-only system, a writable
 * scratch workspace, seccomp, rlimits, the unprivileged uid) and runs a
 * trivial program in it that reports what it sees. Unlike the seed's exec
 * tool, orchestrate has no unsandboxed fallback: a provider with a problem is
 * kept and reported so every run refuses with the same clear reason.
 *
 * Known failure it explains in words: user namespaces restricted (AppArmor
 * `apparmor_restrict_unprivileged_userns=1` on Ubuntu 24.04+,
 * `kernel.unprivileged_userns_clone=0`, `user.max_user_namespaces=0`, a
 * container that forbids nested namespaces). As root comis drops to an
 * unprivileged uid before bubblewrap, so these restrictions apply to root too.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { release, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

import { findHelper, findOnPath, isRoot } from './host.js';
import { dataFdsFromFiles, prepareLaunch, withInheritedFdsCovered } from './launch.js';
import { prepareWritableDir } from './mounts.js';
import { tmpfsMountMode, type JailTools } from './plan.js';
import { hostSeccompArch, type SeccompArch } from './seccomp.js';
import { DEFAULT_TMP_INODES, type SandboxProblem, type SandboxProviderInfo, type SmokeCheck } from './types.js';

/**
 * Default resource limits of a jail: the values of `jailLimitsSchema` in
 * src/lib/config/schema.ts (kept here so the jail needs no zod; a test
 * asserts they match).
 */
export const DEFAULT_JAIL_LIMITS = { memoryMb: 4096, maxProcesses: 64, fileSizeMb: 256, tmpSizeMb: 64, tmpInodes: DEFAULT_TMP_INODES } as const;

/** bubblewrap 0.8.0 added --disable-userns, which the jail relies on. */
export const MIN_BWRAP_VERSION = [0, 8, 0] as const;

export const INSTALL_BWRAP_HINT =
  'Install bubblewrap: apt-get install bubblewrap (Debian/Ubuntu), dnf install bubblewrap (Fedora/RHEL), pacman -S bubblewrap (Arch), apk add bubblewrap (Alpine).';

export interface DetectOptions {
  /** PATH to search (default: this process's PATH). */
  pathEnv?: string;
  /** Where the kernel's sysctls are read (default /proc/sys): tests point it at a fake tree. */
  sysctlRoot?: string;
  platform?: NodeJS.Platform;
}

export interface UsernsFacts {
  /** sysctl name → value, for the ones present on this kernel. */
  sysctls: Record<string, string>;
  /** Each restriction found, in words. */
  findings: string[];
  /** Hint matching the first finding. */
  hint?: string;
  /** comis itself runs inside a user namespace (a container, most likely). */
  insideUserNamespace: boolean;
}

const SYSCTLS = [
  ['kernel.apparmor_restrict_unprivileged_userns', 'kernel/apparmor_restrict_unprivileged_userns'],
  ['kernel.unprivileged_userns_clone', 'kernel/unprivileged_userns_clone'],
  ['user.max_user_namespaces', 'user/max_user_namespaces'],
] as const;

/** Reads the user-namespace sysctls and says, in words, which of them forbid what bubblewrap needs. */
export function readUsernsFacts(sysctlRoot = '/proc/sys'): UsernsFacts {
  const sysctls: Record<string, string> = {};
  for (const [name, rel] of SYSCTLS) {
    try {
      sysctls[name] = readFileSync(join(sysctlRoot, rel), 'utf8').trim();
    } catch {
      /* not on this kernel */
    }
  }
  const findings: string[] = [];
  let hint: string | undefined;
  const add = (finding: string, h: string): void => {
    findings.push(finding);
    hint ??= h;
  };
  if (sysctls['kernel.apparmor_restrict_unprivileged_userns'] === '1') {
    add(
      'AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1, the default on Ubuntu 24.04 and later); bubblewrap may create one only if an AppArmor profile allows it.',
      'Allow bubblewrap its user namespace: apt-get install apparmor-profiles && ln -s /usr/share/apparmor/extra-profiles/bwrap-userns-restrict /etc/apparmor.d/ && systemctl reload apparmor (or, machine-wide and less safe: sysctl -w kernel.apparmor_restrict_unprivileged_userns=0).',
    );
  }
  if (sysctls['kernel.unprivileged_userns_clone'] === '0') {
    add(
      'The kernel forbids unprivileged user namespaces (kernel.unprivileged_userns_clone=0).',
      'Enable them: sysctl -w kernel.unprivileged_userns_clone=1 (persist it in /etc/sysctl.d/).',
    );
  }
  if (sysctls['user.max_user_namespaces'] === '0') {
    add('User namespaces are disabled (user.max_user_namespaces=0).', 'Enable them: sysctl -w user.max_user_namespaces=15000 (persist it in /etc/sysctl.d/).');
  }
  let insideUserNamespace = false;
  try {
    const map = readFileSync('/proc/self/uid_map', 'utf8').trim().split(/\s+/);
    insideUserNamespace = !(map.length === 3 && map[0] === '0' && map[1] === '0' && map[2] === '4294967295');
  } catch {
    /* no /proc */
  }
  return { sysctls, findings, insideUserNamespace, ...(hint ? { hint } : {}) };
}

/** bubblewrap's own messages when it cannot create its namespaces. */
const USERNS_ERRORS = [
  /No permissions to creat(e|ing) new namespace/i,
  /Creating new namespace failed/i,
  /setting up uid map/i,
  /unshare.*(user|namespace)/i,
  /loopback: Failed RTM_NEWADDR/i,
  /Operation not permitted.*namespace|namespace.*Operation not permitted/i,
  /No space left on device|ENOSPC|namespaces exceeded/i,
];

/** Turns a failed smoke test into a problem stated in words; the raw error goes to `detail`. */
export function explainSmokeFailure(stderr: string, userns: UsernsFacts): SandboxProblem {
  const raw = stderr.trim();
  const first = raw.split('\n').find((l) => l.trim()) ?? '';
  const nsError = USERNS_ERRORS.some((re) => re.test(raw));
  if (nsError || (userns.findings.length > 0 && /^bwrap: /m.test(raw))) {
    const reasons = [...userns.findings];
    if (/ENOSPC|No space left on device|max_\w*namespaces exceeded/i.test(raw)) {
      reasons.push('No user namespace is left to create: user.max_user_namespaces is used up or zero, or an enclosing namespace disabled nesting.');
    }
    if (userns.insideUserNamespace) reasons.push('comis itself runs inside a user namespace (a container, most likely) that does not let it create nested ones.');
    if (reasons.length === 0) reasons.push('The kernel refused to create a user namespace for bubblewrap.');
    const why = reasons.join(' ');
    const hint =
      userns.hint ??
      (userns.insideUserNamespace
        ? 'Run comis on the host, or start the container with nested user namespaces allowed (e.g. docker run --security-opt seccomp=unconfined --security-opt apparmor=unconfined, or podman run --userns=auto).'
        : 'Allow unprivileged user namespaces for bubblewrap (sysctl -w user.max_user_namespaces=15000; on Ubuntu 24.04+ install the bwrap-userns-restrict AppArmor profile).');
    return {
      code: 'USERNS_RESTRICTED',
      message: `User namespaces are restricted on this machine, so bubblewrap cannot build the jail. ${why}`,
      hint,
      detail: raw,
    };
  }
  return {
    code: 'SMOKE_FAILED',
    message: `bubblewrap is installed but could not run a program in the hardened jail${first ? `: ${first}` : '.'}`,
    hint: 'Run `comis jail probe --json` for the full error; check that bubblewrap 0.8.0 or newer works on this kernel.',
    detail: raw,
  };
}

/** Parses `bubblewrap 0.8.0` into [0, 8, 0]. */
export function parseBwrapVersion(text: string): [number, number, number] | undefined {
  const m = /(\d+)\.(\d+)(?:\.(\d+))?/.exec(text);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)] : undefined;
}

function versionAtLeast(v: readonly number[], min: readonly number[]): boolean {
  for (let i = 0; i < min.length; i++) {
    if ((v[i] ?? 0) !== min[i]) return (v[i] ?? 0) > min[i]!;
  }
  return true;
}

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
  const pid = lines.find((l) => l.startsWith('pid '))?.slice(4).trim();
  const ifaces = lines
    .filter((l) => l.startsWith('netdev '))
    .map((l) => l.slice(7))
    .filter((l) => l.includes(':') && !/[|]/.test(l))
    .map((l) => l.split(':')[0]!.trim());
  const has = (l: string): boolean => lines.includes(l);
  const inodes = lines.find((l) => l.startsWith('tmpinodes '))?.slice(10).trim().split(/\s+/).map(Number) ?? [];
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
function smokeTest(tools: JailTools, arch: SeccompArch): { checks?: SmokeCheck[]; stderr: string; code: number | null } {
  const scratch = mkdtempSync(join(tmpdir(), 'comis-probe-'));
  try {
    const root = isRoot();
    const launch = prepareLaunch(
      {
        command: ['/bin/sh', '-c', SMOKE_SCRIPT],
        mounts: [{ kind: 'rw', source: scratch, target: SMOKE_WORKSPACE }],
        cwd: SMOKE_WORKSPACE,
        env: { PATH: '/usr/bin:/bin' },
        limits: DEFAULT_JAIL_LIMITS,
        // The same supervisor real runs get, so the smoke test proves that chain starts too.
        deadlineMs: 20_000,
      },
      tools,
      arch,
    );
    if (root) prepareWritableDir(scratch, launch.hostUid);
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

function runSmoke(tools: JailTools, arch: SeccompArch): ReturnType<typeof smokeTest> {
  try {
    return smokeTest(tools, arch);
  } catch (err) {
    return { stderr: (err as Error).message, code: null };
  }
}

/** What a detection found: the public answer plus what the spawner needs. */
export interface Detection {
  info: SandboxProviderInfo;
  tools?: JailTools;
  arch?: SeccompArch;
  userns?: UsernsFacts;
}

/** The host tools and seccomp architecture of a working bubblewrap. */
export interface WorkingJail {
  tools: JailTools;
  arch: SeccompArch;
}

let cached: Detection | undefined;

/**
 * Detects the sandbox provider without caching, with injectable PATH,
 * sysctl root and platform (for `comis jail probe` and tests).
 */
export function detectSandboxProviderFresh(opts: DetectOptions = {}): Detection {
  const platform = opts.platform ?? process.platform;
  if (platform === 'darwin') {
    const binary = findOnPath('sandbox-exec', opts.pathEnv);
    if (!binary) {
      return { info: { provider: 'none', problem: { code: 'PLATFORM_UNSUPPORTED', message: 'No sandbox provider: sandbox-exec is not on PATH, and orchestrate needs bubblewrap anyway.', hint: 'Run comis orchestrate on Linux with bubblewrap installed.' } } };
    }
    return {
      info: {
        provider: 'sandbox-exec',
        binary,
        problem: {
          code: 'SANDBOX_EXEC_ONLY',
          message: 'Only sandbox-exec (macOS, deprecated, best effort) is available; comis runs scripts only in a bubblewrap jail with no network, so orchestrate refuses here.',
          hint: 'Run comis orchestrate on Linux (a VM or container with bubblewrap works).',
        },
      },
    };
  }
  if (platform !== 'linux') {
    return { info: { provider: 'none', problem: { code: 'PLATFORM_UNSUPPORTED', message: `No sandbox provider for ${platform}: comis jails scripts with bubblewrap, which is Linux only.`, hint: 'Run comis orchestrate on Linux with bubblewrap installed.' } } };
  }
  const bwrap = findOnPath('bwrap', opts.pathEnv);
  if (!bwrap) {
    return { info: { provider: 'none', problem: { code: 'BWRAP_MISSING', message: 'No sandbox provider: bubblewrap (bwrap) is not on PATH.', hint: INSTALL_BWRAP_HINT } } };
  }
  const root = isRoot();
  const base: SandboxProviderInfo = { provider: 'bwrap', binary: bwrap };
  const ver = spawnSync(bwrap, ['--version'], { env: {}, encoding: 'utf8', timeout: 10_000 });
  const parsed = parseBwrapVersion(ver.stdout ?? '');
  if (ver.status !== 0 || !parsed) {
    return { info: { ...base, problem: { code: 'SMOKE_FAILED', message: `${bwrap} --version did not answer${ver.error ? ` (${ver.error.message})` : ''}.`, hint: `Reinstall bubblewrap. ${INSTALL_BWRAP_HINT}`, detail: `${ver.stdout ?? ''}${ver.stderr ?? ''}` } } };
  }
  base.version = parsed.join('.');
  if (!versionAtLeast(parsed, MIN_BWRAP_VERSION)) {
    return {
      info: {
        ...base,
        problem: { code: 'BWRAP_TOO_OLD', message: `bubblewrap ${base.version} is too old: the jail needs ${MIN_BWRAP_VERSION.join('.')} or newer (--disable-userns, --size).`, hint: `Upgrade bubblewrap (Debian 12+, Ubuntu 24.04+ and Fedora 38+ ship 0.8.0 or newer). ${INSTALL_BWRAP_HINT}` },
      },
    };
  }
  const arch = hostSeccompArch();
  if (!arch) {
    return { info: { ...base, problem: { code: 'ARCH_UNSUPPORTED', message: `The jail's seccomp filter supports x86_64 and aarch64, not ${process.arch}.`, hint: 'Run comis on an x86_64 or aarch64 machine.' } } };
  }
  // Real path: not root, the same prlimit also runs inside the jail, where only /usr is bound.
  const prlimitOnPath = findHelper('prlimit', opts.pathEnv);
  const prlimit = prlimitOnPath ? realpathSync(prlimitOnPath) : undefined;
  const tools: JailTools = { bwrap, prlimit: prlimit ?? '' };
  const missing: string[] = prlimit ? [] : ['prlimit'];
  // The deadline supervisor: setpriv (its parent-death signal; as root also the uid drop) and coreutils timeout.
  const setpriv = findHelper('setpriv', opts.pathEnv);
  if (setpriv) tools.setpriv = setpriv;
  else missing.push('setpriv');
  const timeout = findHelper('timeout', opts.pathEnv);
  if (timeout) tools.timeout = timeout;
  else missing.push('timeout (coreutils)');
  {
    const unshare = findHelper('unshare', opts.pathEnv);
    const mount = findHelper('mount', opts.pathEnv);
    const sh = findHelper('sh', opts.pathEnv);
    if (unshare) tools.unshare = unshare;
    else if (root) missing.push('unshare');
    if (mount) tools.mount = mount;
    else if (root) missing.push('mount');
    if (sh) tools.sh = sh;
    else if (root) missing.push('sh');
    // The inode-bounded tmpfs: always as root (the stager is there anyway);
    // not root, tried below and kept only if the smoke test passes with it.
    if (unshare && mount && sh) tools.tmpfsMount = root ? 'stage' : 'userns';
  }
  base.mode = { root, ...(tools.setpriv ? { setpriv: tools.setpriv } : {}), ...(prlimit ? { prlimit } : {}) };
  if (missing.length > 0) {
    return {
      info: {
        ...base,
        problem: {
          code: 'HELPER_MISSING',
          message: `The jail needs ${missing.join(', ')} (util-linux)${root ? ': comis runs as root and must set limits and drop to an unprivileged uid before bubblewrap' : ' to set its resource limits and enforce its deadline'}.`,
          hint: 'Install util-linux, mount and coreutils: apt-get install util-linux mount coreutils (dnf install util-linux coreutils).',
        },
      },
    };
  }
  const userns = readUsernsFacts(opts.sysctlRoot);
  let smoke = runSmoke(tools, arch);
  if (!root && tools.tmpfsMount && (!smoke.checks || smoke.checks.some((c) => !c.ok))) {
    // Some hosts (AppArmor's restrict_unprivileged_userns) let bubblewrap
    // make a user namespace but not `unshare`: jail without the inode bound
    // rather than not at all, and say so (an advisory check).
    delete tools.tmpfsMount;
    smoke = runSmoke(tools, arch);
  }
  if (!smoke.checks) return { info: { ...base, problem: explainSmokeFailure(smoke.stderr, userns) }, tools, arch, userns };
  const failed = smoke.checks.filter((c) => !c.ok && !c.advisory);
  if (failed.length > 0) {
    return {
      info: {
        ...base,
        checks: smoke.checks,
        problem: {
          code: 'SMOKE_FAILED',
          message: `The jail started but is not hardened as required: ${failed.map((c) => `${c.name} (${c.detail})`).join('; ')}.`,
          hint: 'Do not run untrusted scripts here. Check the bubblewrap version and kernel; run `comis jail probe --json` for details.',
        },
      },
      tools,
      arch,
      userns,
    };
  }
  return { info: { ...base, checks: smoke.checks }, tools, arch, userns };
}

/**
 * The sandbox provider of this machine, detected once per process (binary
 * probe + smoke test of the real jail) and cached.
 *
 * Contract: `provider` is 'bwrap' on Linux with bubblewrap on PATH,
 * 'sandbox-exec' on macOS when present, 'none' otherwise; `problem` is set
 * whenever the jail cannot be used, with a message in words and an install
 * or fix hint. Security property: callers must refuse to run a script when
 * `provider !== 'bwrap' || problem` — there is no unjailed fallback.
 */
export function detectSandboxProvider(options: { cacheFile?: string } = {}): SandboxProviderInfo {
  if (!cached && options.cacheFile) cached = readCachedDetection(options.cacheFile);
  if (!cached) {
    cached = detectSandboxProviderFresh();
    if (options.cacheFile && !cached.info.problem) writeCachedDetection(options.cacheFile, cached);
  }
  return cached.info;
}

/** A verified detection is trusted for this long before the smoke test runs again. */
export const DETECTION_CACHE_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * What must be unchanged for a cached detection to stand: the binaries
 * (path, inode, size, mtime), the kernel, who we run as, and the user
 * namespace sysctls. Anything else changing re-runs the smoke test.
 */
function detectionFingerprint(): string | undefined {
  const bwrap = findOnPath('bwrap');
  if (!bwrap) return undefined;
  const files = [bwrap, findHelper('prlimit'), findHelper('setpriv'), findHelper('timeout'), findHelper('unshare'), findHelper('mount'), findHelper('sh')].map((f) => {
    if (!f) return '-';
    try {
      const st = statSync(f);
      return `${f}:${st.ino}:${st.size}:${st.mtimeMs}`;
    } catch {
      return `${f}:?`;
    }
  });
  return JSON.stringify({ v: 3, files, kernel: release(), arch: process.arch, euid: process.geteuid?.(), userns: readUsernsFacts() });
}

/**
 * Reads a cached *working* detection, so that a CLI invocation does not pay
 * for the smoke test each time. Only successes are cached; a stale or
 * mismatched entry is ignored. The jail's flags are applied in full on every
 * spawn either way, and bubblewrap fails loudly when one cannot be.
 */
function readCachedDetection(file: string): Detection | undefined {
  try {
    const entry = JSON.parse(readFileSync(file, 'utf8')) as { fingerprint: string; at: number; detection: Detection };
    if (Date.now() - entry.at > DETECTION_CACHE_TTL_MS || entry.at > Date.now()) return undefined;
    if (entry.fingerprint !== detectionFingerprint()) return undefined;
    if (entry.detection.info.problem || !entry.detection.tools || !entry.detection.arch) return undefined;
    return entry.detection;
  } catch {
    return undefined;
  }
}

function writeCachedDetection(file: string, detection: Detection): void {
  const fingerprint = detectionFingerprint();
  if (!fingerprint) return;
  try {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    const temp = `${file}.${process.pid}.tmp`;
    writeFileSync(temp, JSON.stringify({ fingerprint, at: Date.now(), detection }), { mode: 0o600 });
    chmodSync(temp, 0o600);
    renameSync(temp, file);
  } catch {
    /* a cache that cannot be written only costs the next run a smoke test */
  }
}

/** The tools and architecture of the cached detection, when it found a working bubblewrap. */
export function workingJail(): WorkingJail | undefined {
  const d = cached ?? (detectSandboxProvider(), cached);
  if (!d || d.info.problem || !d.tools || !d.arch) return undefined;
  return { tools: d.tools, arch: d.arch };
}

/** Forgets the cached detection (tests; a long-lived process after the user installed bubblewrap). */
export function resetSandboxProviderCache(): void {
  cached = undefined;
}
