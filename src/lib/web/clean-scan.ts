/**
 * {@link cleanAsciiLines} (src/lib/untrusted/envelope.ts) sixteen bytes at a
 * time: the same verdict and the same LF count, from a tiny WebAssembly SIMD
 * kernel. web_fetch runs this check over every chunk of a CSV body as it
 * streams into its ResultRef; in JS (four bytes a step) it was the largest
 * single item of a 1 MB call (~0.6–1 ms per MB here), the kernel takes a
 * tenth of that plus one 64 KiB copy per chunk into its memory.
 *
 * The kernel, per 16-byte block v of the chunk (copied to offset 0 of its
 * memory, followed by 80 spaces, so the last step and an 8-byte look-ahead
 * read only spaces past the end, which are clean and spell nothing):
 *
 *   bad   = (v <u 0x20 and v not in {TAB, LF, CR}) or v >=u 0x7f   -> -1
 *           (as v + 1 <s 0x21, and a 16-entry table lookup for TAB/LF/CR:
 *           four instructions with no unsigned compare, which SSE lacks)
 *   lines += popcnt(bitmask(v == LF))
 *   for each lane i with (v | 0x20) == 'u':
 *     if (load64(i + 1) | 0x2020202020202020) == "ntrusted"       -> -1
 *
 * which is the definition cleanAsciiLines implements (printable ASCII, tab,
 * LF, CR; never "untrusted" in any case; the LF count). Four blocks (64
 * bytes) a step: their bad lanes OR-ed into one test, their u lanes into
 * another, so a clean step without a u costs two branches, not eight (a 1 MB
 * chunk stream: 0.22 ms in one block a step with unsigned compares, 0.11 ms
 * now). Built here from its instructions (below, one per line) rather than
 * shipped as an opaque blob.
 * Where WebAssembly SIMD is not available (a --jitless node, say) the JS
 * check is used. test/web/clean-scan.test.ts holds the two equal over random
 * and adversarial bytes at every length and alignment.
 */
import { cleanAsciiLines } from '../untrusted/envelope.js';

/** Past the end of the copied chunk: more than a step's over-read (63) and the look-ahead's (8). */
const PAD = 80;
const PAGE = 65536;
/** Longer inputs take the JS check: the kernel's memory (kept for the process) never grows past this. */
const MAX_KERNEL_BYTES = 1024 * 1024;

/** Signed LEB128 of a 64-bit constant. */
function sleb(value: bigint): number[] {
  const out: number[] = [];
  for (;;) {
    const byte = Number(value & 0x7fn);
    value >>= 7n;
    if ((value === 0n && (byte & 0x40) === 0) || (value === -1n && (byte & 0x40) !== 0)) {
      out.push(byte);
      return out;
    }
    out.push(byte | 0x80);
  }
}

const section = (id: number, body: number[]): number[] => [id, ...uleb(body.length), ...body];
function uleb(n: number): number[] {
  const out: number[] = [];
  do {
    let byte = n & 0x7f;
    n >>>= 7;
    if (n !== 0) byte |= 0x80;
    out.push(byte);
  } while (n !== 0);
  return out;
}

