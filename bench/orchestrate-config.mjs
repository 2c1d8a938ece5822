#!/usr/bin/env node
// `comis orchestrate hello.js` WITH a realistic config.yaml (several agents, limits, tool
// policy) against the bare bwrap + node command the jail is built from and against Anthropic's
// sandbox-runtime (`srt`) on the same script. The three are run interleaved (one of each per
// round, so a contended machine slows all of them alike) and the ratios are of the paired medians.
//
// srt is not a dependency of comis: install it in the bench's own dir first
//   npm install --prefix /tmp/srt-bench @anthropic-ai/sandbox-runtime   (+ apt-get install socat ripgrep)
// and point SRT_BIN at it (default /tmp/srt-bench/node_modules/.bin/srt); without it the srt
// column is skipped. Run after `npm run build`:  node bench/orchestrate-config.mjs
// (BENCH_COMPARE=<other built checkout> adds that build's comis to the same rounds: an A/B.)
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { BARE_SYSTEM_TREE } from './lib/bare-jail.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bin = join(root, 'bin/comis.js');
const runs = Number(process.env.BENCH_RUNS ?? 15);
const srt = process.env.SRT_BIN ?? '/tmp/srt-bench/node_modules/.bin/srt';
const home = mkdtempSync(join(tmpdir(), 'comis-bench-'));
const refdata = mkdtempSync(join(tmpdir(), 'comis-bench-ref-'));
const hello = join(home, 'hello.js');
writeFileSync(hello, "console.log('hello');\n");
mkdirSync(join(home, 'workspaces', 'main'), { recursive: true });
/** A config a real user might keep: four agents, limits, tool policies, an extra read-only path. */
const REALISTIC_CONFIG = `$schema: ./config.schema.json
defaultAgent: main
agents:
  main:
    workspace: ./workspaces/main
    autonomy:
      profile: standard
      write: true
      limits:
        timeoutMs: 30000
        memoryMb: 4096
        maxProcesses: 64
        resultFileMb: 16
        resultRunMb: 128
        stdoutCapBytes: 2097152
    skills:
      toolPolicy:
        profile: coding
        allow: [group:resultref]
        deny: [write]
      execSandbox:
        readOnlyAllowPaths: [${refdata}]
  reviewer:
    autonomy:
      profile: standard
      role: worker
      limits: { timeoutMs: 20000, workspaceMb: 512 }
    skills:
      toolPolicy: { profile: minimal, allow: [read, grep] }
  lead:
    autonomy:
      profile: unattended
      role: coordinator
      limits: { timeoutMs: 120000 }
    skills:
      toolPolicy: { profile: supervisor }
  nightly:
    autonomy:
      profile: max
      approvals: false
      limits: { timeoutMs: 600000, memoryMb: 8192, tmpSizeMb: 256 }
    skills:
      toolPolicy: { profile: full, deny: [group:web] }
`;
writeFileSync(join(home, 'config.yaml'), REALISTIC_CONFIG);
const env = { PATH: '/usr/local/bin:/usr/bin:/bin', HOME: home, COMIS_HOME: home };
// BENCH_COMPARE=<another built checkout> (e.g. main's): its comis runs in the same rounds, in a home of
// its own (its caches are keyed by its own build), for an A/B of two builds under the same load.
const compare = process.env.BENCH_COMPARE;
const compareHome = compare ? mkdtempSync(join(tmpdir(), 'comis-bench-b-')) : undefined;
if (compareHome) {
  mkdirSync(join(compareHome, 'workspaces', 'main'), { recursive: true });
  writeFileSync(join(compareHome, 'config.yaml'), REALISTIC_CONFIG);
}

function once(cmd, args, opts = {}) {
  const t = process.hrtime.bigint();
  const r = spawnSync(cmd, args, { env, encoding: 'utf8', cwd: home, ...opts });
  const ms = Number(process.hrtime.bigint() - t) / 1e6;
  if (r.status !== 0 || r.stdout !== 'hello\n') throw new Error(`${cmd} ${args.join(' ')}: ${r.status} ${r.stdout} ${r.stderr}`);
  return ms;
}
const median = (s) => [...s].sort((a, b) => a - b)[Math.floor(s.length / 2)];

