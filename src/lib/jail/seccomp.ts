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
 * Three argument rules close what namespaces and rlimits leave open:
 * - Socket families are ALLOW-listed: `socket`/`socketpair` for AF_UNIX,
 *   AF_INET and AF_INET6 (an empty network namespace holds only `lo`), and
 *   AF_NETLINK only with NETLINK_ROUTE (getifaddrs). Every other family gets
 *   EAFNOSUPPORT, as if the kernel lacked it: AF_VSOCK lives in the
 *   machine-wide vsock space outside any network namespace (on a VM, the
 *   hypervisor channel), AF_PACKET/AF_ALG/AF_KEY/AF_XDP/AF_TIPC/AF_CAN/
 *   AF_BLUETOOTH… are kernel surface nothing jailed needs. (AF_INET,
 *   SOCK_PACKET) is refused too: the kernel silently turns it into AF_PACKET.
 *   `socketcall` does not exist on the x86_64 and aarch64 native ABIs; the
 *   ABIs that have it (i386, arm32 compat) are denied outright (below).
 * - `fallocate` with any mode but 0 gets EOPNOTSUPP: FALLOC_FL_KEEP_SIZE and
 *   friends allocate blocks without growing the file, past RLIMIT_FSIZE.
 *   Mode 0 stays (posix_fallocate; the kernel checks RLIMIT_FSIZE there, and
 *   glibc falls back to writing when it is refused).
 * - No set-user-ID or set-group-ID file can be made: chmod, fchmod, fchmodat
 *   and fchmodat2 with S_ISUID or S_ISGID in the mode, and open/openat/creat
 *   (O_CREAT or O_TMPFILE) or mknod/mknodat creating with them, get EPERM. A
 *   setuid copy of an interpreter in the workspace would hand the jail's uid
 *   (or, not root, the operator's) to any local user who runs it. `openat2`
 *   carries its mode in memory the filter cannot read, so it gets ENOSYS and
 *   callers fall back to openat (glibc, Python and libuv never use it).
 *
 * Security properties:
 * - Denied calls return EPERM, never kill, so a script sees an ordinary error.
 *   `clone3` returns ENOSYS instead: its flags live in memory a filter cannot
 *   read, and ENOSYS makes glibc fall back to `clone`, whose flags it can.
 * - The architecture is checked first; a syscall made through another ABI
 *   (i386 `int 0x80` on x86_64, or any arch the filter was not built for) is
 *   denied outright, as is the x32 ABI (nr >= 0x40000000) on x86_64, because
 *   their numbers mean different calls and would slip past the table.
 * - ioctl commands and flags, socket families, fallocate modes, open flags
 *   and file modes are compared on their low 32 bits only: the kernel takes
 *   them as `int`/`umode_t` and truncates, so `0x5412 | 1 << 32` is TIOCSTI
 *   and `AF_VSOCK | 1 << 32` is AF_VSOCK.
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
const EOPNOTSUPP = 95;
const EAFNOSUPPORT = 97;
export const RET_ALLOW = SECCOMP_RET_ALLOW;
export const RET_EPERM = SECCOMP_RET_ERRNO | EPERM;
export const RET_ENOSYS = SECCOMP_RET_ERRNO | ENOSYS;
export const RET_EOPNOTSUPP = SECCOMP_RET_ERRNO | EOPNOTSUPP;
export const RET_EAFNOSUPPORT = SECCOMP_RET_ERRNO | EAFNOSUPPORT;

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

/** Socket families a jail may create (AF_NETLINK further limited to {@link NETLINK_ROUTE}). */
export const AF = { UNIX: 1, INET: 2, INET6: 10, NETLINK: 16 } as const;
export const NETLINK_ROUTE = 0;
/** The type the kernel turns into AF_PACKET under AF_INET; compared after masking SOCK_NONBLOCK/SOCK_CLOEXEC off. */
const SOCK_PACKET = 10;
const SOCK_TYPE_MASK = 0xf;

/** open flags that make the kernel use the mode argument (same values on x86_64 and aarch64). */
export const O_CREAT = 0o100;
export const O_TMPFILE_BIT = 0o20000000; // __O_TMPFILE, without the O_DIRECTORY that O_TMPFILE also carries
/** S_ISUID | S_ISGID. */
export const SETID_BITS = 0o6000;

/** `which` of setpriority/getpriority and ioprio_set/ioprio_get that names a process group (`who` 0: the caller's). */
export const PRIO_PGRP = 1;
export const IOPRIO_WHO_PGRP = 2;

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
  // Allowed with conditions on their arguments (the first four only in a jail that shares our session):
  kill: [62, 129],
  setpriority: [141, 140],
  getpriority: [140, 141],
  ioprio_set: [251, 30],
  ioprio_get: [252, 31],
  socket: [41, 198],
  socketpair: [53, 199],
  fallocate: [285, 47],
  chmod: [90, null],
  fchmod: [91, 52],
  fchmodat: [268, 53],
  fchmodat2: [452, 452],
  open: [2, null],
  openat: [257, 56],
  creat: [85, null],
  mknod: [133, null],
  mknodat: [259, 33],
  openat2: [437, 437],
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

/** Calls whose arguments decide (or, for clone3 and openat2, that always get ENOSYS). */
const CONDITIONAL: ReadonlySet<SyscallName> = new Set<SyscallName>([
  'ioctl',
  'clone',
  'clone3',
  'personality',
  'kill',
  'setpriority',
  'getpriority',
  'ioprio_set',
  'ioprio_get',
  'socket',
  'socketpair',
  'fallocate',
  'chmod',
  'fchmod',
  'fchmodat',
  'fchmodat2',
  'open',
  'openat',
  'creat',
  'mknod',
  'mknodat',
  'openat2',
]);

/** The calls that always get EPERM. */
export const DENIED_SYSCALLS: readonly SyscallName[] = (Object.keys(SYSCALLS) as SyscallName[]).filter((n) => !CONDITIONAL.has(n));

/**
 * Rules a TEST may switch off to build the positive control of an attack (the
 * same jail with exactly one protection missing). Never used by comis itself;
 * the jail builder refuses it outside the test runner.
 * - `socket-families`: socket/socketpair allowed for every family.
 * - `fallocate-modes`: fallocate allowed with every mode.
 * - `setid-modes`: chmod family, open/creat and mknod allowed with S_ISUID/S_ISGID; openat2 allowed.
 * - `namespaces`: unshare, setns and clone with namespace flags allowed (to test `--disable-userns` alone).
 * - `denylist`: every call of {@link DENIED_SYSCALLS} allowed (what each probe gets from the kernel itself).
 * - `process-groups`: kill(0, …) and the PGRP-0 priority calls allowed in a jail that shares our session.
 */
export type SeccompRule = 'socket-families' | 'fallocate-modes' | 'setid-modes' | 'namespaces' | 'denylist' | 'process-groups';
export const SECCOMP_RULES: readonly SeccompRule[] = ['socket-families', 'fallocate-modes', 'setid-modes', 'namespaces', 'denylist', 'process-groups'];

export interface SeccompOptions {
  /** Test-only: rules left out (see {@link SeccompRule}). */
  omit?: readonly SeccompRule[];
  /**
   * The jail stays in comis's session (no bubblewrap `--new-session`, see plan.ts): its process
   * group is then the deadline supervisor's, outside the jail's pid namespace, and the calls that
   * take "0" to mean the caller's own group would reach `timeout` and bubblewrap (the only calls
   * that do: a group named by number is looked up in the jail's pid namespace, and kill(-1) skips
   * processes invisible there). kill(0, …) gets EPERM, and so do setpriority/getpriority
   * (PRIO_PGRP, 0) and ioprio_set/ioprio_get (IOPRIO_WHO_PGRP, 0). Without it a script could SIGSTOP
   * its supervisor (the deadline would then wait for comis's own timer) or SIGKILL bubblewrap,
   * which `timeout` passes on as its own SIGKILL: a forged `deadline`.
   */
  sharedSession?: boolean;
}

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
export function seccompProgram(arch: SeccompArch, opts: SeccompOptions = {}): Instruction[] {
  const omit = new Set(opts.omit ?? []);
  /** Dispatch `name` to `label` when it exists on this architecture (chmod, open, creat, mknod are x86_64 only). */
  const dispatch = (name: SyscallName, label: string): Instruction[] => {
    const n = syscallNumber(name, arch);
    return n === undefined ? [] : [{ op: 'jeq', k: n, jt: label, jf: NEXT }];
  };
  const p: Instruction[] = [
    { op: 'ld', offset: DATA_ARCH },
    { op: 'jeq', k: AUDIT_ARCH[arch], jt: NEXT, jf: 'deny' },
    { op: 'ld', offset: DATA_NR },
  ];
  if (arch === 'x64') p.push({ op: 'jge', k: X32_SYSCALL_BIT, jt: 'deny', jf: NEXT });
  p.push(...dispatch('ioctl', 'ioctl'), ...dispatch('personality', 'personality'), ...dispatch('clone3', 'enosys'));
  if (!omit.has('namespaces')) p.push(...dispatch('clone', 'clone'));
  const groups = opts.sharedSession === true && !omit.has('process-groups');
  if (groups) {
    p.push(...dispatch('kill', 'kill'), ...dispatch('setpriority', 'prio_pgrp'), ...dispatch('getpriority', 'prio_pgrp'), ...dispatch('ioprio_set', 'ioprio_pgrp'), ...dispatch('ioprio_get', 'ioprio_pgrp'));
  }
  if (!omit.has('socket-families')) p.push(...dispatch('socket', 'socket'), ...dispatch('socketpair', 'socket'));
  if (!omit.has('fallocate-modes')) p.push(...dispatch('fallocate', 'fallocate'));
  if (!omit.has('setid-modes')) {
    p.push(
      ...dispatch('chmod', 'mode_arg1'),
      ...dispatch('fchmod', 'mode_arg1'),
      ...dispatch('creat', 'mode_arg1'),
      ...dispatch('mknod', 'mode_arg1'),
      ...dispatch('fchmodat', 'mode_arg2'),
      ...dispatch('fchmodat2', 'mode_arg2'),
      ...dispatch('mknodat', 'mode_arg2'),
      ...dispatch('open', 'open'),
      ...dispatch('openat', 'openat'),
      ...dispatch('openat2', 'enosys'),
    );
  }
  const denied = omit.has('denylist') ? [] : DENIED_SYSCALLS.filter((n) => !(omit.has('namespaces') && (n === 'unshare' || n === 'setns')));
  const numbers = [...new Set(denied.map((n) => syscallNumber(n, arch)).filter((n): n is number => n !== undefined))].sort((a, b) => a - b);
  for (const n of numbers) p.push({ op: 'jeq', k: n, jt: 'deny', jf: NEXT });
  p.push(
    { op: 'ret', k: RET_ALLOW },
    // ioctl(fd, cmd, ...): the kernel truncates cmd to 32 bits, so compare the low word only.
    { op: 'label', name: 'ioctl' },
    { op: 'ld', offset: argLow(1) },
    { op: 'jeq', k: TIOCSTI, jt: 'deny', jf: NEXT },
    { op: 'jeq', k: TIOCLINUX, jt: 'deny', jf: NEXT },
    { op: 'ret', k: RET_ALLOW },
    ...(groups
      ? ([
          // kill(pid, sig): pid is a pid_t, so the low word; 0 is the caller's process group.
          { op: 'label', name: 'kill' },
          { op: 'ld', offset: argLow(0) },
          { op: 'jeq', k: 0, jt: 'deny', jf: 'allow' },
          // setpriority/getpriority(which, who, …) and ioprio_set/ioprio_get(which, who, …): a group, who 0.
          { op: 'label', name: 'prio_pgrp' },
          { op: 'ld', offset: argLow(0) },
          { op: 'jeq', k: PRIO_PGRP, jt: 'who_zero', jf: 'allow' },
          { op: 'label', name: 'ioprio_pgrp' },
          { op: 'ld', offset: argLow(0) },
          { op: 'jeq', k: IOPRIO_WHO_PGRP, jt: 'who_zero', jf: 'allow' },
          { op: 'label', name: 'who_zero' },
          { op: 'ld', offset: argLow(1) },
          { op: 'jeq', k: 0, jt: 'deny', jf: 'allow' },
        ] satisfies Instruction[])
      : []),
    // clone(flags, ...): legacy clone also uses only the low 32 bits of flags.
    { op: 'label', name: 'clone' },
    { op: 'ld', offset: argLow(0) },
    { op: 'jset', k: CLONE_NAMESPACE_FLAGS, jt: 'deny', jf: NEXT },
    { op: 'ret', k: RET_ALLOW },
    // socket/socketpair(domain, type, protocol): an allow-list of families, everything else "not supported".
    { op: 'label', name: 'socket' },
    { op: 'ld', offset: argLow(0) },
    { op: 'jeq', k: AF.UNIX, jt: 'allow', jf: NEXT },
    { op: 'jeq', k: AF.INET6, jt: 'allow', jf: NEXT },
    { op: 'jeq', k: AF.INET, jt: 'socket_inet', jf: NEXT },
    { op: 'jeq', k: AF.NETLINK, jt: 'socket_netlink', jf: 'eafnosupport' },
    { op: 'label', name: 'socket_inet' },
    { op: 'ld', offset: argLow(1) },
    { op: 'and', k: SOCK_TYPE_MASK },
    { op: 'jeq', k: SOCK_PACKET, jt: 'eafnosupport', jf: 'allow' },
    { op: 'label', name: 'socket_netlink' },
    { op: 'ld', offset: argLow(2) },
    { op: 'jeq', k: NETLINK_ROUTE, jt: 'allow', jf: 'eafnosupport' },
    // fallocate(fd, mode, offset, len): only mode 0, the one that grows the file under RLIMIT_FSIZE.
    { op: 'label', name: 'fallocate' },
    { op: 'ld', offset: argLow(1) },
    { op: 'jeq', k: 0, jt: 'allow', jf: 'eopnotsupp' },
    // open(path, flags, mode) and openat(dirfd, path, flags, mode): the mode counts only when the call creates.
    { op: 'label', name: 'open' },
    { op: 'ld', offset: argLow(1) },
    { op: 'jset', k: O_CREAT | O_TMPFILE_BIT, jt: 'mode_arg2', jf: 'allow' },
    { op: 'label', name: 'openat' },
    { op: 'ld', offset: argLow(2) },
    { op: 'jset', k: O_CREAT | O_TMPFILE_BIT, jt: 'mode_arg3', jf: 'allow' },
    // chmod/fchmod(x, mode), creat(path, mode), mknod(path, mode, dev): no S_ISUID/S_ISGID.
    { op: 'label', name: 'mode_arg1' },
    { op: 'ld', offset: argLow(1) },
    { op: 'jset', k: SETID_BITS, jt: 'deny', jf: 'allow' },
    // fchmodat/fchmodat2(dirfd, path, mode, ...), mknodat(dirfd, path, mode, dev), open's mode.
    { op: 'label', name: 'mode_arg2' },
    { op: 'ld', offset: argLow(2) },
    { op: 'jset', k: SETID_BITS, jt: 'deny', jf: 'allow' },
    // openat's mode.
    { op: 'label', name: 'mode_arg3' },
    { op: 'ld', offset: argLow(3) },
    { op: 'jset', k: SETID_BITS, jt: 'deny', jf: 'allow' },
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
    { op: 'label', name: 'eafnosupport' },
    { op: 'ret', k: RET_EAFNOSUPPORT },
    { op: 'label', name: 'eopnotsupp' },
    { op: 'ret', k: RET_EOPNOTSUPP },
  );
  return p;
}

/**
 * The filter bytes (`struct sock_filter[]`) for `arch`, ready for
 * `bwrap --seccomp FD`. Throws when the architecture is not supported: the
 * caller must then refuse to build a jail rather than run one unfiltered.
 */
export function buildSeccompFilter(arch: SeccompArch, opts: SeccompOptions = {}): Buffer {
  // Built and assembled once per (arch, session, omitted rules) and process: ~1 ms of
  // the event loop per jail otherwise (the filter is the same for every jail).
  // Each caller gets its own copy, so nothing it does to its Buffer can change
  // the next jail's filter.
  const key = `${arch}:${opts.sharedSession === true ? 'shared' : 'own'}:${[...new Set(opts.omit ?? [])].sort().join(',')}`;
  let bytes = filterCache.get(key);
  if (!bytes) {
    bytes = assemble(seccompProgram(arch, opts));
    filterCache.set(key, bytes);
  }
  return Buffer.from(bytes);
}

/** Assembled filters by arch, session and omitted rules; a handful of keys at most (the omit sets are test-only). */
const filterCache = new Map<string, Buffer>();
