import { beforeAll, describe, expect, it } from 'vitest';

import { buildJailPlan, planOptions } from '../../src/lib/jail/plan.js';
import { DEFAULT_JAIL_LIMITS } from '../../src/lib/jail/provider.js';

import { BPF, NEXT, assemble, decode, resolve, type SockFilter } from '../../src/lib/jail/bpf.js';
import {
  AUDIT_ARCH,
  CLONE_NAMESPACE_FLAGS,
  DENIED_SYSCALLS,
  RET_ALLOW,
  RET_EAFNOSUPPORT,
  RET_ENOSYS,
  RET_EOPNOTSUPP,
  RET_EPERM,
  SECCOMP_RULES,
  TIOCLINUX,
  TIOCSTI,
  buildSeccompFilter,
  seccompProgram,
  syscallNumber,
  type SeccompArch,
} from '../../src/lib/jail/seccomp.js';

/**
 * A classic-BPF interpreter for the instructions the filter uses, run over a
 * little-endian `struct seccomp_data`, so the filter's logic is tested on its
 * real bytes (the attack battery then proves the kernel agrees).
 */
function run(filters: SockFilter[], data: { nr: number; arch: number; args?: bigint[] }): number {
  const buf = Buffer.alloc(64);
  buf.writeInt32LE(data.nr | 0, 0);
  buf.writeUInt32LE(data.arch, 4);
  (data.args ?? []).forEach((a, i) => buf.writeBigUInt64LE(a, 16 + 8 * i));
  let acc = 0;
  for (let pc = 0, steps = 0; pc < filters.length; steps++) {
    if (steps > 10_000) throw new Error('loop');
    const f = filters[pc]!;
    switch (f.code) {
      case BPF.LD_W_ABS:
        acc = buf.readUInt32LE(f.k);
        pc++;
        break;
      case BPF.AND_K:
        acc = (acc & f.k) >>> 0;
        pc++;
        break;
      case BPF.JEQ_K:
        pc += 1 + (acc === f.k ? f.jt : f.jf);
        break;
      case BPF.JGE_K:
        pc += 1 + (acc >= f.k ? f.jt : f.jf);
        break;
      case BPF.JSET_K:
        pc += 1 + ((acc & f.k) >>> 0 !== 0 ? f.jt : f.jf);
        break;
      case BPF.JA:
        pc += 1 + f.k;
        break;
      case BPF.RET_K:
        return f.k;
      default:
        throw new Error(`unknown opcode ${f.code}`);
    }
  }
  throw new Error('fell off the end');
}

const archs: SeccompArch[] = ['x64', 'arm64'];

describe('bpf assembler', () => {
  it('encodes struct sock_filter as 8 little-endian bytes', () => {
    const bytes = assemble([
      { op: 'ld', offset: 4 },
      { op: 'jeq', k: 0xc000003e, jt: NEXT, jf: 'out' },
      { op: 'ret', k: 0x7fff0000 },
      { op: 'label', name: 'out' },
      { op: 'ret', k: 0x00050001 },
    ]);
    expect(bytes.length).toBe(32);
    expect([...bytes.subarray(0, 8)]).toEqual([0x20, 0, 0, 0, 4, 0, 0, 0]);
    expect([...bytes.subarray(8, 16)]).toEqual([0x15, 0, 0, 1, 0x3e, 0, 0, 0xc0]);
    expect(decode(bytes)[2]).toEqual({ code: 0x06, jt: 0, jf: 0, k: 0x7fff0000 });
  });

  it('refuses unknown labels, backward jumps, jumps beyond 255 and a missing final return', () => {
    expect(() =>
      resolve([
        { op: 'jeq', k: 1, jt: 'nope', jf: NEXT },
        { op: 'ret', k: 0 },
      ]),
    ).toThrow(/not defined/);
    expect(() =>
      resolve([
        { op: 'label', name: 'a' },
        { op: 'ld', offset: 0 },
        { op: 'jeq', k: 1, jt: 'a', jf: NEXT },
        { op: 'ret', k: 0 },
      ]),
    ).toThrow(/out of range/);
    const far = [{ op: 'jeq' as const, k: 1, jt: 'end', jf: NEXT }, ...Array.from({ length: 300 }, () => ({ op: 'ld' as const, offset: 0 })), { op: 'label' as const, name: 'end' }, { op: 'ret' as const, k: 0 }];
    expect(() => resolve(far)).toThrow(/out of range/);
    expect(() => resolve([{ op: 'ld', offset: 0 }])).toThrow(/end with a return/);
    expect(() =>
      resolve([
        { op: 'label', name: 'x' },
        { op: 'label', name: 'x' },
        { op: 'ret', k: 0 },
      ]),
    ).toThrow(/twice/);
  });
});