/** The module's bytes: one function `scan(len) -> i32` and its memory `mem`. */
function moduleBytes(): Uint8Array {
  // Locals: 0 len (param); 1 p, 2 lines, 3 mask, 4 i (i32); 5-8 the four blocks of a step (v128).
  const [LEN, P, LINES, MASK, I] = [0, 1, 2, 3, 4];
  const BLOCKS = [5, 6, 7, 8];
  const get = (x: number): number[] => [0x20, x];
  const set = (x: number): number[] => [0x21, x];
  const splat = (b: number): number[] => [0xfd, 0x0c, ...new Array<number>(16).fill(b)];
  const simd = (op: number): number[] => [0xfd, ...uleb(op)];
  const [SWIZZLE, EQ, LT_S, ANDNOT, OR, ANY_TRUE, BITMASK, ADD] = [0x0e, 0x23, 0x25, 0x4f, 0x50, 0x53, 0x64, 0x6e].map(simd) as [number[], number[], number[], number[], number[], number[], number[], number[]];
  /** 0xff at lanes 9, 10 and 13: the table `v in {TAB, LF, CR}` looks up. */
  const TAB_LF_CR = [0xfd, 0x0c, ...Array.from({ length: 16 }, (_, i) => (i === 0x09 || i === 0x0a || i === 0x0d ? 0xff : 0))];
  const NTRUSTED = 0x646574737572746en; // "ntrusted", little-endian
  const RETURN_DIRTY = [0x04, 0x40, 0x41, 0x7f, 0x0f, 0x0b]; // if return -1 end
  /** Lanes of block `v` that are a control byte other than TAB, LF, CR, or DEL, or not ASCII. */
  const bad = (v: number): number[] => [
    ...get(v),
    ...splat(0x01),
    ...ADD,
    ...splat(0x21),
    ...LT_S, //             v + 1 <s 0x21: v is 0x00-0x1f or 0x7f-0xff
    ...TAB_LF_CR,
    ...get(v),
    ...SWIZZLE, //          v in {TAB, LF, CR} (an index past 15 gives 0)
    ...ANDNOT,
  ];
  /** Lanes of block `v` holding u or U. */
  const uLanes = (v: number): number[] => [...get(v), ...splat(0x20), ...OR, ...splat(0x75), ...EQ];
  /** lines += the LFs of block `v`. */
  const countLines = (v: number): number[] => [...get(LINES), ...get(v), ...splat(0x0a), ...EQ, ...BITMASK, 0x69 /* i32.popcnt */, 0x6a /* i32.add */, ...set(LINES)];
  /** For each u or U of block k (at p + 16k): "ntrusted" (any case) after it returns -1. */
  const checkU = (k: number): number[] => [
    ...uLanes(BLOCKS[k]!),
    ...BITMASK,
    ...set(MASK),
    ...[0x02, 0x40], //     block $ubreak
    ...[0x03, 0x40], //       loop $ulanes
    ...get(MASK),
    0x45, //                  i32.eqz
    ...[0x0d, 1], //          br_if $ubreak
    ...get(P),
    ...get(MASK),
    0x68, //                  i32.ctz
    0x6a, //                  i32.add
    ...set(I), //             i = p + the lowest lane left (the block's offset is the load's)
    ...get(MASK),
    ...get(MASK),
    ...[0x41, 1],
    0x6b, //                  i32.sub
    0x71, //                  i32.and
    ...set(MASK), //          mask &= mask - 1
    ...get(I),
    ...[0x29, 0x00, 16 * k + 1], // i64.load align=1 offset=16k+1
    0x42,
    ...sleb(0x2020202020202020n),
    0x84, //                  i64.or
    0x42,
    ...sleb(NTRUSTED),
    0x51, //                  i64.eq
    ...RETURN_DIRTY,
    ...[0x0c, 0], //          br $ulanes
    0x0b, //                end loop
    0x0b, //              end block
  ];
  const code = [
    ...[0x02, 0x40], // block $done
    ...[0x03, 0x40], //   loop $steps: 64 bytes (four blocks) a step
    ...get(P),
    ...get(LEN),
    0x4f, //                i32.ge_u
    ...[0x0d, 1], //        br_if $done
    ...BLOCKS.flatMap((v, k) => [...get(P), ...[0xfd, 0x00, 0x00, 16 * k], ...set(v)]), // v128.load align=1 offset=16k
    // One test for the four blocks' bad bytes, one for their u's: clean text passes both at once.
    ...bad(BLOCKS[0]!),
    ...BLOCKS.slice(1).flatMap((v) => [...bad(v), ...OR]),
    ...ANY_TRUE,
    ...RETURN_DIRTY,
    ...BLOCKS.flatMap(countLines),
    ...uLanes(BLOCKS[0]!),
    ...BLOCKS.slice(1).flatMap((v) => [...uLanes(v), ...OR]),
    ...ANY_TRUE,
    ...[0x04, 0x40], //     if: the lanes of each block in turn
    ...[0, 1, 2, 3].flatMap(checkU),
    0x0b, //                end if
    ...get(P),
    ...[0x41, 0xc0, 0x00], // i32.const 64
    0x6a,
    ...set(P), //           p += 64
    ...[0x0c, 0], //        br $steps
    0x0b, //              end loop
    0x0b, //            end block
    ...get(LINES),
    0x0b, //            end function
  ];
  const body = [2, 4, 0x7f, 4, 0x7b, ...code];
  const name = (s: string): number[] => [s.length, ...Buffer.from(s, 'latin1')];
  return Uint8Array.from([
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
    ...section(1, [1, 0x60, 1, 0x7f, 1, 0x7f]), // type: (i32) -> i32
    ...section(3, [1, 0]), // one function of that type
    ...section(5, [1, 0, 2]), // one memory, 2 pages to start
    ...section(7, [2, ...name('scan'), 0, 0, ...name('mem'), 2, 0]),
    ...section(10, [1, ...uleb(body.length), ...body]),
  ]);
}

