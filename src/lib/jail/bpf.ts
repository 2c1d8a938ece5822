/**
 * A very small assembler for classic BPF as the kernel's seccomp loader takes
 * it: an array of `struct sock_filter { u16 code; u8 jt; u8 jf; u32 k; }`,
 * 8 bytes each, in the machine's byte order (little-endian on x86_64 and
 * aarch64, the two architectures comis supports).
 *
 * Only the handful of instructions a syscall filter needs exist here: load a
 * 32-bit word of `struct seccomp_data`, mask it with a constant, compare it
 * with a constant, and return. Jumps name labels; {@link assemble} resolves them and refuses a
 * program the kernel would refuse (backward or too-long jumps), so a bug shows
 * up as an exception when the filter is built, never as a jail that fails to
 * start or, worse, a filter that jumps somewhere unintended.
 */

/** Opcodes: class | size | mode, or class | op | source. */
export const BPF = {
  LD_W_ABS: 0x20, // BPF_LD | BPF_W | BPF_ABS
  AND_K: 0x54, // BPF_ALU | BPF_AND | BPF_K
  JEQ_K: 0x15, // BPF_JMP | BPF_JEQ | BPF_K
  JGE_K: 0x35, // BPF_JMP | BPF_JGE | BPF_K
  JSET_K: 0x45, // BPF_JMP | BPF_JSET | BPF_K
  JA: 0x05, // BPF_JMP | BPF_JA
  RET_K: 0x06, // BPF_RET | BPF_K
} as const;

/** Size in bytes of one `struct sock_filter`. */
export const SOCK_FILTER_SIZE = 8;

/** A jump target: the index of the next instruction (`next`) or a label. */
export type Target = string | { next: true };
export const NEXT: Target = { next: true };

export type Instruction =
  | { op: 'ld'; offset: number }
  /** A &= k: to compare a bit field (e.g. the socket type without its flags) with jeq. */
  | { op: 'and'; k: number }
  | { op: 'jeq' | 'jge' | 'jset'; k: number; jt: Target; jf: Target }
  | { op: 'ja'; to: string }
  | { op: 'ret'; k: number }
  | { op: 'label'; name: string };

/** One decoded `struct sock_filter`. */
export interface SockFilter {
  code: number;
  jt: number;
  jf: number;
  k: number;
}

function u32(k: number): number {
  if (!Number.isInteger(k) || k < 0 || k > 0xffff_ffff) throw new RangeError(`BPF constant out of range: ${k}`);
  return k;
}

/**
 * Resolves labels and returns the program as decoded instructions. Throws when
 * a label is unknown or duplicated, or a conditional jump would have to go
 * backwards or farther than 255 instructions (the u8 limit of jt/jf).
 */
export function resolve(program: readonly Instruction[]): SockFilter[] {
  const labels = new Map<string, number>();
  let index = 0;
  for (const ins of program) {
    if (ins.op === 'label') {
      if (labels.has(ins.name)) throw new Error(`BPF label defined twice: ${ins.name}`);
      labels.set(ins.name, index);
    } else {
      index += 1;
    }
  }
  const out: SockFilter[] = [];
  const offsetTo = (target: Target, at: number, limit: number): number => {
    const dest = typeof target === 'string' ? labels.get(target) : at + 1;
    if (dest === undefined) throw new Error(`BPF label not defined: ${String(target)}`);
    const off = dest - (at + 1);
    if (off < 0 || off > limit) throw new Error(`BPF jump from ${at} to ${String(target)} out of range (${off})`);
    return off;
  };
  for (const ins of program) {
    const at = out.length;
    switch (ins.op) {
      case 'label':
        break;
      case 'ld':
        out.push({ code: BPF.LD_W_ABS, jt: 0, jf: 0, k: u32(ins.offset) });
        break;
      case 'and':
        out.push({ code: BPF.AND_K, jt: 0, jf: 0, k: u32(ins.k) });
        break;
      case 'ret':
        out.push({ code: BPF.RET_K, jt: 0, jf: 0, k: u32(ins.k) });
        break;
      case 'ja':
        out.push({ code: BPF.JA, jt: 0, jf: 0, k: offsetTo(ins.to, at, 0xffff_ffff) });
        break;
      default: {
        const code = ins.op === 'jeq' ? BPF.JEQ_K : ins.op === 'jge' ? BPF.JGE_K : BPF.JSET_K;
        out.push({ code, jt: offsetTo(ins.jt, at, 255), jf: offsetTo(ins.jf, at, 255), k: u32(ins.k) });
      }
    }
  }
  if (out.length === 0 || out.length > 4096) throw new Error(`BPF program length ${out.length} is not in 1..4096`);
  const last = out[out.length - 1]!;
  if (last.code !== BPF.RET_K && last.code !== BPF.JA) throw new Error('BPF program must end with a return');
  return out;
}

/** Encodes decoded instructions as the little-endian bytes seccomp loads. */
export function encode(filters: readonly SockFilter[]): Buffer {
  const buf = Buffer.alloc(filters.length * SOCK_FILTER_SIZE);
  filters.forEach((f, i) => {
    const o = i * SOCK_FILTER_SIZE;
    buf.writeUInt16LE(f.code, o);
    buf.writeUInt8(f.jt, o + 2);
    buf.writeUInt8(f.jf, o + 3);
    buf.writeUInt32LE(f.k >>> 0, o + 4);
  });
  return buf;
}

/** The inverse of {@link encode}, for tests and for inspecting a built filter. */
export function decode(bytes: Buffer): SockFilter[] {
  if (bytes.length % SOCK_FILTER_SIZE !== 0) throw new Error('BPF byte length is not a multiple of 8');
  const out: SockFilter[] = [];
  for (let o = 0; o < bytes.length; o += SOCK_FILTER_SIZE) {
    out.push({ code: bytes.readUInt16LE(o), jt: bytes.readUInt8(o + 2), jf: bytes.readUInt8(o + 3), k: bytes.readUInt32LE(o + 4) });
  }
  return out;
}

/** Resolves and encodes in one step. */
export function assemble(program: readonly Instruction[]): Buffer {
  return encode(resolve(program));
}
