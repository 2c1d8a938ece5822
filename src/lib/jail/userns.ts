/**
 * User-namespace diagnosis: which sysctls of this kernel restrict the user
 * namespaces bubblewrap needs, and how a failed smoke test reads in words.
 *
 * Known failures it explains: AppArmor
 * `apparmor_restrict_unprivileged_userns=1` on Ubuntu 24.04+,
 * `kernel.unprivileged_userns_clone=0`, `user.max_user_namespaces=0`, a
 * container that forbids nested namespaces. As root comis drops to an
 * unprivileged uid before bubblewrap, so these restrictions apply to root too.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import type { SandboxProblem } from './types.js';

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
    add('The kernel forbids unprivileged user namespaces (kernel.unprivileged_userns_clone=0).', 'Enable them: sysctl -w kernel.unprivileged_userns_clone=1 (persist it in /etc/sysctl.d/).');
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
