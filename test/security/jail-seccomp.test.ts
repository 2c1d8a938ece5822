/**
 * Attack battery, the seccomp argument rules (issue 10, holes 1, 4 and 5):
 *
 * - AF_VSOCK lives in the machine-wide vsock space, outside the jail's
 *   network namespace (on a VM it is the hypervisor channel): creating,
 *   binding and listening must fail, as must AF_PACKET, AF_ALG, non-ROUTE
 *   netlink and the AF_INET/SOCK_PACKET alias, while AF_UNIX, AF_INET(6) and
 *   NETLINK_ROUTE keep working.
 * - fallocate(FALLOC_FL_KEEP_SIZE) allocated 64 MiB past RLIMIT_FSIZE with
 *   the file's size staying 0: only mode 0 (which the kernel checks against
 *   RLIMIT_FSIZE) is allowed.
 * - A setuid copy of an interpreter in the workspace would hand the jail's
 *   uid (not root: the operator's) to whoever runs it: no S_ISUID/S_ISGID
 *   through chmod, fchmod, fchmodat, fchmodat2, creating opens, mknod or
 *   `install -m 4755`.
 *
 * Every attack has its positive control: the same script in the same jail
 * with exactly that rule left out (JailRequest.testOnlyWeaken) succeeds, and
 * each script prints a marker before its first attack.
 */