const bareBwrap = ['--unshare-all', '--die-with-parent', '--new-session', ...BARE_SYSTEM_TREE, '--tmpfs', '/tmp', '--ro-bind', hello, '/hello.js', process.execPath, '/hello.js'];
const haveSrt = existsSync(srt);
const subjects = [
  ['bare bwrap + node', () => once('bwrap', bareBwrap)],
  ['comis orchestrate (config)', () => once(process.execPath, [bin, 'orchestrate', '--quiet', hello])],
  ...(haveSrt ? [['srt node hello.js', () => once(srt, [process.execPath, hello], { env: { ...env, HOME: home } })]] : []),
  ...(compare ? [['comis (BENCH_COMPARE)', () => once(process.execPath, [join(compare, 'bin/comis.js'), 'orchestrate', '--quiet', hello], { env: { ...env, HOME: compareHome, COMIS_HOME: compareHome } })]] : []),
];
const samples = subjects.map(() => []);
for (let i = 0; i < runs + 2; i++) {
  subjects.forEach(([, f], j) => {
    const ms = f();
    if (i >= 2) samples[j].push(ms); // two warm-up rounds fill caches (and comis's own)
  });
}
const m = samples.map(median);
process.stdout.write(`orchestrate hello.js with a 4-agent config.yaml, interleaved, median of ${runs} rounds (ms), node ${process.version}\n`);
subjects.forEach(([name], j) => process.stdout.write(`${name.padEnd(28)} ${m[j].toFixed(1).padStart(7)}\n`));
const vsBwrap = m[1] / m[0];
process.stdout.write(`ratio comis/bare-bwrap ${vsBwrap.toFixed(2)} (target <= 2)  ${vsBwrap <= 2 ? 'MET' : 'MISSED'}\n`);
if (haveSrt) {
  const vsSrt = m[1] / m[2];
  process.stdout.write(`ratio comis/srt        ${vsSrt.toFixed(2)} (target <= 0.4)  ${vsSrt <= 0.4 ? 'MET' : 'MISSED'}\n`);
} else process.stdout.write(`srt not found at ${srt}: skipped (see the header of this file)\n`);
if (compare) process.stdout.write(`ratio comis/BENCH_COMPARE ${(m[1] / m[subjects.length - 1]).toFixed(3)} (${compare})\n`);
process.stdout.write(`load average ${readFileSync('/proc/loadavg', 'utf8').trim()}\n`);

// Where the time goes: COMIS_TIMING=1 makes the command print its phase marks to stderr. With
// BENCH_COMPARE, that build's marks are taken in the same rounds (alternated) and shown beside.
const marked = [
  { bin, env: { ...env, COMIS_TIMING: '1' }, phases: new Map() },
  ...(compare ? [{ bin: join(compare, 'bin/comis.js'), env: { ...env, HOME: compareHome, COMIS_HOME: compareHome, COMIS_TIMING: '1' }, phases: new Map() }] : []),
];
for (let i = 0; i < Math.min(runs, 10); i++) {
  for (const m of marked) {
    const r = spawnSync(process.execPath, [m.bin, 'orchestrate', '--quiet', hello], { env: m.env, encoding: 'utf8', cwd: home });
    for (const x of r.stderr.matchAll(/^timing(-cpu)? (\S+) ([\d.]+)$/gm)) {
      if (!m.phases.has(x[2])) m.phases.set(x[2], { wall: [], cpu: [] });
      m.phases.get(x[2])[x[1] ? 'cpu' : 'wall'].push(Number(x[3]));
    }
  }
}
// The CPU column is comis's own (all its threads), which a loaded machine inflates far less than the wall.
const cell = (v) => (v ? `${median(v.wall).toFixed(1).padStart(7)} ${v.cpu.length ? median(v.cpu).toFixed(1).padStart(7) : '       '}` : ' '.repeat(15));
process.stdout.write(`phase marks (median ms since process start: wall, CPU)${compare ? '; this build | BENCH_COMPARE' : ''}:\n`);
const names = [...new Set(marked.flatMap((m) => [...m.phases.keys()]))];
for (const name of names) process.stdout.write(`  ${name.padEnd(22)} ${marked.map((m) => cell(m.phases.get(name))).join('  | ')}\n`);
rmSync(home, { recursive: true, force: true });
if (compareHome) rmSync(compareHome, { recursive: true, force: true });
rmSync(refdata, { recursive: true, force: true });