/** What this file uses of WebAssembly (the project's TS lib has no WebAssembly types). */
interface WasmMemory {
  buffer: ArrayBuffer;
  grow(pages: number): number;
}
interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object) => { exports: Record<string, unknown> };
}

interface Kernel {
  scan: (len: number) => number;
  mem: WasmMemory;
  bytes: Uint8Array;
}

let kernel: Kernel | null | undefined;

function load(): Kernel | null {
  try {
    const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;
    const instance = new wasm.Instance(new wasm.Module(moduleBytes()));
    const exports = instance.exports as { scan: (len: number) => number; mem: WasmMemory };
    return { scan: exports.scan, mem: exports.mem, bytes: new Uint8Array(exports.mem.buffer) };
  } catch {
    // No WebAssembly SIMD here: the JS check does the same job.
    return null;
  }
}

/** The kernel's result for `bytes`, or undefined where there is no kernel (or `bytes` are over 1 MiB). */
export function scanWithKernel(bytes: Uint8Array): number | undefined {
  if (kernel === undefined) kernel = load();
  const k = kernel;
  if (!k || bytes.length > MAX_KERNEL_BYTES) return undefined;
  const need = bytes.length + PAD;
  if (k.bytes.length < need) {
    k.mem.grow(Math.ceil((need - k.bytes.length) / PAGE));
    k.bytes = new Uint8Array(k.mem.buffer);
  }
  k.bytes.set(bytes, 0);
  k.bytes.fill(0x20, bytes.length, need);
  return k.scan(bytes.length);
}

/** Bytes each side of a slice boundary that a word split by it ("untrusted", 9 letters) reaches into. */
const SEAM = 8;

/**
 * {@link cleanAsciiLines}: -1 unless `bytes` are clean ASCII, else their LF
 * count. Over 1 MiB, the kernel takes it 1 MiB at a time, and the 16 bytes
 * around each seam are checked again so that a word split by it is seen.
 */
export function cleanLines(bytes: Uint8Array): number {
  if (bytes.length <= MAX_KERNEL_BYTES) return scanWithKernel(bytes) ?? cleanAsciiLines(bytes);
  let lines = 0;
  for (let at = 0; at < bytes.length; at += MAX_KERNEL_BYTES) {
    const n = scanWithKernel(bytes.subarray(at, at + MAX_KERNEL_BYTES));
    if (n === undefined) return cleanAsciiLines(bytes);
    if (n < 0 || (at > 0 && (scanWithKernel(bytes.subarray(at - SEAM, at + SEAM)) ?? 0) < 0)) return -1;
    lines += n;
  }
  return lines;
}
