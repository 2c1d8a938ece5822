/**
 * Real crash tests: comis is SIGKILLed in the middle of a durable run, at
 * several points, and the next command that opens the store (here `comis
 * fleet`) settles the run: resumable with reason `interrupted` when its
 * checkpoint survived, an orphan with reason `interrupted` otherwise, never a
 * run stuck `running`; its leftover run directory is reclaimed, and `explain`
 * shows it. Run `npm run build` first.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { comisBin, parseJson, repoRoot } from '../helpers/cli.js';
import { makeHome, type Home } from '../helpers/orchestrate.js';
import { DURABLE_CONFIG, durableRow } from './helpers.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function until<T>(what: string, probe: () => T | undefined, timeoutMs = 60_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

/** Starts `comis orchestrate <script>` in the background; resolves with its pid and the run id once the durable area exists. */
async function startDurable(h: Home, script: string, extra: string[] = []): Promise<{ child: ReturnType<typeof spawn>; runId: string; exited: Promise<number | null> }> {
  const child = spawn(process.execPath, [comisBin, 'orchestrate', ...(script ? [script] : []), ...extra], { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: h.home, COMIS_HOME: h.home }, cwd: repoRoot, stdio: 'ignore' });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const known = new Set(existsSync(join(h.home, 'durable')) ? readdirSync(join(h.home, 'durable')) : []);
  const runId = await until('the durable area', () => (existsSync(join(h.home, 'durable')) ? readdirSync(join(h.home, 'durable')).find((d) => !known.has(d)) : undefined));
  return { child, runId, exited };
}

/**
 * The row's status while comis may still be creating the store: a store file
 * whose migrations have not run yet (no table) reads as "not yet", not as an error.
 */
function statusNow(home: string, runId: string): unknown {
  if (!existsSync(join(home, 'comis.db'))) return undefined;
  try {
    return durableRow(home, runId)?.status;
  } catch (err) {
    if (/no such table/.test((err as Error).message)) return undefined;
    throw err;
  }
}

function runDirsOf(home: string, runId: string): string[] {
  return existsSync(join(home, 'runs')) ? readdirSync(join(home, 'runs')).filter((n) => n.endsWith(`-${runId}`)) : [];
}

const STEPS = `import { comis_tools } from './comis_tools.js';
const last = await comis_tools.resume();
let i = last ? last.state.i : 0;
console.log('start ' + i);
if (!last) await new Promise((r) => setTimeout(r, 1500));
for (; i < 3; i++) {
  await comis_tools.checkpoint({ i: i + 1 });
  if (i === 0 && !last) await new Promise((r) => setTimeout(r, 120000));
}
console.log('done ' + i);
`;

describe('SIGKILL of comis during a durable run', () => {
  it('after a checkpoint: the next command marks it resumable (interrupted), reclaims its run dir, explain shows it, and --resume continues', async () => {
    const h = makeHome(DURABLE_CONFIG);
    const script = h.script('steps.mjs', STEPS);
    const run = await startDurable(h, script, ['--timeout-ms', '60000']);
    await until('the first checkpoint', () => (existsSync(join(h.home, 'durable', run.runId, 'checkpoint.json')) ? true : undefined));
    expect(durableRow(h.home, run.runId)).toMatchObject({ status: 'running' });
    run.child.kill('SIGKILL');
    await run.exited;
    // Positive control: before any command runs, the row is still "running" and the run dir is there.
    expect(durableRow(h.home, run.runId)).toMatchObject({ status: 'running' });
    expect(runDirsOf(h.home, run.runId)).toHaveLength(1);

    const fleet = h.run(['fleet', '--json']);
    expect(fleet.status, fleet.stderr).toBe(0);
    expect(parseJson(fleet.stdout).result.findings.find((f: { code: string }) => f.code === 'runs_resumable')).toMatchObject({ count: 1 });
    expect(durableRow(h.home, run.runId)).toMatchObject({ status: 'resumable', reason: 'interrupted' });
    expect(runDirsOf(h.home, run.runId)).toEqual([]);
    expect(existsSync(join(h.home, 'durable', run.runId, 'script.json'))).toBe(true);

    const explain = h.run(['explain', run.runId, '--json']);
    expect(explain.status, explain.stderr).toBe(0);
    expect(parseJson(explain.stdout).result.durable).toEqual([expect.objectContaining({ runId: run.runId, status: 'resumable', reason: 'interrupted' })]);
    expect(h.run(['explain', run.runId]).stdout).toContain(`Durable orchestrate run ${run.runId}: resumable (interrupted) until`);

    const resumed = h.run(['orchestrate', '--resume', run.runId]);
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(resumed.stdout).toBe('start 1\ndone 3\n');
  });

  it('before any checkpoint: the next command makes it an orphan (interrupted) and reclaims its area and run dir', async () => {
    const h = makeHome(DURABLE_CONFIG);
    // Stalls before its first call, so the kill lands before any checkpoint whatever the load.
    const script = h.script('stall.mjs', `import { comis_tools } from './comis_tools.js';\nawait new Promise((r) => setTimeout(r, 120000));\nawait comis_tools.checkpoint({ i: 1 });\n`);
    const run = await startDurable(h, script, ['--timeout-ms', '60000']);
    await until('the running row', () => (statusNow(h.home, run.runId) === 'running' ? true : undefined));
    expect(existsSync(join(h.home, 'durable', run.runId, 'checkpoint.json'))).toBe(false);
    run.child.kill('SIGKILL');
    await run.exited;
    expect(existsSync(join(h.home, 'durable', run.runId))).toBe(true);

    const explain = h.run(['explain', run.runId, '--json']);
    expect(explain.status, explain.stderr).toBe(0);
    expect(parseJson(explain.stdout).result.durable).toEqual([expect.objectContaining({ runId: run.runId, status: 'orphaned', reason: 'interrupted' })]);
    expect(existsSync(join(h.home, 'durable', run.runId))).toBe(false);
    expect(runDirsOf(h.home, run.runId)).toEqual([]);
    const fleet = parseJson(h.run(['fleet', '--json']).stdout);
    expect(fleet.result.findings.find((f: { code: string }) => f.code === 'runs_orphaned')).toMatchObject({ count: 1 });
    const resume = h.run(['orchestrate', '--resume', run.runId]);
    expect(resume.status).toBe(2);
    expect(resume.stderr).toContain('is not resumable: it is orphaned (interrupted)');
  });

  it('during a resumed run: the resumed run is settled in turn; the original stays resumed by it', async () => {
    const h = makeHome(DURABLE_CONFIG);
    const script = h.script('steps.mjs', STEPS);
    const first = h.run(['orchestrate', script, '--timeout-ms', '6000', '--json']);
    const r1 = parseJson(first.stdout).result.runId as string;
    expect(durableRow(h.home, r1)).toMatchObject({ status: 'resumable' });
    // The resumed attempt does not stall, so stall it with a tight kill right after its area appears.
    const run = await startDurable(h, '', ['--resume', r1]);
    await until('the resumed run row', () => (statusNow(h.home, run.runId) === 'running' ? true : undefined));
    run.child.kill('SIGKILL');
    await run.exited;
    h.run(['fleet', '--json']);
    const row = durableRow(h.home, run.runId);
    expect(row?.status === 'resumable' || row?.status === 'orphaned').toBe(true);
    expect(row?.reason).toBe('interrupted');
    expect(durableRow(h.home, r1)).toMatchObject({ status: 'resumed', resumed_by: run.runId });
  });
});
