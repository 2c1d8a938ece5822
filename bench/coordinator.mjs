#!/usr/bin/env node
// Coordinator benchmark: a plan of N short children (default 200; BENCH_CHILDREN=N)
// run at concurrency 1, 2 and 8 (BENCH_CONCURRENCY=1,2,8), in process through
// runPlan (the code `comis run` uses), each child its own real jail.
// Reports children/s, the coordinator's peak RSS, and the lead context size.
// A second pass runs children that each print BENCH_BIG_KB of stdout (default
// 4096 KiB) to show peak RSS does not grow with the children's output.
// BENCH_RSS_COUNTS=10,40,160,320,640 instead runs only trivial children (BENCH_RSS_KIND=big: the
// big ones) at concurrency 2 for each count: peak RSS against the number of children, with the
// end-of-run split (JS heap, external Buffers, anonymous vs file-backed resident memory), then one
// line with what each added child cost between successive counts (a plateau: falling towards 0).
// Run after `npm run build:fast`:  node bench/coordinator.mjs
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { runPlan } = await import(join(root, 'dist/lib/coordinator/coordinator.js'));
const { parsePlanText } = await import(join(root, 'dist/lib/coordinator/plan.js'));
const { loadConfig, resolveAgent } = await import(join(root, 'dist/lib/config/load.js'));
const yaml = await import('yaml');

const n = Number(process.env.BENCH_CHILDREN ?? 200);
const levels = (process.env.BENCH_CONCURRENCY ?? '1,2,8').split(',').map(Number);
const bigKb = Number(process.env.BENCH_BIG_KB ?? 4096);

/** user + sys of the reaped descendants so far, ms (/proc/self/stat fields 16 and 17, in 10 ms ticks). */
function reapedChildrenCpuMs() {
  const f = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
  return (Number(f[13]) + Number(f[14])) * 10;
}

function planOf(count, inline) {
  const children = Array.from({ length: count }, (_, i) => `  - id: c${i}\n    language: js\n    inline: ${JSON.stringify(inline)}\n`).join('');
  return parsePlanText(`children:\n${children}`, join(tmpdir(), 'bench-plan.yaml'), yaml);
}

async function measure(label, count, concurrency, inline, config) {
  const home = mkdtempSync(join(tmpdir(), 'comis-bench-coord-'));
  if (config) writeFileSync(join(home, 'config.yaml'), config);
  const lead = resolveAgent(await loadConfig({ home }));
  let peak = process.memoryUsage().rss;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 20); // rss() alone: memoryUsage() walks the heap spaces, and at 50 Hz it was ~2% of the bench's CPU
  const cpu0 = process.cpuUsage();
  const kids0 = reapedChildrenCpuMs();
  const t0 = performance.now();
  const res = await runPlan({ plan: planOf(count, inline), lead, home, sessionKey: 's-bench', concurrency });
  const s = (performance.now() - t0) / 1000;
  clearInterval(sampler);
  const cpu = process.cpuUsage(cpu0);
  const kidsMs = reapedChildrenCpuMs() - kids0;
  peak = Math.max(peak, process.memoryUsage().rss);
  rmSync(home, { recursive: true, force: true });
  const row = {
    label,
    children: count,
    concurrency,
    done: res.totals.done,
    seconds: Number(s.toFixed(2)),
    childrenPerSec: Number((count / s).toFixed(1)),
    peakRssMb: Number((peak / 1048576).toFixed(1)),
    // CPU per child: this process (the coordinator, all threads) and every reaped descendant (the jail chain and the script).
    coordinatorCpuMsPerChild: Math.round((cpu.user + cpu.system) / 1000 / count),
    jailCpuMsPerChild: Math.round(kidsMs / count),
    leadContextChars: res.leadContext.chars,
    leadContextPerChild: Math.round(res.leadContext.chars / count),
  };
  return row;
}

const bigConfig = 'agents:\n  default:\n    autonomy:\n      limits:\n        stdoutCapBytes: 67108864\n';
const bigScript = `const l='x'.repeat(1023)+'\\n';let b='';for(let i=0;i<${bigKb};i++){b+=l;if(b.length>=1<<20){process.stdout.write(b);b='';}}process.stdout.write(b);`;
const CASES = {
  trivial: ["console.log('SUMMARY: ok')", undefined],
  big: [bigScript, bigConfig],
};