import { spawnSync } from 'node:child_process';
import { lstatSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { resolveInterpreter } from '../../src/lib/jail/spawn.js';
import { limits, node, python, runInJail } from '../jail/helpers.js';

const EPERM = 1;
const ENOSYS = 38;
const EOPNOTSUPP = 95;
const EAFNOSUPPORT = 97;
const MIB = 1024 * 1024;

/** Each socket attempt records 0 (worked) or its errno. */
const SOCKETS = `
import json, socket
out = {}
def attempt(name, fn):
    try:
        fn(); out[name] = 0
    except OSError as e:
        out[name] = e.errno
print('REACHED', flush=True)
def vsock_listen():
    s = socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)
    s.bind((socket.VMADDR_CID_ANY, socket.VMADDR_PORT_ANY)); s.listen(1)
    out['vsock_port'] = s.getsockname()[1]; s.close()
attempt('vsock_create', lambda: socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM).close())
attempt('vsock_listen', vsock_listen)
attempt('vsock_dgram', lambda: socket.socket(socket.AF_VSOCK, socket.SOCK_DGRAM).close())
def raw_socket(domain, type_, proto):
    # The raw syscall, so the domain's high 32 bits reach the filter (Python's socket() refuses them).
    import ctypes, os, platform
    libc = ctypes.CDLL(None, use_errno=True); libc.syscall.restype = ctypes.c_long
    ctypes.set_errno(0)
    fd = libc.syscall(ctypes.c_long(41 if platform.machine() == 'x86_64' else 198), ctypes.c_long(domain), ctypes.c_long(type_), ctypes.c_long(proto))
    if fd < 0: raise OSError(ctypes.get_errno(), 'socket')
    os.close(fd)
attempt('vsock_high_bits', lambda: raw_socket(socket.AF_VSOCK | (1 << 32), socket.SOCK_STREAM, 0))
attempt('vsock_pair', lambda: [s.close() for s in socket.socketpair(socket.AF_VSOCK, socket.SOCK_STREAM)])
attempt('packet', lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3)).close())
attempt('inet_sock_packet', lambda: socket.socket(socket.AF_INET, 10, socket.htons(3)).close())
attempt('alg', lambda: socket.socket(socket.AF_ALG, socket.SOCK_SEQPACKET, 0).close())
attempt('key', lambda: socket.socket(15, socket.SOCK_RAW, 2).close())
attempt('netlink_sock_diag', lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 4).close())
attempt('netlink_uevent', lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, 15).close())
# What scripts need keeps working:
attempt('unix_pair', lambda: [s.close() for s in socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)])
def loopback():
    srv = socket.socket(); srv.bind(('127.0.0.1', 0)); srv.listen(1)
    c = socket.create_connection(srv.getsockname()); a, _ = srv.accept()
    c.sendall(b'ping'); assert a.recv(4) == b'ping'
    for s in (a, c, srv): s.close()
attempt('inet_loopback', loopback)
attempt('inet6', lambda: socket.socket(socket.AF_INET6, socket.SOCK_DGRAM).close())
attempt('netlink_route', lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0).close())
out['if_names'] = [n for _, n in socket.if_nameindex()]
print(json.dumps(out))
`;

function parse(stdout: string): Record<string, unknown> {
  const lines = stdout.trim().split('\n');
  expect(lines[0], stdout).toBe('REACHED'); // the script got to its first attack
  expect(lines).toHaveLength(2);
  return JSON.parse(lines[1]!) as Record<string, unknown>;
}

describe('seccomp: socket families are allow-listed (hole 1)', () => {
  it('AF_VSOCK (create, bind+listen, dgram, socketpair, high bits), AF_PACKET, AF_ALG, AF_KEY, non-ROUTE netlink, AF_INET/SOCK_PACKET get EAFNOSUPPORT; unix, loopback TCP, inet6, NETLINK_ROUTE work', async () => {
    const py = python();
    const r = await runInJail({ command: py.cmd(SOCKETS), mounts: py.mounts });
    expect(r.stderr).toBe('');
    const out = parse(r.stdout);
    for (const k of ['vsock_create', 'vsock_listen', 'vsock_dgram', 'vsock_high_bits', 'vsock_pair', 'packet', 'inet_sock_packet', 'alg', 'key', 'netlink_sock_diag', 'netlink_uevent']) {
      expect(out[k], k).toBe(EAFNOSUPPORT);
    }
    expect(out.vsock_port).toBeUndefined();
    for (const k of ['unix_pair', 'inet_loopback', 'inet6', 'netlink_route']) expect(out[k], k).toBe(0);
    expect(out.if_names).toEqual(['lo']); // getifaddrs-style enumeration over NETLINK_ROUTE still works
  });

  it('node still works: a loopback server, a child process over a socketpair, os.networkInterfaces()', async () => {
    const n = node();
    const code = `
const net = require('node:net'); const os = require('node:os'); const cp = require('node:child_process');
const srv = net.createServer((s) => s.end('pong')).listen(0, '127.0.0.1', () => {
  const c = net.connect(srv.address().port, '127.0.0.1'); let got = '';
  c.on('data', (d) => (got += d)); c.on('end', () => {
    const child = cp.spawnSync('/bin/echo', ['child'], { encoding: 'utf8' });
    console.log(JSON.stringify({ got, child: child.stdout.trim(), ifaces: Object.keys(os.networkInterfaces()) })); srv.close();
  });
});`;
    const r = await runInJail({ command: n.cmd(code), mounts: n.mounts });
    expect(r.stderr).toBe('');
    expect(JSON.parse(r.stdout)).toEqual({ got: 'pong', child: 'child', ifaces: ['lo'] });
  });

  it('control: the same script without the family rule creates, binds and listens on AF_VSOCK (or shows the kernel has none)', async (ctx) => {
    const py = python();
    const r = await runInJail({ command: py.cmd(SOCKETS), mounts: py.mounts, testOnlyWeaken: { seccomp: ['socket-families'] } });
    expect(r.stderr).toBe('');
    const out = parse(r.stdout);
    // Without the rule every refusal comes from the kernel, never EAFNOSUPPORT for a family it has:
    expect(out.netlink_sock_diag).toBe(0);
    expect(out.packet).toBe(EPERM); // no CAP_NET_RAW: the kernel's own answer, not the filter's
    expect(out.inet_sock_packet).toBe(EPERM);
    if (out.vsock_create === EAFNOSUPPORT) {
      ctx.skip('this kernel has no AF_VSOCK (no vsock transport loaded): the control cannot show the escape here');
      return;
    }
    expect(out.vsock_create).toBe(0);
    expect(out.vsock_listen).toBe(0);
    expect(typeof out.vsock_port).toBe('number'); // a port in the machine-wide vsock space, outside the netns
    expect(out.vsock_pair).not.toBe(EAFNOSUPPORT);
  });
});

const FALLOCATE = `
import ctypes, json, os
libc = ctypes.CDLL(None, use_errno=True)
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
def fallocate(path, mode, length):
    fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o644)
    ctypes.set_errno(0)
    rv = libc.fallocate(fd, mode, 0, length)
    err = 0 if rv == 0 else ctypes.get_errno()
    st = os.fstat(fd); os.close(fd)
    return {'errno': err, 'size': st.st_size, 'bytes': st.st_blocks * 512}
def posix(path, length):
    fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o644)
    try:
        os.posix_fallocate(fd, 0, length); return 0
    except OSError as e:
        return e.errno
    finally:
        os.close(fd)
print('REACHED', flush=True)
out = {}
out['keep_size'] = fallocate('/workspace/keep', 1, 64 << 20)              # FALLOC_FL_KEEP_SIZE
out['zero_range'] = fallocate('/workspace/zero', 0x10, 64 << 20)          # FALLOC_FL_ZERO_RANGE
out['posix_small'] = posix('/workspace/small', 512 << 10)                # mode 0 within fileSizeMb
out['posix_big'] = posix('/workspace/big', 64 << 20)                     # mode 0 past it: the kernel's EFBIG
print(json.dumps(out))
`;

const FSIZE_1MB = { ...limits, fileSizeMb: 1 };

describe('seccomp: fallocate only with mode 0 (hole 4)', () => {
  it('FALLOC_FL_KEEP_SIZE and ZERO_RANGE get EOPNOTSUPP and allocate nothing; posix_fallocate (mode 0) works within fileSizeMb and gets EFBIG past it', async () => {
    const py = python();
    const r = await runInJail({ command: py.cmd(FALLOCATE), mounts: py.mounts, limits: FSIZE_1MB });
    expect(r.stderr).toBe('');
    const out = parse(r.stdout) as Record<string, { errno: number; size: number; bytes: number } | number>;
    for (const k of ['keep_size', 'zero_range']) {
      expect(out[k], k).toMatchObject({ errno: EOPNOTSUPP, size: 0 });
      expect((out[k] as { bytes: number }).bytes, k).toBeLessThan(MIB);
      expect(statSync(join(r.workspace, k === 'keep_size' ? 'keep' : 'zero')).blocks * 512).toBeLessThan(MIB); // seen from the host too
    }
    expect(out.posix_small).toBe(0);
    expect(out.posix_big).toBe(27); // EFBIG: RLIMIT_FSIZE holds for mode 0
    expect(statSync(join(r.workspace, 'big')).blocks * 512).toBeLessThanOrEqual(MIB);
  });

  it('control: without the rule, KEEP_SIZE allocates 64 MiB past a 1 MiB fileSizeMb while the size stays 0', async () => {
    const py = python();
    const r = await runInJail({ command: py.cmd(FALLOCATE), mounts: py.mounts, limits: FSIZE_1MB, testOnlyWeaken: { seccomp: ['fallocate-modes'] } });
    expect(r.stderr).toBe('');
    const out = parse(r.stdout) as Record<string, { errno: number; size: number; bytes: number }>;
    expect(out.keep_size).toMatchObject({ errno: 0, size: 0 });
    expect(out.keep_size!.bytes).toBeGreaterThanOrEqual(64 * MIB);
    expect(statSync(join(r.workspace, 'keep')).blocks * 512).toBeGreaterThanOrEqual(64 * MIB);
  });
});

/**
 * Copies the interpreter into the workspace and tries every way to give it
 * (or a new file) S_ISUID/S_ISGID. `raw_*` are the syscalls themselves
 * (x86_64 numbers), past whatever libc would do.
 */
const SETID = `
import ctypes, json, os, platform, shutil, stat, subprocess, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
L = ctypes.c_long
W = '/workspace'
shutil.copyfile(os.path.realpath(sys.executable), W + '/py')
os.chmod(W + '/py', 0o755)
out = {}
def attempt(name, fn):
    try:
        fn(); out[name] = 0
    except OSError as e:
        out[name] = e.errno
def raw(nr, *args):
    ctypes.set_errno(0)
    rv = libc.syscall(L(nr), *args)
    if rv < 0: raise OSError(ctypes.get_errno(), 'raw syscall')
    return rv
def raw_fd(nr, *args):
    os.close(raw(nr, *args))
print('REACHED', flush=True)
attempt('chmod_4755', lambda: os.chmod(W + '/py', 0o4755))
attempt('chmod_2755', lambda: os.chmod(W + '/py', 0o2755))
fd = os.open(W + '/py', os.O_RDONLY)
attempt('fchmod_6755', lambda: os.fchmod(fd, 0o6755))
attempt('open_creat_4755', lambda: os.close(os.open(W + '/s-open', os.O_CREAT | os.O_WRONLY, 0o4755)))
attempt('mknod_4755', lambda: os.mknod(W + '/s-mknod', stat.S_IFREG | 0o4755))
attempt('tmpfile_2755', lambda: os.close(os.open(W, os.O_TMPFILE | os.O_WRONLY, 0o2755)))
p = subprocess.run(['/usr/bin/install', '-m', '4755', W + '/py', W + '/s-install'], capture_output=True)
out['install_rc'] = p.returncode
if platform.machine() == 'x86_64':
    AT_FDCWD = L(-100)
    attempt('raw_chmod', lambda: raw(90, (W + '/py').encode(), L(0o4755)))
    attempt('raw_fchmodat', lambda: raw(268, AT_FDCWD, (W + '/py').encode(), L(0o4755)))
    attempt('raw_fchmodat2', lambda: raw(452, AT_FDCWD, (W + '/py').encode(), L(0o4755), L(0)))
    attempt('raw_chmod_high', lambda: raw(90, (W + '/py').encode(), L(0o4755 | (1 << 32))))
    attempt('raw_open', lambda: raw_fd(2, (W + '/s-raw-open').encode(), L(0o101), L(0o4755)))
    attempt('raw_creat', lambda: raw_fd(85, (W + '/s-raw-creat').encode(), L(0o6755)))
    attempt('raw_mknod', lambda: raw(133, (W + '/s-raw-mknod').encode(), L(stat.S_IFREG | 0o4755), L(0)))
    how = (ctypes.c_uint64 * 3)(0o101, 0o4755, 0)   # struct open_how {flags, mode, resolve}
    attempt('raw_openat2', lambda: raw_fd(437, AT_FDCWD, (W + '/s-openat2').encode(), ctypes.byref(how), L(24)))
# Ordinary modes stay allowed:
attempt('chmod_755', lambda: os.chmod(W + '/py', 0o755))
attempt('open_creat_644', lambda: os.close(os.open(W + '/plain', os.O_CREAT | os.O_WRONLY, 0o644)))
os.mkdir(W + '/d')
attempt('chmod_dir_1777', lambda: os.chmod(W + '/d', 0o1777))
out['setid'] = sorted(n for n in os.listdir(W) if os.lstat(W + '/' + n).st_mode & 0o6000)
r = subprocess.run([W + '/py', '-c', 'print(1)'], capture_output=True)
out['copy_runs'] = r.returncode
print(json.dumps(out))
`;

/** Host-side: files in the workspace with S_ISUID or S_ISGID. */
function setidFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((n) => (lstatSync(join(dir, n)).mode & 0o6000) !== 0)
    .sort();
}

