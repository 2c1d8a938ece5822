/**
 * Which sandbox provider this machine has, and whether it really works,
 * looked at afresh (no cache: see verdict-cache.ts and provider.ts).
 *
 * As seed 002 describes `detectSandboxProvider()`: probe the binary
 * (`bwrap --version`), find the helpers the jail is entered with, then run
 * the smoke test (smoke.ts). Unlike the seed's exec tool, orchestrate has no
 * unsandboxed fallback: a provider with a problem is kept and reported so
 * every run refuses with the same clear reason.
 */
import { spawnSync } from 'node:child_process';
import { realpathSync } from 'node:fs';

import { findHelper, findOnPath, isRoot } from './host.js';
import type { JailTools } from './plan.js';
import { hostSeccompArch, type SeccompArch } from './seccomp.js';
import { smokeTest } from './smoke.js';
import type { SandboxProviderInfo } from './types.js';
import { explainSmokeFailure, readUsernsFacts, type UsernsFacts } from './userns.js';

/** bubblewrap 0.8.0 added --disable-userns, which the jail relies on. */
export const MIN_BWRAP_VERSION = [0, 8, 0] as const;

export const INSTALL_BWRAP_HINT = 'Install bubblewrap: apt-get install bubblewrap (Debian/Ubuntu), dnf install bubblewrap (Fedora/RHEL), pacman -S bubblewrap (Arch), apk add bubblewrap (Alpine).';

export interface DetectOptions {
  /** PATH to search (default: this process's PATH). */
  pathEnv?: string;
  /** Where the kernel's sysctls are read (default /proc/sys): tests point it at a fake tree. */
  sysctlRoot?: string;
  platform?: NodeJS.Platform;
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

/**
 * Detects the sandbox provider without caching, with injectable PATH,
 * sysctl root and platform (for `comis jail probe` and tests).
 */
export function detectSandboxProviderFresh(opts: DetectOptions = {}): Detection {
  const platform = opts.platform ?? process.platform;
  if (platform === 'darwin') {
    const binary = findOnPath('sandbox-exec', opts.pathEnv);
    if (!binary) {
      return {
        info: {
          provider: 'none',
          problem: { code: 'PLATFORM_UNSUPPORTED', message: 'No sandbox provider: sandbox-exec is not on PATH, and orchestrate needs bubblewrap anyway.', hint: 'Run comis orchestrate on Linux with bubblewrap installed.' },
        },
      };
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
    return {
      info: {
        provider: 'none',
        problem: { code: 'PLATFORM_UNSUPPORTED', message: `No sandbox provider for ${platform}: comis jails scripts with bubblewrap, which is Linux only.`, hint: 'Run comis orchestrate on Linux with bubblewrap installed.' },
      },
    };
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
    return {
      info: {
        ...base,
        problem: { code: 'SMOKE_FAILED', message: `${bwrap} --version did not answer${ver.error ? ` (${ver.error.message})` : ''}.`, hint: `Reinstall bubblewrap. ${INSTALL_BWRAP_HINT}`, detail: `${ver.stdout ?? ''}${ver.stderr ?? ''}` },
      },
    };
  }
  base.version = parsed.join('.');
  if (!versionAtLeast(parsed, MIN_BWRAP_VERSION)) {
    return {
      info: {
        ...base,
        problem: {
          code: 'BWRAP_TOO_OLD',
          message: `bubblewrap ${base.version} is too old: the jail needs ${MIN_BWRAP_VERSION.join('.')} or newer (--disable-userns, --size).`,
          hint: `Upgrade bubblewrap (Debian 12+, Ubuntu 24.04+ and Fedora 38+ ship 0.8.0 or newer). ${INSTALL_BWRAP_HINT}`,
        },
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

function runSmoke(tools: JailTools, arch: SeccompArch): ReturnType<typeof smokeTest> {
  try {
    return smokeTest(tools, arch);
  } catch (err) {
    return { stderr: (err as Error).message, code: null };
  }
}