describe('bpf assembler bounds', () => {
  const ret = { op: 'ret' as const, k: 0 };
  it('constants are unsigned 32-bit integers: 0 and 0xffffffff pass, anything else is a RangeError', () => {
    expect(resolve([{ op: 'ret', k: 0xffff_ffff }])[0]!.k).toBe(0xffff_ffff);
    expect(resolve([{ op: 'ld', offset: 0 }, ret])[0]).toEqual({ code: BPF.LD_W_ABS, jt: 0, jf: 0, k: 0 });
    for (const k of [-1, 0x1_0000_0000, 1.5, Number.NaN]) {
      expect(() => resolve([{ op: 'ret', k }]), String(k)).toThrow(RangeError);
      expect(() => resolve([{ op: 'and', k }, ret]), String(k)).toThrow(`BPF constant out of range: ${k}`);
      expect(() => resolve([{ op: 'ld', offset: k }, ret]), String(k)).toThrow(RangeError);
      expect(() => resolve([{ op: 'jeq', k, jt: NEXT, jf: NEXT }, ret]), String(k)).toThrow(RangeError);
    }
  });

  it('a program has 1 to 4096 instructions', () => {
    expect(() => resolve([])).toThrow('BPF program length 0 is not in 1..4096');
    expect(() => resolve([{ op: 'label', name: 'only' }])).toThrow('BPF program length 0 is not in 1..4096');
    const many = (n: number) => [...Array.from({ length: n - 1 }, () => ({ op: 'ld' as const, offset: 0 })), ret];
    expect(resolve(many(4096))).toHaveLength(4096);
    expect(() => resolve(many(4097))).toThrow('BPF program length 4097 is not in 1..4096');
  });

  it('a conditional jump reaches exactly 255 ahead, and an unconditional one may end the program', () => {
    const reach = (n: number) => [{ op: 'jeq' as const, k: 1, jt: 'end', jf: NEXT }, ...Array.from({ length: n }, () => ({ op: 'ld' as const, offset: 0 })), { op: 'label' as const, name: 'end' }, ret];
    expect(resolve(reach(255))[0]).toEqual({ code: BPF.JEQ_K, jt: 255, jf: 0, k: 1 });
    expect(() => resolve(reach(256))).toThrow('BPF jump from 0 to end out of range (256)');
    const ja = resolve([{ op: 'label', name: 'top' }, ret, { op: 'label', name: 'tail' }, { op: 'ja', to: 'end' }, { op: 'ld', offset: 4 }, { op: 'label', name: 'end' }, { op: 'ja', to: 'after' }, { op: 'label', name: 'after' }, ret]);
    expect(ja[1]).toEqual({ code: BPF.JA, jt: 0, jf: 0, k: 1 });
    expect(ja[3]).toEqual({ code: BPF.JA, jt: 0, jf: 0, k: 0 });
    // A program may end with ja (its target is then the end), never with a conditional jump or a load.
    expect(() =>
      resolve([
        { op: 'ld', offset: 0 },
        { op: 'jeq', k: 1, jt: NEXT, jf: NEXT },
      ]),
    ).toThrow();
    expect(() =>
      resolve([
        { op: 'ld', offset: 0 },
        { op: 'and', k: 1 },
      ]),
    ).toThrow('BPF program must end with a return');
    expect(resolve([ret, { op: 'ja', to: 'end' }, { op: 'label', name: 'end' }])).toEqual([
      { code: BPF.RET_K, jt: 0, jf: 0, k: 0 },
      { code: BPF.JA, jt: 0, jf: 0, k: 0 },
    ]);
  });

  it('encodes each jump kind with its own opcode', () => {
    const out = resolve([{ op: 'jeq', k: 1, jt: NEXT, jf: NEXT }, { op: 'jge', k: 2, jt: NEXT, jf: NEXT }, { op: 'jset', k: 4, jt: NEXT, jf: NEXT }, { op: 'and', k: 8 }, ret]);
    expect(out.map((f) => f.code)).toEqual([BPF.JEQ_K, BPF.JGE_K, BPF.JSET_K, BPF.AND_K, BPF.RET_K]);
    expect(out.map((f) => f.k)).toEqual([1, 2, 4, 8, 0]);
  });

  it('decode refuses a byte length that is not whole instructions, and round-trips assemble', () => {
    expect(() => decode(Buffer.alloc(12))).toThrow('BPF byte length is not a multiple of 8');
    expect(decode(Buffer.alloc(0))).toEqual([]);
    const program = [
      { op: 'ld' as const, offset: 4 },
      { op: 'jge' as const, k: 0x8000_0000, jt: 'a', jf: NEXT },
      { op: 'ret' as const, k: 1 },
      { op: 'label' as const, name: 'a' },
      { op: 'ret' as const, k: 0xffff_ffff },
    ];
    expect(decode(assemble(program))).toEqual(resolve(program));
  });
});