describe('seccomp: no set-user-ID or set-group-ID file (hole 5)', () => {
  it('chmod/fchmod/fchmodat/fchmodat2 4755, creating open/creat/mknod/O_TMPFILE with setid modes and install -m 4755 get EPERM (openat2 ENOSYS); no setid bit anywhere', async () => {
    const py = python();
    const r = await runInJail({ command: py.cmd(SETID), mounts: py.mounts });
    expect(r.stderr).toBe('');
    const out = parse(r.stdout);
    for (const k of ['chmod_4755', 'chmod_2755', 'fchmod_6755', 'open_creat_4755', 'mknod_4755', 'tmpfile_2755']) expect(out[k], k).toBe(EPERM);
    expect(out.install_rc).not.toBe(0);
    if (process.arch === 'x64') {
      for (const k of ['raw_chmod', 'raw_fchmodat', 'raw_fchmodat2', 'raw_chmod_high', 'raw_open', 'raw_creat', 'raw_mknod']) expect(out[k], k).toBe(EPERM);
      expect(out.raw_openat2).toBe(ENOSYS);
    }
    for (const k of ['chmod_755', 'open_creat_644', 'chmod_dir_1777']) expect(out[k], k).toBe(0);
    expect(out.copy_runs).toBe(0); // the copy is a working interpreter: the attack had what it needed
    expect(out.setid).toEqual([]);
    expect(setidFiles(r.workspace)).toEqual([]);
  });

  it('control: without the rule the setuid bit appears on the interpreter copy and on created files', async () => {
    const py = python();
    const r = await runInJail({ command: py.cmd(SETID), mounts: py.mounts, testOnlyWeaken: { seccomp: ['setid-modes'] } });
    expect(r.stderr).toBe('');
    const out = parse(r.stdout);
    for (const k of ['chmod_4755', 'chmod_2755', 'fchmod_6755', 'open_creat_4755', 'mknod_4755']) expect(out[k], k).toBe(0);
    expect(out.install_rc).toBe(0);
    if (process.arch === 'x64') expect(out.raw_openat2).toBe(0);
    // The script's last chmod 755 cleared py again; what it created stays setuid (seen from the host).
    expect(setidFiles(r.workspace)).toEqual(expect.arrayContaining(['s-install', 's-mknod', 's-open']));
    expect(out.setid).toEqual(expect.arrayContaining(['s-install', 's-mknod', 's-open']));
  });
});

