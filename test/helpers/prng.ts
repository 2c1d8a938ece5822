/**
 * A tiny deterministic PRNG (xorshift32) for tests that generate inputs: the same values on every
 * run, so a failure reproduces. Returns numbers in [0, 1).
 */
export function prng(seed: number): () => number {
  let x = seed;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 4294967296;
  };
}