describe.each(archs)('seccomp filter (%s)', (arch) => {
  // Built in beforeAll, not at collection: a filter that fails to build then fails the tests
  // (a collection error would run no test, which a mutation run counts as a survivor).
  let filters: SockFilter[] = [];
  beforeAll(() => {
    filters = decode(buildSeccompFilter(arch));
  });
  const a = AUDIT_ARCH[arch];
  const nr = (name: Parameters<typeof syscallNumber>[0]): number => syscallNumber(name, arch)!;

  it('allows ordinary syscalls (read, write, openat, execve, mmap, futex)', () => {
    const ordinary = arch === 'x64' ? [0, 1, 257, 59, 9, 202, 231] : [63, 64, 56, 221, 222, 98, 94];
    for (const n of ordinary) expect(run(filters, { nr: n, arch: a }), `nr ${n}`).toBe(RET_ALLOW);
  });

  it('denies every listed syscall with EPERM', () => {
    for (const name of DENIED_SYSCALLS) {
      const n = syscallNumber(name, arch);
      if (n === undefined) continue;
      expect(run(filters, { nr: n, arch: a }), name).toBe(RET_EPERM);
    }
    for (const must of [
      'ptrace',
      'process_vm_writev',
      'process_vm_readv',
      'keyctl',
      'add_key',
      'request_key',
      'bpf',
      'perf_event_open',
      'userfaultfd',
      'io_uring_setup',
      'io_uring_enter',
      'io_uring_register',
      'mount',
      'umount2',
      'pivot_root',
      'move_mount',
      'open_tree',
      'fsopen',
      'fsmount',
      'fsconfig',
      'fspick',
      'mount_setattr',
      'kexec_load',
      'kexec_file_load',
      'init_module',
      'finit_module',
      'delete_module',
      'unshare',
      'setns',
      'acct',
      'swapon',
      'swapoff',
      'reboot',
      'pidfd_getfd',
      'open_by_handle_at',
      'name_to_handle_at',
      'kcmp',
      'chroot',
      'process_madvise',
      'syslog',
      'quotactl',
      'fanotify_init',
      'settimeofday',
      'sethostname',
      'setdomainname',
    ] as const) {
      expect(DENIED_SYSCALLS).toContain(must);
    }
  });

  it('judges arguments only of the calls it dispatches: the ioctl and clone checks see no other call', () => {
    const write = arch === 'x64' ? 1 : 64;
    // TIOCSTI in the second register and a namespace flag in the first mean something only to ioctl and clone.
    expect(run(filters, { nr: write, arch: a, args: [0x1000_0000n, BigInt(TIOCSTI)] })).toBe(RET_ALLOW);
    expect(run(filters, { nr: nr('ioctl'), arch: a, args: [0x1000_0000n, 0x5401n] })).toBe(RET_ALLOW);
  });

  it('denies ioctl TIOCSTI and TIOCLINUX on the low 32 bits, allows other ioctls', () => {
    const ioctl = (cmd: bigint): number => run(filters, { nr: nr('ioctl'), arch: a, args: [0n, cmd] });
    expect(ioctl(BigInt(TIOCSTI))).toBe(RET_EPERM);
    expect(ioctl(BigInt(TIOCLINUX))).toBe(RET_EPERM);
    expect(ioctl(BigInt(TIOCSTI) | (1n << 32n))).toBe(RET_EPERM);
    expect(ioctl(0xffff_ffff_0000_5412n)).toBe(RET_EPERM);
    expect(ioctl(0x5401n)).toBe(RET_ALLOW); // TCGETS
    expect(ioctl(0x541bn)).toBe(RET_ALLOW); // FIONREAD
  });

  it('denies clone with namespace flags, allows fork/thread clones, sends clone3 to ENOSYS', () => {
    const clone = (flags: bigint): number => run(filters, { nr: nr('clone'), arch: a, args: [flags] });
    expect(clone(0x01200011n)).toBe(RET_ALLOW); // fork(): CLONE_CHILD_SETTID|CLONE_CHILD_CLEARTID|SIGCHLD
    expect(clone(0x003d0f00n)).toBe(RET_ALLOW); // pthread_create
    expect(clone(0x10000000n | 17n)).toBe(RET_EPERM); // CLONE_NEWUSER
    expect(clone(0x40000000n)).toBe(RET_EPERM); // CLONE_NEWNET
    expect(clone(BigInt(CLONE_NAMESPACE_FLAGS))).toBe(RET_EPERM);
    expect(run(filters, { nr: nr('clone3'), arch: a })).toBe(RET_ENOSYS);
  });

  it('allows only no-op personality values', () => {
    const personality = (v: bigint): number => run(filters, { nr: nr('personality'), arch: a, args: [v] });
    expect(personality(0n)).toBe(RET_ALLOW);
    expect(personality(0xffff_ffffn)).toBe(RET_ALLOW);
    expect(personality(0x0040000n)).toBe(RET_EPERM); // ADDR_NO_RANDOMIZE
    expect(personality(0x0400000n)).toBe(RET_EPERM); // READ_IMPLIES_EXEC
  });

  it('denies everything from another architecture, socketcall of the i386 and arm32 ABIs included', () => {
    const other = arch === 'x64' ? AUDIT_ARCH.arm64 : AUDIT_ARCH.x64;
    expect(run(filters, { nr: 0, arch: other })).toBe(RET_EPERM);
    expect(run(filters, { nr: 1, arch: 0x40000003 })).toBe(RET_EPERM); // i386 via int 0x80
    // socketcall(SYS_SOCKET, {AF_VSOCK, ...}) exists only on those ABIs (i386: socketcall 102; arm32 EABI: socket 281): both refused by the arch check.
    expect(run(filters, { nr: 102, arch: 0x40000003, args: [1n] })).toBe(RET_EPERM);
    expect(run(filters, { nr: 281, arch: 0x40000028, args: [40n] })).toBe(RET_EPERM); // AUDIT_ARCH_ARM, socket(AF_VSOCK)
  });

  it('allow-lists socket families for socket and socketpair, on the low 32 bits', () => {
    for (const call of ['socket', 'socketpair'] as const) {
      const sock = (domain: bigint, type = 1n, protocol = 0n): number => run(filters, { nr: nr(call), arch: a, args: [domain, type, protocol] });
      expect(sock(1n), `${call} AF_UNIX`).toBe(RET_ALLOW);
      expect(sock(2n), `${call} AF_INET`).toBe(RET_ALLOW);
      expect(sock(2n, 2n | 0o4000n | 0o2000000n), `${call} AF_INET dgram nonblock cloexec`).toBe(RET_ALLOW);
      expect(sock(10n, 3n), `${call} AF_INET6 raw`).toBe(RET_ALLOW);
      expect(sock(16n, 3n, 0n), `${call} NETLINK_ROUTE`).toBe(RET_ALLOW);
      expect(sock(16n, 3n, 4n), `${call} NETLINK_SOCK_DIAG`).toBe(RET_EAFNOSUPPORT);
      expect(sock(16n, 3n, 15n), `${call} NETLINK_KOBJECT_UEVENT`).toBe(RET_EAFNOSUPPORT);
      expect(sock(16n, 3n, 1n << 32n), `${call} NETLINK_ROUTE, high bits`).toBe(RET_ALLOW); // the kernel reads an int: still ROUTE
      // (AF_INET, SOCK_PACKET) becomes AF_PACKET in the kernel, with or without SOCK_NONBLOCK/SOCK_CLOEXEC.
      expect(sock(2n, 10n), `${call} AF_INET SOCK_PACKET`).toBe(RET_EAFNOSUPPORT);
      expect(sock(2n, 10n | 0o4000n | 0o2000000n), `${call} AF_INET SOCK_PACKET|flags`).toBe(RET_EAFNOSUPPORT);
      // AF_VSOCK 40, AF_PACKET 17, AF_ALG 38, AF_KEY 15, AF_XDP 44, AF_BLUETOOTH 31, AF_CAN 29, AF_TIPC 30, AF_UNSPEC 0, AF_RDS 21, AF_LLC 26, AF_MCTP 45
      for (const fam of [40n, 17n, 38n, 15n, 44n, 31n, 29n, 30n, 0n, 21n, 26n, 45n, 46n, 0xffffn]) expect(sock(fam), `${call} family ${fam}`).toBe(RET_EAFNOSUPPORT);
      expect(sock(40n | (1n << 32n)), `${call} AF_VSOCK with high bits`).toBe(RET_EAFNOSUPPORT);
      expect(sock(1n | (1n << 32n)), `${call} AF_UNIX with high bits`).toBe(RET_ALLOW);
    }
  });

  it('allows fallocate only with mode 0', () => {
    const fallocate = (mode: bigint): number => run(filters, { nr: nr('fallocate'), arch: a, args: [3n, mode, 0n, 1n << 26n] });
    expect(fallocate(0n)).toBe(RET_ALLOW);
    expect(fallocate(1n << 32n)).toBe(RET_ALLOW); // mode is an int: this IS mode 0 to the kernel
    for (const mode of [1n, 2n | 1n, 0x8n, 0x10n, 0x20n, 0x40n, 0x80n]) expect(fallocate(mode), `mode ${mode}`).toBe(RET_EOPNOTSUPP); // KEEP_SIZE, PUNCH_HOLE, COLLAPSE, ZERO, INSERT, UNSHARE, WRITE_ZEROES
  });

  it('refuses S_ISUID/S_ISGID in chmod, fchmod, fchmodat, fchmodat2, creating opens and mknod; openat2 gets ENOSYS', () => {
    const call = (name: Parameters<typeof syscallNumber>[0], args: bigint[]): number | undefined => {
      const n = syscallNumber(name, arch);
      return n === undefined ? undefined : run(filters, { nr: n, arch: a, args });
    };
    const modes: [bigint, number][] = [
      [0o755n, RET_ALLOW],
      [0o1777n, RET_ALLOW],
      [0o4755n, RET_EPERM],
      [0o2755n, RET_EPERM],
      [0o6755n, RET_EPERM],
      [0o4000n | (1n << 32n), RET_EPERM],
    ];
    for (const [mode, want] of modes) {
      expect(call('fchmod', [3n, mode]), `fchmod ${mode.toString(8)}`).toBe(want);
      expect(call('fchmodat', [0xffffff9cn, 0n, mode]), `fchmodat ${mode.toString(8)}`).toBe(want);
      expect(call('fchmodat2', [0xffffff9cn, 0n, mode, 0x100n]), `fchmodat2 ${mode.toString(8)}`).toBe(want);
      expect(call('mknodat', [0xffffff9cn, 0n, 0o100000n | mode, 0n]), `mknodat ${mode.toString(8)}`).toBe(want);
      expect(call('openat', [0xffffff9cn, 0n, 0o100n | 0o1n, mode]), `openat O_CREAT ${mode.toString(8)}`).toBe(want);
      expect(call('openat', [0xffffff9cn, 0n, 0o20200000n | 0o2n, mode]), `openat O_TMPFILE ${mode.toString(8)}`).toBe(want);
      if (arch === 'x64') {
        expect(call('chmod', [0n, mode]), `chmod ${mode.toString(8)}`).toBe(want);
        expect(call('creat', [0n, mode]), `creat ${mode.toString(8)}`).toBe(want);
        expect(call('mknod', [0n, 0o100000n | mode, 0n]), `mknod ${mode.toString(8)}`).toBe(want);
        expect(call('open', [0n, 0o100n | 0o1n, mode]), `open O_CREAT ${mode.toString(8)}`).toBe(want);
      }
    }
    // Without O_CREAT/O_TMPFILE the kernel ignores the mode: whatever the register holds, the open is allowed.
    expect(call('openat', [0xffffff9cn, 0n, 0n, 0o6777n])).toBe(RET_ALLOW);
    if (arch === 'x64') expect(call('open', [0n, 0o2n, 0o4755n])).toBe(RET_ALLOW);
    expect(call('openat2', [0xffffff9cn, 0n, 0n, 24n])).toBe(RET_ENOSYS);
  });

  it('in a jail sharing our session: kill(0) and the PGRP-0 priority calls get EPERM; other targets, and every target in a session of its own, pass', () => {
    const shared = decode(buildSeccompFilter(arch, { sharedSession: true }));
    const kill = (pid: bigint, sig = 9n): { nr: number; arch: number; args: bigint[] } => ({ nr: nr('kill'), arch: a, args: [pid, sig] });
    // pid_t is the low word: 1 << 32 is 0, the caller's group.
    for (const pid of [0n, 1n << 32n]) expect(run(shared, kill(pid)), `kill(${pid})`).toBe(RET_EPERM);
    expect(run(shared, kill(0n, 0n))).toBe(RET_EPERM);
    // A pid or a group named by number (looked up in the jail's pid namespace), and kill(-1), pass.
    for (const pid of [1n, 42n, 0xffff_ffffn, 0xffff_ffd6n]) expect(run(shared, kill(pid)), `kill(${pid})`).toBe(RET_ALLOW);
    const prio = (name: 'setpriority' | 'getpriority' | 'ioprio_set' | 'ioprio_get', which: bigint, who: bigint): number => run(shared, { nr: nr(name), arch: a, args: [which, who, 10n] });
    for (const name of ['setpriority', 'getpriority'] as const) {
      expect(prio(name, 1n, 0n), `${name}(PRIO_PGRP, 0)`).toBe(RET_EPERM);
      expect(prio(name, 1n, 1n << 32n), `${name}(PRIO_PGRP, 1 << 32)`).toBe(RET_EPERM);
      expect([prio(name, 0n, 0n), prio(name, 2n, 0n), prio(name, 1n, 7n)], name).toEqual([RET_ALLOW, RET_ALLOW, RET_ALLOW]);
    }
    for (const name of ['ioprio_set', 'ioprio_get'] as const) {
      expect(prio(name, 2n, 0n), `${name}(IOPRIO_WHO_PGRP, 0)`).toBe(RET_EPERM);
      expect([prio(name, 1n, 0n), prio(name, 3n, 0n), prio(name, 2n, 7n)], name).toEqual([RET_ALLOW, RET_ALLOW, RET_ALLOW]);
    }
    // The rest of the filter is the same.
    expect(run(shared, { nr: nr('ioctl'), arch: a, args: [0n, BigInt(TIOCSTI)] })).toBe(RET_EPERM);
    expect(run(shared, { nr: nr('ptrace'), arch: a })).toBe(RET_EPERM);
    expect(run(shared, { nr: nr('socket'), arch: a, args: [40n, 1n, 0n] })).toBe(RET_EAFNOSUPPORT);
    // With bubblewrap's --new-session the caller's group is the jail's own: all pass, as before.
    expect([run(filters, kill(0n)), run(filters, { nr: nr('setpriority'), arch: a, args: [1n, 0n, 10n] }), run(filters, { nr: nr('ioprio_set'), arch: a, args: [2n, 0n, 0n] })]).toEqual([RET_ALLOW, RET_ALLOW, RET_ALLOW]);
    // The positive control's filter: the shared-session jail without the rule.
    const weak = decode(buildSeccompFilter(arch, { sharedSession: true, omit: ['process-groups'] }));
    expect(weak).toEqual(filters);
  });

  it('leaves out exactly the rule a test asks to omit (positive controls), and nothing else', () => {
    const without = (rule: (typeof SECCOMP_RULES)[number]): SockFilter[] => decode(buildSeccompFilter(arch, { omit: [rule] }));
    const vsock = { nr: nr('socket'), arch: a, args: [40n, 1n, 0n] };
    const keepSize = { nr: nr('fallocate'), arch: a, args: [3n, 1n, 0n, 1n] };
    const setuid = { nr: nr('fchmod'), arch: a, args: [3n, 0o4755n] };
    const unshareUser = { nr: nr('unshare'), arch: a, args: [0x1000_0000n] };
    const cloneUser = { nr: nr('clone'), arch: a, args: [0x1000_0000n | 17n] };
    const ptrace = { nr: nr('ptrace'), arch: a };
    const f = without('socket-families');
    expect([run(f, vsock), run(f, keepSize), run(f, setuid), run(f, unshareUser), run(f, ptrace)]).toEqual([RET_ALLOW, RET_EOPNOTSUPP, RET_EPERM, RET_EPERM, RET_EPERM]);
    const g = without('fallocate-modes');
    expect([run(g, vsock), run(g, keepSize), run(g, setuid), run(g, ptrace)]).toEqual([RET_EAFNOSUPPORT, RET_ALLOW, RET_EPERM, RET_EPERM]);
    const h = without('setid-modes');
    expect([run(h, vsock), run(h, keepSize), run(h, setuid), run(h, { nr: nr('openat2'), arch: a }), run(h, ptrace)]).toEqual([RET_EAFNOSUPPORT, RET_EOPNOTSUPP, RET_ALLOW, RET_ALLOW, RET_EPERM]);
    const n = without('namespaces');
    expect([run(n, unshareUser), run(n, cloneUser), run(n, { nr: nr('setns'), arch: a }), run(n, vsock), run(n, ptrace)]).toEqual([RET_ALLOW, RET_ALLOW, RET_ALLOW, RET_EAFNOSUPPORT, RET_EPERM]);
    // Without the denylist the listed calls reach the kernel; the argument rules still hold.
    const d = without('denylist');
    expect([run(d, ptrace), run(d, unshareUser), run(d, cloneUser), run(d, vsock), run(d, keepSize), run(d, setuid)]).toEqual([RET_ALLOW, RET_ALLOW, RET_EPERM, RET_EAFNOSUPPORT, RET_EOPNOTSUPP, RET_EPERM]);
    expect(run(filters, unshareUser)).toBe(RET_EPERM);
    expect(run(filters, cloneUser)).toBe(RET_EPERM);
  });

  if (arch === 'x64') {
    it('denies the x32 ABI (nr >= 0x40000000), and every number above it, bit 30 set or not', () => {
      expect(run(filters, { nr: 0x40000000 + 1, arch: a })).toBe(RET_EPERM);
      expect(run(filters, { nr: 0x40000000 + 101, arch: a })).toBe(RET_EPERM);
      expect(run(filters, { nr: 0x8000_0000, arch: a })).toBe(RET_EPERM);
      expect(run(filters, { nr: 0xbfff_ffff, arch: a })).toBe(RET_EPERM);
    });
  } else {
    it('has no x32 ABI check on arm64: a number past its table is left to the kernel (ENOSYS)', () => {
      expect(run(filters, { nr: 0x40000000 + 1, arch: a })).toBe(RET_ALLOW);
    });
  }
});

