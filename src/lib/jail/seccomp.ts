/**
 * The seccomp filter every jail gets, generated here in TypeScript (no native
 * build, no libseccomp) and handed to bubblewrap with `--seccomp FD`.
 *
 * It is a denylist on top of bubblewrap's namespaces, dropped capabilities and
 * no_new_privs: it closes kernel surfaces that are reachable WITHOUT any
 * capability and have a history of privilege escalations or terminal
 * injection (TIOCSTI/TIOCLINUX, ptrace and process_vm_*, the key ring, bpf,
 * perf, userfaultfd, io_uring, the new mount API, namespaces, personality
 * flags that turn off ASLR), and the calls that need a capability the jail
 * never has (mount, modules, kexec, reboot, swap, acct) as defence in depth.
 *
 * Security properties:
 * - Denied calls return EPERM, never kill, so a script sees an ordinary error.
 *   `clone3` returns ENOSYS instead: its flags live in memory a filter cannot
 *   read, and ENOSYS makes glibc fall back to `clone`, whose flags it can.
 * - The architecture is checked first; a syscall made through another ABI
 *   (i386 `int 0x80` on x86_64, or any arch the filter was not built for) is
 *   denied outright, as is the x32 ABI (nr >= 0x40000000) on x86_64, because
 *   their numbers mean different calls and would slip past the table.
 * - ioctl commands and flags are compared on their low 32 bits only: the
 *   kernel truncates them to 32 bits, so `0x5412 | 1 << 32` is TIOCSTI too.
 */
import { NEXT, assemble, type Instruction } from './bpf.js';

export type SeccompArch = 'x64' | 'arm64';

/** `AUDIT_ARCH_*` values seen in `seccomp_data.arch`. */
export const AUDIT_ARCH = { x64: 0xc000003e, arm64: 0xc00000b7 } as const;

/** Offsets into `struct seccomp_data` (nr, arch, ip, args[6]); args are u64, low word first on little-endian. */
const DATA_NR = 0;
const DATA_ARCH = 4;
const argLow = (i: number): number => 16 + 8 * i;

const SECCOMP_RET_ALLOW = 0x7fff_0000;
const SECCOMP_RET_ERRNO = 0x0005_0000;
const EPERM = 1;
const ENOSYS = 38;
export const RET_ALLOW = SECCOMP_RET_ALLOW;
export const RET_EPERM = SECCOMP_RET_ERRNO | EPERM;
export const RET_ENOSYS = SECCOMP_RET_ERRNO | ENOSYS;

/** The x32 ABI marks its syscall numbers with this bit on x86_64. */
export const X32_SYSCALL_BIT = 0x4000_0000;

export const TIOCSTI = 0x5412;
export const TIOCLINUX = 0x541c;

/** clone() flags that create namespaces (CLONE_NEWTIME overlaps CSIGNAL in clone(), so only unshare/clone3 take it). */
export const CLONE_NAMESPACE_FLAGS =
  0x0002_0000 | // CLONE_NEWNS
  0x0200_0000 | // CLONE_NEWCGROUP
  0x0400_0000 | // CLONE_NEWUTS
  0x0800_0000 | // CLONE_NEWIPC
  0x1000_0000 | // CLONE_NEWUSER
  0x2000_0000 | // CLONE_NEWPID
  0x4000_0000; // CLONE_NEWNET

/** personality() arguments that change nothing: PER_LINUX and the 0xffffffff query. */
const PERSONALITY_ALLOWED = [0x0, 0xffff_ffff];

/**
 * Syscall numbers per architecture (x86_64 from asm/unistd_64.h, aarch64 from
 * asm-generic/unistd.h). `null` means the call does not exist there.
 */
const SYSCALLS = {
  ioctl: [16, 29],
  clone: [56, 220],
  clone3: [435, 435],
  personality: [135, 92],
  // Denied outright:
  ptrace: [101, 117],
  process_vm_readv: [310, 270],
  process_vm_writev: [311, 271],
  pidfd_getfd: [438, 438],
  process_madvise: [440, 440],
  kcmp: [312, 272],
  keyctl: [250, 219],
  add_key: [248, 217],
  request_key: [249, 218],
  bpf: [321, 280],
  perf_event_open: [298, 241],
  userfaultfd: [323, 282],
  io_uring_setup: [425, 425],
  io_uring_enter: [426, 426],
  io_uring_register: [427, 427],
  mount: [165, 40],
  umount2: [166, 39],
  pivot_root: [155, 41],
  chroot: [161, 51],
  move_mount: [429, 429],
  open_tree: [428, 428],
  fsopen: [430, 430],
  fsconfig: [431, 431],
  fsmount: [432, 432],
  fspick: [433, 433],
  mount_setattr: [442, 442],
  kexec_load: [246, 104],
  kexec_file_load: [320, 294],
  init_module: [175, 105],
  finit_module: [313, 273],
  delete_module: [176, 106],
  unshare: [272, 97],
  setns: [308, 268],
  acct: [163, 89],
  swapon: [167, 224],
  swapoff: [168, 225],
  reboot: [169, 142],
  open_by_handle_at: [304, 265],
  name_to_handle_at: [303, 264],
  syslog: [103, 116],
  quotactl: [179, 60],
  quotactl_fd: [443, 443],
  lookup_dcookie: [212, 18],
  fanotify_init: [300, 262],
  vhangup: [153, 58],
  settimeofday: [164, 170],
  clock_settime: [227, 112],
  sethostname: [170, 161],
  setdomainname: [171, 162],
  iopl: [172, null],
  ioperm: [173, null],
  uselib: [134, null],
  create_module: [174, null],
  get_kernel_syms: [177, null],
  query_module: [178, null],
  nfsservctl: [180, 42],
} as const satisfies Record<string, readonly [number, number | null]>;

