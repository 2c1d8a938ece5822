// Turns between a bench process and a jailed script, so a subject measured from inside the jail
// and its baseline measured in the bench process run in alternating blocks of the same run (the
// load of one minute then weighs on both sides of a pair alike). The only channel both sides
// share is the run's workspace (the jail has no network): the bench drops `go-<b>` when it is the
// script's turn, the script answers `done-<b>.json` when its block is over; each side waits on an
// inotify watch of the directory (a 50 ms poll is the safety net), so the side that waits burns
// no CPU while the other measures.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, renameSync, watch, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Resolves once `dir/name` exists (written whole: each side renames its file into place). */
export function waitForFile(dir, name, timeoutMs = 600_000) {
  const path = join(dir, name);
  return new Promise((resolve, reject) => {
    let watcher;
    const finish = (err) => {
      clearInterval(poll);
      clearTimeout(limit);
      watcher?.close();
      if (err) reject(err);
      else resolve(path);
    };
    const check = () => existsSync(path) && finish();
    const poll = setInterval(check, 50);
    const limit = setTimeout(() => finish(new Error(`no ${name} in ${timeoutMs} ms`)), timeoutMs);
    try {
      watcher = watch(dir, check);
    } catch {
      // no inotify: the poll alone
    }
    check();
  });
}

function writeWhole(dir, name, text) {
  const tmp = join(dir, `.${name}.tmp`);
  writeFileSync(tmp, text, { mode: 0o644 });
  renameSync(tmp, join(dir, name));
}

/** Host side: hands turn `b` to the script and resolves with what its block reported. */
export async function scriptTurn(workspace, b) {
  writeWhole(workspace, `go-${b}`, '');
  const path = await waitForFile(workspace, `done-${b}.json`);
  return JSON.parse(readFileSync(path, 'utf8'));
}

/**
 * The same protocol as source text for the jailed script (an ES module in the workspace's cwd):
 * `await myTurn(b)` waits for `go-<b>`, `endTurn(b, data)` reports the block.
 */
export const JAIL_TURNS_SOURCE = `
import { existsSync as __exists, renameSync as __rename, watch as __watch, writeFileSync as __write } from 'node:fs';
function myTurn(b) {
  const name = 'go-' + b;
  return new Promise((resolve) => {
    let w;
    const check = () => { if (__exists(name)) { clearInterval(p); w?.close(); resolve(); } };
    const p = setInterval(check, 50);
    try { w = __watch('.', check); } catch {}
    check();
  });
}
function endTurn(b, data) {
  __write('.done-' + b + '.tmp', JSON.stringify(data), { mode: 0o644 });
  __rename('.done-' + b + '.tmp', 'done-' + b + '.json');
}
`;

export const pct = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/**
 * Starts `comis orchestrate <script>` of the tree at `root` for a turns bench (with
 * BENCH_COMIS_NODE_ARGS before bin/comis.js, if set), and gives the
 * turn function: `turn(b)` hands block b to the script and resolves with its report, or rejects
 * with the run's stderr if the run exits before its blocks are done; `stderr()` is what it
 * wrote so far.
 */
export function startTurnedRun(root, script, workspace, env) {
  // BENCH_COMIS_NODE_ARGS: node options for the comis process only (space-separated), e.g.
  // `--cpu-prof --cpu-prof-dir=/tmp/p` to profile its side of the calls (NODE_OPTIONS refuses --cpu-prof).
  const nodeArgs = (process.env.BENCH_COMIS_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...nodeArgs, join(root, 'bin/comis.js'), 'orchestrate', script, '--quiet', '--timeout-ms', '600000'], {
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  const exited = new Promise((resolve) => child.on('exit', resolve));
  const failed = exited.then((code) => {
    throw new Error(`orchestrate exited ${code} before its blocks were done: ${stderr}`);
  });
  failed.catch(() => {}); // observed through turn(); a run that ends after the last turn is not an error
  return { child, exited, stderr: () => stderr, turn: (b) => Promise.race([scriptTurn(workspace, b), failed]) };
}