if (process.argv[2] === 'one') {
  // One measurement per process, so peak RSS (the kernel's high-water mark) is this case's alone.
  const [, , , kind, count, concurrency] = process.argv;
  await measure('warm-up', 2, 2, "console.log('ok')");
  const [inline, config] = CASES[kind];
  const row = await measure(kind === 'big' ? `big-${bigKb}KiB-each` : kind, Number(count), Number(concurrency), inline, config);
  row.maxRssMb = Number((process.resourceUsage().maxRSS / 1024).toFixed(1));
  // Where the memory sits at the end: the JS heap, Buffers outside it, and the kernel's split of
  // the resident set into anonymous (heap, arenas, SQLite's cache) and file-backed (code, mapped files).
  const mem = process.memoryUsage();
  const smaps = Object.fromEntries(
    readFileSync('/proc/self/smaps_rollup', 'utf8')
      .split('\n')
      .map((l) => /^(\w+):\s+(\d+) kB/.exec(l))
      .filter(Boolean)
      .map((m) => [m[1], Number(m[2])]),
  );
  const mb = (bytes) => Number((bytes / 1048576).toFixed(1));
  // With --expose-gc (BENCH_GC=1 passes it), the live heap after a full collection: what is retained, not yet-uncollected garbage.
  if (globalThis.gc) {
    globalThis.gc();
    row.liveHeapAfterGcMb = mb(process.memoryUsage().heapUsed);
  }
  Object.assign(row, {
    endRssMb: mb(mem.rss),
    heapUsedMb: mb(mem.heapUsed),
    heapTotalMb: mb(mem.heapTotal),
    externalMb: mb(mem.external),
    arrayBuffersMb: mb(mem.arrayBuffers),
    anonMb: mb(smaps.Anonymous * 1024),
    fileRssMb: mb((smaps.Rss - smaps.Anonymous) * 1024),
  });
  process.stdout.write(`RESULT ${JSON.stringify(row)}\n`);
} else {
  const { execFileSync } = await import('node:child_process');
  const run = (kind, count, concurrency) => {
    const out = execFileSync(process.execPath, [...(process.env.BENCH_GC ? ['--expose-gc'] : []), fileURLToPath(import.meta.url), 'one', kind, String(count), String(concurrency)], { encoding: 'utf8', maxBuffer: 1 << 24 });
    const row = JSON.parse(
      out
        .split('\n')
        .find((l) => l.startsWith('RESULT '))
        .slice(7),
    );
    process.stdout.write(`${JSON.stringify(row)}\n`);
    return row;
  };
  if (process.env.BENCH_RSS_COUNTS) {
    // Peak RSS against the number of children (e.g. BENCH_RSS_COUNTS=10,40,160,320,640): flat or plateauing.
    const rows = process.env.BENCH_RSS_COUNTS.split(',')
      .map(Number)
      .map((count) => run(process.env.BENCH_RSS_KIND ?? 'trivial', count, 2));
    // Between successive counts: what each added child cost in peak RSS and in anonymous memory. A
    // plateau reads as these falling towards 0 KB a child (memory kept per child would hold them up).
    const steps = rows.slice(1).map((r, i) => {
      const prev = rows[i];
      const perChild = (key) => Math.round(((r[key] - prev[key]) * 1024) / (r.children - prev.children));
      return `${prev.children}->${r.children}: peak ${prev.peakRssMb}->${r.peakRssMb} MB (${perChild('peakRssMb')} KB/child), anon ${prev.anonMb}->${r.anonMb} MB (${perChild('anonMb')} KB/child)`;
    });
    process.stdout.write(`RSS against children (concurrency 2): ${steps.join('; ')}\n`);
  } else {
    for (const c of levels) run('trivial', n, c);
    run('trivial', Math.max(1, Math.floor(n / 4)), 2);
    for (const count of [10, 40]) run('big', count, 2);
  }
}
