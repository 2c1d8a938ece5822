#!/usr/bin/env node
// Scale benchmark for `comis explain` and `comis fleet`: builds a store with
// 100,000 runs over 10,000 sessions and 1,000,000 capability audit events (all
// inside the last 28 days, so `--since 30d` covers every row: the worst case),
// then times the built CLI, median of N spawned runs each (default 7; BENCH_RUNS=N)
// after two warm-ups, in a clean environment. Targets: each under 300 ms wall, and
// `fleet` and `explain --last` at most 3x `node -e 0` (the ratio column). The first
// `fleet --since 30d` (timed apart as "cold") builds the per-day rollup fleet keeps in
// $COMIS_HOME/cache; every later one reads it plus the window's two partial days.
//
//   npm run build:fast && node bench/obs-scale.mjs
//
// Knobs: BENCH_RUNS, BENCH_SESSIONS (10000), BENCH_RUNS_PER_SESSION (10),
// BENCH_EVENTS (1000000), BENCH_KEEP=1 keeps the generated store and prints its path.
// The store lives in a temp directory and is removed at the end; never commit it.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bin = join(root, 'bin/comis.js');
const { openStore } = await import(join(root, 'dist/lib/store/store.js'));

const runsPerCase = Number(process.env.BENCH_RUNS ?? 7);
const sessions = Number(process.env.BENCH_SESSIONS ?? 10_000);
const runsPerSession = Number(process.env.BENCH_RUNS_PER_SESSION ?? 10);
const totalEvents = Number(process.env.BENCH_EVENTS ?? 1_000_000);
const TARGET_MS = 300;

const home = mkdtempSync(join(tmpdir(), 'comis-obs-bench-'));
const env = { PATH: process.env.PATH, HOME: home, COMIS_HOME: home };

// A tiny deterministic PRNG, so every machine builds the same store.
let seed = 0x2545f491;
const rand = () => {
  seed ^= seed << 13;
  seed ^= seed >>> 17;
  seed ^= seed << 5;
  return (seed >>> 0) / 4294967296;
};
const hex = (n, width) => n.toString(16).padStart(width, '0');

const TOOLS = [
  ['read', 'orch:read'],
  ['grep', 'orch:read'],
  ['web_fetch', 'orch:web'],
  ['web_search', 'orch:web'],
  ['memory_search', 'orch:memory'],
  ['write', 'orch:write'],
  ['message_send', 'orch:message'],
];
const DENY_REASONS = ['capability_missing', 'surface_disabled', 'unknown_tool', 'denied_by_origin'];

