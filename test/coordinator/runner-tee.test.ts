import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { loadConfig, resolveAgent } from '../../src/lib/config/load.js';
import { runOrchestrate } from '../../src/lib/orchestrate/runner.js';
import { boundStdout } from '../../src/lib/orchestrate/stdout.js';
import { tempDir } from '../helpers/temp.js';

describe('runOrchestrate stdoutFile', () => {
  it('tees the full stdout to a file and returns exactly what boundStdout would', async () => {
    const home = tempDir('comis-tee-');
    const agent = resolveAgent(await loadConfig({ home }));
    const file = join(tempDir(), 'out.txt');
    const source = "for (let i = 0; i < 20000; i++) console.log(String(i).padStart(12, '.'));";
    const res = await runOrchestrate({ source, displayName: 'tee.js', language: 'js', agent, home, sessionKey: 's', stdoutFile: file });
    expect(res.public.outcome).toBe('success');
    const full = readFileSync(file, 'utf8');
    expect(full.length).toBe(20000 * 13);
    expect(res.public.stdout).toBe(boundStdout(full).text);
    expect(res.public.stdoutTruncated).toBe(true);
    // An existing file is never overwritten (O_EXCL | O_NOFOLLOW): the run fails before the script starts.
    const again = await runOrchestrate({ source: 'console.log(1)', displayName: 'x.js', language: 'js', agent, home, sessionKey: 's', stdoutFile: file });
    expect(again.public.failureClass).toBe('spawn_fail');
    expect(readFileSync(file, 'utf8').length).toBe(20000 * 13);
  });

  it('an aborted signal kills the run', async () => {
    const home = tempDir('comis-tee-');
    const agent = resolveAgent(await loadConfig({ home }));
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 300);
    const res = await runOrchestrate({ source: 'setInterval(() => {}, 1000)', displayName: 'a.js', language: 'js', agent, home, sessionKey: 's', signal: controller.signal, timeoutMs: 600_000 });
    expect(res.public.outcome).toBe('failure');
    expect(res.public.failureClass).toBe('nonzero_exit');
  });
});