/**
 * x86_64 machine code that makes an i386 syscall through `int 0x80`
 * (eax = nr, ebx/ecx/edx = args), in a MAP_32BIT page so pointers fit:
 * push rbx; mov eax, edi; mov ebx, esi; xchg edx, ecx; int 0x80; movsxd rax, eax; pop rbx; ret.
 * i386 has socketcall (102) and socket (359), which the native ABI lacks.
 */
const INT80 = `
import ctypes, json, os
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
addr = libc.mmap(None, 4096, 7, 0x22 | 0x40, -1, 0)   # RWX, MAP_PRIVATE|MAP_ANONYMOUS|MAP_32BIT: pointers fit in ebx/ecx
assert addr and addr < 2**32, addr
code = bytes([0x53, 0x89, 0xf8, 0x89, 0xf3, 0x87, 0xca, 0xcd, 0x80, 0x48, 0x63, 0xc0, 0x5b, 0xc3])
ctypes.memmove(addr, code, len(code))
int80 = ctypes.CFUNCTYPE(ctypes.c_long, ctypes.c_long, ctypes.c_long, ctypes.c_long, ctypes.c_long)(addr)
args = addr + 64
ctypes.memmove(args, (ctypes.c_uint32 * 3)(40, 1, 0), 12)   # {AF_VSOCK, SOCK_STREAM, 0}
print('REACHED', flush=True)
out = {'getpid': int80(20, 0, 0, 0), 'pid': os.getpid()}
out['socketcall'] = int80(102, 1, args, 0)   # socketcall(SYS_SOCKET, {AF_VSOCK, ...})
out['socket'] = int80(359, 40, 1, 0)  # i386 socket(AF_VSOCK, SOCK_STREAM, 0)
for k in ('socketcall', 'socket'):
    if out[k] > 2: os.close(out[k])
print(json.dumps(out))
`;