export type SyscallName = keyof typeof SYSCALLS;

/** The calls that always get EPERM (the conditional ones are ioctl, clone, clone3 and personality). */
export const DENIED_SYSCALLS: readonly SyscallName[] = (Object.keys(SYSCALLS) as SyscallName[]).filter(
  (n) => n !== 'ioctl' && n !== 'clone' && n !== 'clone3' && n !== 'personality',
);

/** The syscall number of `name` on `arch`, or undefined when it does not exist there. */
export function syscallNumber(name: SyscallName, arch: SeccompArch): number | undefined {
  const nr = SYSCALLS[name][arch === 'x64' ? 0 : 1];
  return nr ?? undefined;
}

/** The architecture of this process, when the filter supports it. */
export function hostSeccompArch(): SeccompArch | undefined {
  if (process.arch === 'x64') return 'x64';
  if (process.arch === 'arm64') return 'arm64';
  return undefined;
}

/** The filter as symbolic instructions (exported for tests and for `jail probe --verbose` style inspection). */
export function seccompProgram(arch: SeccompArch): Instruction[] {
  const nr = (name: SyscallName): number => {
    const n = syscallNumber(name, arch);
    if (n === undefined) throw new Error(`${name} does not exist on ${arch}`);
    return n;
  };
  const p: Instruction[] = [
    { op: 'ld', offset: DATA_ARCH },
    { op: 'jeq', k: AUDIT_ARCH[arch], jt: NEXT, jf: 'deny' },
    { op: 'ld', offset: DATA_NR },
  ];
  if (arch === 'x64') p.push({ op: 'jge', k: X32_SYSCALL_BIT, jt: 'deny', jf: NEXT });
  p.push(
    { op: 'jeq', k: nr('ioctl'), jt: 'ioctl', jf: NEXT },
    { op: 'jeq', k: nr('clone'), jt: 'clone', jf: NEXT },
    { op: 'jeq', k: nr('clone3'), jt: 'enosys', jf: NEXT },
    { op: 'jeq', k: nr('personality'), jt: 'personality', jf: NEXT },
  );
  const numbers = [...new Set(DENIED_SYSCALLS.map((n) => syscallNumber(n, arch)).filter((n): n is number => n !== undefined))].sort((a, b) => a - b);
  for (const n of numbers) p.push({ op: 'jeq', k: n, jt: 'deny', jf: NEXT });
  p.push(
    { op: 'ret', k: RET_ALLOW },
    // ioctl(fd, cmd, ...): the kernel truncates cmd to 32 bits, so compare the low word only.
    { op: 'label', name: 'ioctl' },
    { op: 'ld', offset: argLow(1) },
    { op: 'jeq', k: TIOCSTI, jt: 'deny', jf: NEXT },
    { op: 'jeq', k: TIOCLINUX, jt: 'deny', jf: NEXT },
    { op: 'ret', k: RET_ALLOW },
    // clone(flags, ...): legacy clone also uses only the low 32 bits of flags.
    { op: 'label', name: 'clone' },
    { op: 'ld', offset: argLow(0) },
    { op: 'jset', k: CLONE_NAMESPACE_FLAGS, jt: 'deny', jf: NEXT },
    { op: 'ret', k: RET_ALLOW },
    // personality(persona): only the no-op values; ADDR_NO_RANDOMIZE and friends are refused.
    { op: 'label', name: 'personality' },
    { op: 'ld', offset: argLow(0) },
    ...PERSONALITY_ALLOWED.map((k): Instruction => ({ op: 'jeq', k, jt: 'allow', jf: NEXT })),
    { op: 'label', name: 'deny' },
    { op: 'ret', k: RET_EPERM },
    { op: 'label', name: 'allow' },
    { op: 'ret', k: RET_ALLOW },
    { op: 'label', name: 'enosys' },
    { op: 'ret', k: RET_ENOSYS },
  );
  return p;
}

/**
 * The filter bytes (`struct sock_filter[]`) for `arch`, ready for
 * `bwrap --seccomp FD`. Throws when the architecture is not supported: the
 * caller must then refuse to build a jail rather than run one unfiltered.
 */
export function buildSeccompFilter(arch: SeccompArch): Buffer {
  return assemble(seccompProgram(arch));
}