describe('syscall tables', () => {
  it('use the right numbers on each architecture', () => {
    expect(syscallNumber('ptrace', 'x64')).toBe(101);
    expect(syscallNumber('ptrace', 'arm64')).toBe(117);
    expect(syscallNumber('ioctl', 'x64')).toBe(16);
    expect(syscallNumber('ioctl', 'arm64')).toBe(29);
    expect(syscallNumber('unshare', 'arm64')).toBe(97);
    expect(syscallNumber('bpf', 'arm64')).toBe(280);
    expect(syscallNumber('iopl', 'arm64')).toBeUndefined();
    expect(syscallNumber('socket', 'x64')).toBe(41);
    expect(syscallNumber('socket', 'arm64')).toBe(198);
    expect(syscallNumber('socketpair', 'arm64')).toBe(199);
    expect(syscallNumber('fallocate', 'x64')).toBe(285);
    expect(syscallNumber('fallocate', 'arm64')).toBe(47);
    expect(syscallNumber('fchmodat2', 'x64')).toBe(452);
    expect(syscallNumber('fchmod', 'arm64')).toBe(52);
    expect(syscallNumber('fchmodat', 'arm64')).toBe(53);
    expect(syscallNumber('mknodat', 'arm64')).toBe(33);
    expect(syscallNumber('openat', 'arm64')).toBe(56);
    expect(syscallNumber('openat2', 'arm64')).toBe(437);
    expect(syscallNumber('chmod', 'arm64')).toBeUndefined();
    // asm/unistd_64.h and asm-generic/unistd.h: kill, setpriority/getpriority, ioprio_set/ioprio_get.
    expect([62, 141, 140, 251, 252].map((n, i) => syscallNumber((['kill', 'setpriority', 'getpriority', 'ioprio_set', 'ioprio_get'] as const)[i]!, 'x64') === n)).toEqual([true, true, true, true, true]);
    expect([129, 140, 141, 30, 31].map((n, i) => syscallNumber((['kill', 'setpriority', 'getpriority', 'ioprio_set', 'ioprio_get'] as const)[i]!, 'arm64') === n)).toEqual([true, true, true, true, true]);
  });
});

