/**
 * A coordinator plan run (`comis run`) whose comis process is SIGKILLed
 * mid-run: the next command that opens the store marks it `interrupted`
 * (never a plan stuck `running`), and `comis run --follow` on it says the plan
 * was interrupted and exits 1, whether it was following when the kill came or
 * starts after it. Run `npm run build` first.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { openStore } from '../../src/lib/store/store.js';
import { comisBin, parseJson, repoRoot } from '../helpers/cli.js';
import { makeHome } from '../helpers/orchestrate.js';
import { tempDir } from '../helpers/temp.js';

function startComis(args: string[], home: string) {
  const child = spawn(process.execPath, [comisBin, ...args], { cwd: repoRoot, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, COMIS_HOME: home }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  const waiters: { pred: (s: string) => boolean; resolve: () => void }[] = [];
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    for (const w of waiters.splice(0)) (w.pred(out) ? w.resolve : () => waiters.push(w))();
  });
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  return {
    child,
    exited,
    stdout: () => out,
    stderr: () => err,
    waitFor: (pred: (s: string) => boolean) => new Promise<void>((resolve) => (pred(out) ? resolve() : waiters.push({ pred, resolve }))),
  };
}

/** The plan run's stored status, read without the start-up sweep. */
function planStatus(home: string, planRunId: string): string | undefined {
  const s = openStore({ home, readonly: true });
  try {
    return (s.db.prepare('SELECT status FROM plan_runs WHERE plan_run_id = ?').get(planRunId) as { status: string } | undefined)?.status;
  } finally {
    s.close();
  }
}

const PLAN = 'children:\n  - id: forever\n    language: js\n    inline: "setInterval(() => {}, 1000)"\n    timeoutMs: 600000\n  - id: later\n    language: js\n    dependsOn: [forever]\n    inline: "console.log(1)"\n';

describe('SIGKILL of comis during a plan run', () => {
  it('the next start marks the plan interrupted, and --follow says so instead of exiting silently', async () => {
    const h = makeHome();
    const plan = join(tempDir('comis-plan-'), 'plan.yaml');
    writeFileSync(plan, PLAN);
    const runner = startComis(['run', plan, '--json'], h.home);
    await runner.waitFor((s) => s.includes('"child:started"'));
    const planRunId = parseJson(runner.stdout().split('\n')[0]!).planRunId as string;
    expect(planRunId).toMatch(/^p-[0-9a-f]+$/);
    // A follower already tailing the run when the kill comes.
    const early = startComis(['run', '--follow', planRunId, '--no-tui'], h.home);
    await early.waitFor((s) => s.includes('forever'));
    expect(planStatus(h.home, planRunId)).toBe('running');

    runner.child.kill('SIGKILL');
    await runner.exited;
    expect(await early.exited).toBe(1);
    expect(early.stderr()).toContain(`comis: plan run ${planRunId} was interrupted: the comis process running it is gone`);
    // Positive control: nothing opened the store for writing yet, so the row still says running.
    expect(planStatus(h.home, planRunId)).toBe('running');

    // Any command that opens the store runs the start-up sweep.
    const fleet = h.run(['fleet', '--json']);
    expect(fleet.status, fleet.stderr).toBe(0);
    expect(planStatus(h.home, planRunId)).toBe('interrupted');

    // A follower that starts afterwards: the recorded events, then the message, exit 1.
    const late = h.run(['run', '--follow', planRunId, '--no-tui']);
    expect(late.status).toBe(1);
    expect(late.stdout).toContain('forever');
    expect(late.stderr).toContain(`comis: plan run ${planRunId} was interrupted: the comis process running it is gone; its finished children stay recorded`);
    const json = h.run(['run', '--follow', planRunId, '--json']);
    expect(json.status).toBe(1);
    const lines = json.stdout.trim().split('\n');
    expect(parseJson(lines.at(-1)!).result).toEqual({ planRunId, status: 'interrupted' });
  });
});
