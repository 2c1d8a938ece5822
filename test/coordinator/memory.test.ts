import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

import * as yaml from 'yaml';
import { describe, expect, it } from 'vitest';

import { loadConfig, resolveAgent } from '../../src/lib/config/load.js';
import { runPlan } from '../../src/lib/coordinator/coordinator.js';
import { parsePlanText } from '../../src/lib/coordinator/plan.js';
import { boundSummary, detached } from '../../src/lib/coordinator/summary.js';
import { tempDir } from '../helpers/temp.js';

// A forced full GC without starting the worker with --expose-gc.
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Live heap after full GCs, without the code space (JIT code grows while the functions warm up, then stops). */
function liveHeapBytes(): number {
  for (let i = 0; i < 3; i++) gc();
  return getHeapSpaceStatistics()
    .filter((s) => !s.space_name.startsWith('code'))
    .reduce((sum, s) => sum + s.space_used_size, 0);
}

// The heap is marked every STEP children from FIRST to LAST, and the per-child figure is the median
// of those steps' slopes: the live heap takes one-time steps of ~2 MB (bytecode and caches of code
// paths first taken; marks every 16 children up to 208 showed 23.6 MB at 16, 25.6 at 32, then ~5 KB
// a child to 26.4 MB at 208), which a single span read as 30-50 KB a child wherever one fell in it,
// while memory kept for every child raises every step alike.
const FIRST = 16;
const STEP = 16;
const LAST = 96;
const OUT_KB = 112;

describe('runPlan memory', () => {
  it('detached copies a string exactly (multi-byte characters, a lone surrogate, the empty string)', () => {
    for (const text of ['', 'a', 'x'.repeat(5000), 'é…😀\ud800 tail', `${'y'.repeat(3000)}\n`]) expect(detached(text)).toBe(text);
    const long = 'z'.repeat(50_000);
    expect(boundSummary(long, 2000)).toHaveLength(2000);
    expect(boundSummary('short', 2000)).toBe('short');
  });

  it(`retains no per-child state beyond the bounded report: live heap after GC at child ${FIRST} and ${LAST} of one plan`, async () => {
    const home = tempDir('comis-coord-mem-');
    writeFileSync(join(home, 'config.yaml'), 'agents:\n  default:\n    autonomy:\n      limits:\n        stdoutCapBytes: 67108864\n');
    const lead = resolveAgent(await loadConfig({ home }));
    // Each child prints 112 KiB , so a child's output (or its 30,000-char head and tail) kept after it ended shows.
    const inline = `const l = 'x'.repeat(1023) + '\\n'; process.stdout.write(l.repeat(${OUT_KB}));`;
    const children = Array.from({ length: LAST }, (_, i) => `  - id: c${i}\n    language: js\n    inline: ${JSON.stringify(inline)}\n`).join('');
    const plan = parsePlanText(`children:\n${children}`, join(tempDir(), 'plan.yaml'), yaml);
    const heapAt = new Map<number, number>();
    let finished = 0;
    const res = await runPlan({
      plan,
      lead,
      home,
      sessionKey: 's-mem',
      concurrency: 2,
      onEvent: (e) => {
        if (e.type !== 'child:finished') return;
        finished++;
        if (finished >= FIRST && (finished - FIRST) % STEP === 0) heapAt.set(finished, liveHeapBytes());
      },
    });
    expect(res.totals.done).toBe(LAST);
    const slopes: number[] = [];
    for (let at = FIRST + STEP; at <= LAST; at += STEP) slopes.push((heapAt.get(at)! - heapAt.get(at - STEP)!) / STEP);
    slopes.sort((a, b) => a - b);
    const perChild = (slopes[(slopes.length - 1) >> 1]! + slopes[slopes.length >> 1]!) / 2;
    // What a finished child legitimately leaves: its report (bounded summary, ids, caps) and its
    // announcement in the lead context, about 5 KB here (a 2,000-char summary twice), up to 16 KB measured
    // next to other tests. Keeping its output cost 66-68 KB a child (measured); a 30 KB-a-child leak put
    // in the coordinator on purpose read 41 KB.
    const mb = (at: number): string => (heapAt.get(at)! / 1048576).toFixed(2);
    process.stdout.write(`live heap at children ${[...heapAt.keys()].map((at) => `${at}: ${mb(at)} MB`).join(', ')}; median slope ${Math.round(perChild)} B/child\n`);
    expect(perChild).toBeLessThan(32 * 1024);
  }, 240_000);
});