describe('test-only weakening of the jail', () => {
  const tools = { bwrap: '/usr/bin/bwrap', prlimit: '/usr/bin/prlimit', setpriv: '/usr/bin/setpriv' };
  const ctx = { tools, root: true, arch: 'x64' as const, hostUid: 234567 };
  const req = { command: ['/usr/bin/true'], mounts: [], cwd: '/', env: {}, limits: DEFAULT_JAIL_LIMITS };
  const seccompOf = (plan: ReturnType<typeof buildJailPlan>): Buffer => plan.dataFds[Number(planOptions(plan)[planOptions(plan).indexOf('--seccomp') + 1]) - 3]!;

  it('leaves out exactly the named seccomp rule and bwrap options', () => {
    const full = buildJailPlan(req, [], ctx);
    expect(seccompOf(full)).toEqual(buildSeccompFilter('x64'));
    const weak = buildJailPlan({ ...req, testOnlyWeaken: { seccomp: ['socket-families'], bwrap: ['--disable-userns', '--cap-drop'] } }, [], ctx);
    expect(seccompOf(weak)).toEqual(buildSeccompFilter('x64', { omit: ['socket-families'] }));
    const opts = planOptions(weak);
    expect(opts).not.toContain('--disable-userns');
    expect(opts).not.toContain('--cap-drop');
    expect(planOptions(full).filter((o) => !opts.includes(o))).toEqual(['--disable-userns', '--cap-drop', 'ALL']); // nothing else went
  });

  it('is refused outside the test runner, so no real run can be built weakened', () => {
    const saved = process.env.VITEST;
    delete process.env.VITEST;
    try {
      expect(() => buildJailPlan({ ...req, testOnlyWeaken: { seccomp: ['setid-modes'] } }, [], ctx)).toThrow(/test suite only/);
      expect(() => buildJailPlan(req, [], ctx)).not.toThrow();
    } finally {
      process.env.VITEST = saved;
    }
  });
});

describe('seccomp filter cache', () => {
  it('gives every caller its own copy of the same bytes, and a different filter for a different omit set', () => {
    const a = buildSeccompFilter('x64');
    const reference = Buffer.from(a);
    a.fill(0); // a caller scribbling on its copy…
    const b = buildSeccompFilter('x64');
    expect(b).not.toBe(a);
    expect(b.equals(reference)).toBe(true); // …changes nothing for the next jail
    expect(buildSeccompFilter('x64', { omit: [] }).equals(reference)).toBe(true);
    const weakened = buildSeccompFilter('x64', { omit: ['denylist'] });
    expect(weakened.equals(reference)).toBe(false);
    // Same rules in another order, or repeated: the same filter; and the full one is still the full one after.
    expect(buildSeccompFilter('x64', { omit: ['denylist', 'denylist'] }).equals(weakened)).toBe(true);
    expect(buildSeccompFilter('x64').equals(reference)).toBe(true);
    expect(buildSeccompFilter('arm64').equals(reference)).toBe(false);
    // The cached bytes are exactly what assembling the program gives.
    for (const arch of ['x64', 'arm64'] as const) expect(buildSeccompFilter(arch).equals(assemble(seccompProgram(arch)))).toBe(true);
  });
});