function build() {
  const t0 = performance.now();
  const store = openStore({ home });
  const db = store.db;
  db.pragma('synchronous = OFF');
  const insSession = db.prepare('INSERT INTO sessions (session_key, agent_id, created_at, updated_at) VALUES (?, ?, ?, ?)');
  const insRun = db.prepare(
    `INSERT INTO runs (run_id, session_key, agent_id, lease_id, parent_run_id, language, started_at, ended_at, duration_ms,
       outcome, exit_code, failure_class, stdout_chars, result_ref_count, result_ref_bytes, est_saved_tokens, saved_ratio)
     VALUES (?, ?, ?, ?, NULL, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  const insAudit = db.prepare('INSERT INTO audit_events (lease_id, run_id, tool, capability, decision, reason, at) VALUES (?, ?, ?, ?, ?, ?, ?)');
  const insTally = db.prepare('INSERT INTO run_tool_calls (run_id, tool, capability, decision, count) VALUES (?, ?, ?, ?, ?)');
  const now = Date.now();
  const span = 28 * 86_400_000;
  const totalRuns = sessions * runsPerSession;
  const eventsPerRun = totalEvents / totalRuns;
  let events = 0;
  let runIndex = 0;
  db.transaction(() => {
    for (let s = 0; s < sessions; s++) {
      const key = `s-bench-${hex(s, 6)}`;
      const agent = `agent-${s % 7}`;
      const sessionStart = now - span + Math.floor((s / sessions) * (span - 3_600_000));
      let t = sessionStart;
      for (let r = 0; r < runsPerSession; r++, runIndex++) {
        const runId = `r-${hex(runIndex, 12)}`;
        const leaseId = `l-${hex(runIndex, 12)}`;
        const duration = 200 + Math.floor(rand() * 20_000);
        const roll = rand();
        let outcome = 'success';
        let exit = 0;
        let cls = null;
        if (roll < 0.05) [outcome, exit, cls] = ['failure', 137, 'timeout'];
        else if (roll < 0.08) [outcome, exit, cls] = ['failure', 137, 'stdout_cap'];
        else if (roll < 0.16) [outcome, exit, cls] = ['failure', 1, 'nonzero_exit'];
        else if (roll < 0.17) [outcome, exit, cls] = ['failure', null, 'spawn_fail'];
        const refs = rand() < 0.3 ? 1 + Math.floor(rand() * 5) : 0;
        const refBytes = refs * (15_000 + Math.floor(rand() * 200_000));
        const stdoutChars = Math.floor(rand() * 4_000);
        const saved = refs > 0 ? Math.max(0, Math.floor((refBytes - stdoutChars) / 4)) : null;
        const ratio = refs > 0 ? saved / Math.ceil(refBytes / 4) : null;
        insRun.run(runId, key, agent, leaseId, rand() < 0.2 ? 'py' : 'ts', t, t + duration, duration, outcome, exit, cls, stdoutChars, refs, refBytes, saved, ratio);
        // Events: spread so the total lands on BENCH_EVENTS exactly.
        const n = runIndex === totalRuns - 1 ? totalEvents - events : Math.max(0, Math.round(eventsPerRun * (runIndex + 1)) - events);
        const tallies = new Map();
        for (let e = 0; e < n; e++) {
          const [tool, cap] = TOOLS[Math.floor(rand() * TOOLS.length)];
          const deny = rand() < 0.03;
          const reason = deny ? DENY_REASONS[Math.floor(rand() * DENY_REASONS.length)] : null;
          insAudit.run(leaseId, runId, tool, cap, deny ? 'deny' : 'allow', reason, t + Math.floor((e * duration) / Math.max(1, n)));
          const k = `${tool}|${cap}|${deny ? 'deny' : 'allow'}`;
          tallies.set(k, (tallies.get(k) ?? 0) + 1);
        }
        for (const [k, c] of tallies) {
          const [tool, cap, dec] = k.split('|');
          insTally.run(runId, tool, cap, dec, c);
        }
        events += n;
        t += duration + 1_000;
      }
      insSession.run(key, agent, sessionStart, t);
    }
  })();
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.exec('ANALYZE');
  const counts = {
    sessions: db.prepare('SELECT COUNT(*) AS n FROM sessions').get().n,
    runs: db.prepare('SELECT COUNT(*) AS n FROM runs').get().n,
    events: db.prepare('SELECT COUNT(*) AS n FROM audit_events').get().n,
  };
  store.close();
  return { ...counts, ms: performance.now() - t0, bytes: statSync(join(home, 'comis.db')).size };
}

function time(args) {
  const samples = [];
  let last;
  for (let i = 0; i < runsPerCase + 2; i++) {
    const start = process.hrtime.bigint();
    last = spawnSync(process.execPath, [bin, ...args], { env, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    const ms = Number(process.hrtime.bigint() - start) / 1e6;
    if (last.status !== 0) throw new Error(`comis ${args.join(' ')} exited ${last.status}: ${last.stderr}`);
    if (i >= 2) samples.push(ms);
  }
  samples.sort((a, b) => a - b);
  return { median: samples[Math.floor(samples.length / 2)], min: samples[0], max: samples[samples.length - 1], out: last.stdout };
}

const built = build();
process.stdout.write(`store: ${built.sessions} sessions, ${built.runs} runs, ${built.events} audit events, ` + `${(built.bytes / 1024 / 1024).toFixed(1)} MiB, built in ${(built.ms / 1000).toFixed(1)} s\n`);

const middle = `s-bench-${hex(Math.floor(sessions / 2), 6)}`;
const cases = [
  ['node -e 0 (baseline)', null, ['-e', '0']],
  ['comis --help (baseline)', ['--help']],
  [`comis explain ${middle}`, ['explain', middle]],
  [`comis explain ${middle} --json`, ['explain', middle, '--json']],
  ['comis explain --last', ['explain', '--last']],
  [`comis explain r-${hex(12345, 12)}`, ['explain', `r-${hex(12345, 12)}`]],
  ['comis fleet --since 30d', ['fleet', '--since', '30d']],
  ['comis fleet (24h)', ['fleet']],
  ['comis fleet --since 30d --json', ['fleet', '--since', '30d', '--json']],
];
process.stdout.write(`median of ${runsPerCase} runs after 2 warm-ups (ms), node ${process.version}, load average ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}\n`);
{
  const start = process.hrtime.bigint();
  const cold = spawnSync(process.execPath, [bin, 'fleet', '--since', '30d'], { env, encoding: 'utf8' });
  if (cold.status !== 0) throw new Error(`comis fleet exited ${cold.status}: ${cold.stderr}`);
  process.stdout.write(`${'comis fleet --since 30d (cold: builds the rollup)'.padEnd(40)} ${(Number(process.hrtime.bigint() - start) / 1e6).toFixed(1)} ms, once\n`);
}
let missed = 0;
let nodeMedian;
for (const [name, args, raw] of cases) {
  let r;
  if (raw) {
    const samples = [];
    for (let i = 0; i < runsPerCase + 2; i++) {
      const start = process.hrtime.bigint();
      spawnSync(process.execPath, raw, { env });
      if (i >= 2) samples.push(Number(process.hrtime.bigint() - start) / 1e6);
    }
    samples.sort((a, b) => a - b);
    r = { median: samples[Math.floor(samples.length / 2)], min: samples[0], max: samples[samples.length - 1] };
    nodeMedian = r.median;
  } else r = time(args);
  const gated = args && (args[0] === 'explain' || args[0] === 'fleet');
  const ratio = r.median / nodeMedian;
  // fleet and explain --last also carry the <= 3x node -e 0 target.
  const ratioGated = args && (args[0] === 'fleet' || (args[0] === 'explain' && args[1] === '--last'));
  const verdict = gated ? (r.median <= TARGET_MS && (!ratioGated || ratio <= 3) ? 'MET' : 'MISSED') : '';
  if (gated && verdict === 'MISSED') missed++;
  process.stdout.write(`${name.padEnd(40)} median ${r.median.toFixed(1).padStart(7)}  min ${r.min.toFixed(1).padStart(7)}  max ${r.max.toFixed(1).padStart(7)}  ${ratio.toFixed(2).padStart(5)}x node  ${verdict}\n`);
}
process.stdout.write(`target: explain and fleet each under ${TARGET_MS} ms wall (fleet and explain --last also <= 3x node -e 0) -> ${missed === 0 ? 'MET' : `MISSED (${missed})`}\n`);
if (process.env.BENCH_KEEP === '1') process.stdout.write(`store kept at ${home}\n`);
else rmSync(home, { recursive: true, force: true });
