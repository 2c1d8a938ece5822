import { chmodSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { parseJson, runComis } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp.js';

// `comis orchestrate` opens the store only once the jail is spawned (or at the end, for a run that
// never got that far). These runs fail at or before the spawn: each must still be recorded.
describe('the store opened after the spawn', () => {
  it('records a run whose jail could not exec the interpreter (spawn_fail)', () => {
    const bin = tempDir();
    const hostOnly = tempDir(); // not bound into the jail: the interpreter's shebang resolves only on the host
    symlinkSync('/bin/sh', join(hostOnly, 'hostsh'));
    // A python3 that answers the host-side query (executable, base prefix, version) but cannot start inside the jail.
    writeFileSync(join(bin, 'python3'), `#!${join(hostOnly, 'hostsh')}\necho '${JSON.stringify([join(bin, 'python3'), bin, '3.11.2'])}'\n`);
    chmodSync(join(bin, 'python3'), 0o755);
    const script = join(tempDir(), 'x.py');
    writeFileSync(script, 'print(1)\n');
    const home = tempDir();
    const env = { PATH: `${bin}:${process.env.PATH ?? '/usr/bin:/bin'}` };
    const run = runComis(['orchestrate', script], { home, env });
    expect(run.status, run.stderr).toBe(1);
    expect(run.stderr).toMatch(/failed: spawn_fail/);
    const explained = parseJson(runComis(['explain', '--last', '--json'], { home }).stdout);
    expect(explained.result.orchestrate).toHaveLength(1);
    expect(explained.result.orchestrate[0].failureClass).toBe('spawn_fail');
  });
  // A run refused before any jail existed is recorded too: test/e2e/refused-runs.test.ts.
});
