import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { comisBin, repoRoot, runComis, type CliResult } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp.js';

/** The same command through oclif (the command class), bypassing bin/comis.js's fast paths. */
function viaOclif(args: string[], home: string): CliResult {
  const res = spawnSync(
    process.execPath,
    ['--input-type=module', '-e', `const { execute } = await import('@oclif/core'); await execute({ dir: ${JSON.stringify(`file://${comisBin}`)}, args: ${JSON.stringify(args)} });`],
    { cwd: repoRoot, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, COMIS_HOME: home }, encoding: 'utf8' },
  );
  return { status: res.status, stdout: res.stdout, stderr: res.stderr };
}

function same(args: string[], home: string): CliResult {
  const fast = runComis(args, { home });
  const slow = viaOclif(args, home);
  expect({ status: fast.status, stdout: fast.stdout, stderr: fast.stderr }, args.join(' ')).toEqual({ status: slow.status, stdout: slow.stdout, stderr: slow.stderr });
  return fast;
}

describe('explain --last and jail probe without oclif', () => {
  it('explain --last: the same output, envelope and exit code as the oclif command, with and without runs', () => {
    const home = tempDir();
    expect(same(['explain', '--last'], home).status).toBe(2); // nothing recorded yet
    expect(same(['explain', '--last', '--json'], home).stdout).toContain('"NOT_FOUND"');
    const script = join(tempDir(), 'hello.js');
    spawnSync('sh', ['-c', `printf "console.log('hi')\\n" > ${script}`]);
    expect(runComis(['orchestrate', '--quiet', script], { home }).status).toBe(0);
    expect(same(['explain', '--last'], home).stdout).toMatch(/Verdict: no failure/);
    expect(same(['explain', '--last', '--json'], home).stdout).toContain('"status": "ok"');
  });

  it('jail probe: the same report and exit code as the oclif command', () => {
    const home = tempDir();
    expect(same(['jail', 'probe', '--json'], home).stdout).toContain('"working": true');
    expect(same(['jail', 'probe'], home).stdout).toMatch(/^Sandbox provider: bubblewrap/);
  });

  it('any other argument list still goes through oclif (usage errors included)', () => {
    const home = tempDir();
    const bad = runComis(['explain', '--last', '--bogus'], { home });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/Error \[USAGE\]: Nonexistent flag: --bogus/);
    expect(runComis(['jail', 'probe', '--help'], { home }).stdout).toMatch(/USAGE/);
  });
});
