import { describe, expect, it } from 'vitest';

import { BPF, NEXT, assemble, decode, resolve, type SockFilter } from '../../src/lib/jail/bpf.js';
import {
  AUDIT_ARCH,
  CLONE_NAMESPACE_FLAGS,
  DENIED_SYSCALLS,
  RET_ALLOW,
  RET_ENOSYS,
  RET_EPERM,
  TIOCLINUX,
  TIOCSTI,
  buildSeccompFilter,
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
    expect(() => resolve([{ op: 'jeq', k: 1, jt: 'nope', jf: NEXT }, { op: 'ret', k: 0 }])).toThrow(/not defined/);
    expect(() => resolve([{ op: 'label', name: 'a' }, { op: 'ld', offset: 0 }, { op: 'jeq', k: 1, jt: 'a', jf: NEXT }, { op: 'ret', k: 0 }])).toThrow(/out of range/);
    const far = [{ op: 'jeq' as const, k: 1, jt: 'end', jf: NEXT }, ...Array.from({ length: 300 }, () => ({ op: 'ld' as const, offset: 0 })), { op: 'label' as const, name: 'end' }, { op: 'ret' as const, k: 0 }];
    expect(() => resolve(far)).toThrow(/out of range/);
    expect(() => resolve([{ op: 'ld', offset: 0 }])).toThrow(/end with a return/);
    expect(() => resolve([{ op: 'label', name: 'x' }, { op: 'label', name: 'x' }, { op: 'ret', k: 0 }])).toThrow(/twice/);
  });
});

describe.each(archs)('seccomp filter (%s)', (arch) => {
  const filters = decode(buildSeccompFilter(arch));
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
    for (const must of ['ptrace', 'process_vm_writev', 'process_vm_readv', 'keyctl', 'add_key', 'request_key', 'bpf', 'perf_event_open', 'userfaultfd', 'io_uring_setup', 'io_uring_enter', 'io_uring_register', 'mount', 'umount2', 'pivot_root', 'move_mount', 'open_tree', 'fsopen', 'fsmount', 'fsconfig', 'fspick', 'mount_setattr', 'kexec_load', 'kexec_file_load', 'init_module', 'finit_module', 'delete_module', 'unshare', 'setns', 'acct', 'swapon', 'swapoff', 'reboot'] as const) {
      expect(DENIED_SYSCALLS).toContain(must);
    }
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

  it('denies everything from another architecture', () => {
    const other = arch === 'x64' ? AUDIT_ARCH.arm64 : AUDIT_ARCH.x64;
    expect(run(filters, { nr: 0, arch: other })).toBe(RET_EPERM);
    expect(run(filters, { nr: 1, arch: 0x40000003 })).toBe(RET_EPERM); // i386 via int 0x80
  });

  if (arch === 'x64') {
    it('denies the x32 ABI (nr >= 0x40000000)', () => {
      expect(run(filters, { nr: 0x40000000 + 1, arch: a })).toBe(RET_EPERM);
      expect(run(filters, { nr: 0x40000000 + 101, arch: a })).toBe(RET_EPERM);
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
  });
});
