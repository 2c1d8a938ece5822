#!/usr/bin/env node
// One-shot repair benchmark: the wall time a repair round adds to a failed run, against a local
// fake chat-completions server on 127.0.0.1 that answers at once (so model think time is ~0 and
// what is measured is comis's own cost: the model round trip, the repaired script's pre-flight,
// and its re-run in the same jail).
//
// Two figures, medians of N runs each (default 7; BENCH_RUNS=N), after two warm-up runs:
// - in-process: the runner's phase marks (COMIS_TIMING=1), from the first attempt's exit to the
//   end of the repair (model request + pre-flight + re-run);
// - end to end: `comis orchestrate bad.py` (repaired) minus `comis orchestrate bad.py --no-repair`
//   (the same first failure, no repair), and the ratio of the two.
// Run after `npm run build`, alone on the machine:  node bench/repair.mjs
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bin = join(root, 'bin/comis.js');
const runs = Number(process.env.BENCH_RUNS ?? 7);

const REPAIRED = "import comis_tools\nprint('repaired')\n";
let modelMs = 0;
const server = createServer((req, res) => {
  const t0 = performance.now();
  let body = '';
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    const model = JSON.parse(body).model;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion', created: 1, model, choices: [{ index: 0, message: { role: 'assistant', content: `\`\`\`python\n${REPAIRED}\`\`\`` }, finish_reason: 'stop' }] }));
    modelMs += performance.now() - t0;
  });
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const port = server.address().port;

const home = mkdtempSync(join(tmpdir(), 'comis-bench-repair-'));
mkdirSync(join(home, 'workspaces', 'default'), { recursive: true });
writeFileSync(join(home, 'config.yaml'), `agents:\n  default:\n    model:\n      baseUrl: http://127.0.0.1:${port}/v1\n      name: bench\n      class: small\n`);
const script = join(home, 'bad.py');
writeFileSync(script, 'import comis_tool\nprint(1)\n');
const env = { PATH: process.env.PATH, HOME: home, COMIS_HOME: home, COMIS_TIMING: '1' };

function once(args) {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const child = spawn(process.execPath, [bin, 'orchestrate', script, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c) => (stdout += c));
    child.stderr.on('data', (c) => (stderr += c));
    child.on('error', reject);
    child.on('close', (status) => {
      const wall = performance.now() - start;
      const marks = Object.fromEntries([...stderr.matchAll(/^timing (\S+) ([\d.]+)$/gm)].map((m) => [m[1], Number(m[2])]));
      resolve({ status, stdout, wall, marks });
    });
  });
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const repairedWall = [];
const plainWall = [];
const round = [];
const parts = { model: [], preflight: [], rerun: [] };
for (let i = 0; i < runs + 2; i++) {
  const r = await once(['--quiet']);
  if (r.status !== 0 || r.stdout !== 'repaired\n') throw new Error(`the repaired run did not succeed: ${r.status} ${r.stdout}`);
  const p = await once(['--no-repair']);
  if (p.status !== 1) throw new Error(`the --no-repair run should fail, exited ${p.status}`);
  if (i < 2) continue;
  repairedWall.push(r.wall);
  plainWall.push(p.wall);
  round.push(r.marks.repair - r.marks.exited);
  parts.model.push(r.marks['repair-model'] - r.marks.exited);
  parts.preflight.push(r.marks['repair-preflight'] - r.marks['repair-model']);
  parts.rerun.push(r.marks.repair - r.marks['repair-preflight']);
}
const [load1] = (await import('node:fs')).readFileSync('/proc/loadavg', 'utf8').split(' ');
const added = median(repairedWall) - median(plainWall);
process.stdout.write(`one-shot repair, median of ${runs} runs (ms), node ${process.version}, load average ${load1}\n`);
process.stdout.write(`repair round in-process (model round trip + pre-flight + re-run): median ${median(round).toFixed(1)}  min ${Math.min(...round).toFixed(1)}  max ${Math.max(...round).toFixed(1)}\n`);
process.stdout.write(
  `  of which: classify + prompt + model round trip ${median(parts.model).toFixed(1)}, pre-flight of the repaired script ${median(parts.preflight).toFixed(1)}, re-run in the same jail ${median(parts.rerun).toFixed(1)}\n`,
);
process.stdout.write(`fake model handling time (think time excluded): ${(modelMs / (runs + 2)).toFixed(2)} ms per request\n`);
process.stdout.write(`end to end: repaired ${median(repairedWall).toFixed(1)}  --no-repair ${median(plainWall).toFixed(1)}  added ${added.toFixed(1)}  ratio ${(median(repairedWall) / median(plainWall)).toFixed(2)}x\n`);
server.close();
rmSync(home, { recursive: true, force: true });
