/**
 * Issue 10, hole 7: every child of a run dies with the run — also the daemon-side
 * grep worker threads, which live in the comis process and would otherwise run on
 * until their own 10 s grep deadline after the run that started them is over.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { loadConfig, resolveAgent } from '../../src/lib/config/load.js';
import { runOrchestrate } from '../../src/lib/orchestrate/runner.js';
import { DEFAULT_GREP_LIMITS, grepWorkersAlive } from '../../src/lib/tools/grep.js';
import { tempDir } from '../helpers/temp.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('daemon-side tool workers die with their run', () => {
  it('a catastrophic grep still running when the run times out is terminated when the run returns (control: it was running during the run)', async () => {
    const home = tempDir('comis-workers-');
    const agent = resolveAgent(await loadConfig({ home }));
    mkdirSync(agent.workspace, { recursive: true });
    // (a|aa)+$ backtracks exponentially on a long run of a's that does not end the line.
    writeFileSync(join(agent.workspace, 'evil.txt'), `${'a'.repeat(60)}b\n`);
    const script = `import { comis_tools } from './comis_tools.js';
console.log('ATTACK-LINE');
await comis_tools.grep({ pattern: '(a|aa)+$', path: 'evil.txt' });
console.log('grep returned');`;
    let sawAlive = 0;
    const probe = setInterval(() => (sawAlive = Math.max(sawAlive, grepWorkersAlive())), 20);
    const run = await runOrchestrate({ source: script, displayName: 'evil.mjs', language: 'js', agent, home, sessionKey: 's', timeoutMs: 1500 });
    clearInterval(probe);
    // Positive control: the script reached the attack and the worker really ran during the run.
    expect(run.public.stdout).toBe('ATTACK-LINE\n');
    expect(run.public.failureClass).toBe('timeout');
    expect(sawAlive).toBeGreaterThan(0);
    // The run is over: its worker is gone long before the grep deadline (10 s) would have ended it.
    expect(DEFAULT_GREP_LIMITS.timeoutMs).toBeGreaterThanOrEqual(10_000);
    for (let i = 0; i < 50 && grepWorkersAlive() > 0; i++) await sleep(20);
    expect(grepWorkersAlive()).toBe(0);
  }, 60_000);
});
