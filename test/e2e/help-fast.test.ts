import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { repoRoot, runComis } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp.js';

/** `comis --help` as oclif itself renders it, bypassing bin/comis.js's fast path. */
function oclifHelp(env: Record<string, string> = {}): string {
  const res = spawnSync(process.execPath, ['--input-type=module', '-e', `const { execute } = await import('@oclif/core'); await execute({ dir: ${JSON.stringify(`file://${join(repoRoot, 'package.json')}`)}, args: ['--help'] });`], {
    cwd: repoRoot,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tempDir(), ...env },
    encoding: 'utf8',
  });
  expect(res.status, res.stderr).toBe(0);
  return res.stdout;
}

describe('comis --help without oclif', () => {
  it('prints exactly what oclif prints, and loads no oclif module', () => {
    const trace = join(tempDir(), 'trace.txt');
    const fast = runComis(['--help'], { home: tempDir(), env: { NODE_OPTIONS: `--import=${join(repoRoot, 'test/helpers/trace-imports.mjs')}`, COMIS_TRACE_IMPORTS: trace } });
    expect(fast.status).toBe(0);
    expect(fast.stdout).toBe(oclifHelp());
    // Positive control for the trace: the oclif path does load @oclif/core.
    expect(
      readFileSync(trace, 'utf8')
        .split('\n')
        .filter((m) => m.includes('@oclif')),
    ).toEqual([]);
    const slowTrace = join(tempDir(), 'trace.txt');
    runComis(['--help'], { home: tempDir(), env: { FORCE_COLOR: '0', NODE_OPTIONS: `--import=${join(repoRoot, 'test/helpers/trace-imports.mjs')}`, COMIS_TRACE_IMPORTS: slowTrace } });
    expect(readFileSync(slowTrace, 'utf8')).toContain('@oclif');
  });

  it('shows this machine’s version line, the same as --version', () => {
    const home = tempDir();
    const version = runComis(['--version'], { home }).stdout.trim();
    expect(runComis(['--help'], { home }).stdout).toContain(`VERSION\n  ${version}\n`);
  });

  it('leaves the cases it was not rendered for to oclif: a set width, forced color', () => {
    for (const env of [{ OCLIF_COLUMNS: '50' }, { FORCE_COLOR: '1' }] as Record<string, string>[]) {
      const res = runComis(['--help'], { home: tempDir(), env });
      expect(res.stdout, JSON.stringify(env)).toBe(oclifHelp(env));
    }
    expect(runComis(['--help'], { home: tempDir(), env: { OCLIF_COLUMNS: '50' } }).stdout).not.toBe(oclifHelp());
  });
});