describe.skipIf(process.arch !== 'x64')('seccomp: the i386 ABI (socketcall) is denied outright', () => {
  it('getpid, socketcall(SYS_SOCKET, AF_VSOCK) and socket(AF_VSOCK) through int 0x80 all get EPERM; the same code on the host reaches the kernel', async (ctx) => {
    const py = python();
    const host = spawnSync(resolveInterpreter('python3').hostPath, ['-I', '-c', INT80], { encoding: 'utf8', timeout: 30_000 });
    const hostOut = host.status === 0 ? (parse(host.stdout) as Record<string, number>) : undefined;
    // The control first, outside any filter: the kernel has the i386 ABI and runs the very same code.
    // Where it does not (ia32 emulation off, or a VM that faults int 0x80 before any syscall entry: the
    // host process dies of SIGSEGV), there is no i386 ABI for a script to reach, and nothing to deny.
    if (!hostOut || hostOut.getpid !== hostOut.pid) {
      ctx.skip(`this kernel runs no i386 code (ia32 emulation off, or int 0x80 faults: host exit ${String(host.status ?? host.signal)}): ${host.stderr || JSON.stringify(hostOut)}`);
      return;
    }
    const r = await runInJail({ command: py.cmd(INT80), mounts: py.mounts });
    expect(r.stderr).toBe('');
    const out = parse(r.stdout) as Record<string, number>;
    expect(out).toMatchObject({ getpid: -EPERM, socketcall: -EPERM, socket: -EPERM });
    // A vsock fd, or EAFNOSUPPORT on a kernel without vsock: never the filter's EPERM.
    for (const k of ['socketcall', 'socket']) expect(hostOut[k] === -EAFNOSUPPORT || hostOut[k]! > 2, `${k} ${hostOut[k]}`).toBe(true);
  });
});
