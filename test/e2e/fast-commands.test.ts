import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { repoRoot, runComis, type CliResult } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp.js';

/** The same command through oclif (the command class), bypassing bin/comis.js's fast paths. */
function viaOclif(args: string[], home: string): CliResult {
  const res = spawnSync(
    process.execPath,
    ['--input-type=module', '-e', `const { execute } = await import('@oclif/core'); await execute({ dir: ${JSON.stringify(`file://${join(repoRoot, 'package.json')}`)}, args: ${JSON.stringify(args)} });`],
    {
      cwd: repoRoot,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, COMIS_HOME: home },
      encoding: 'utf8',
    },
  );
  return { status: res.status, stdout: res.stdout, stderr: res.stderr };
}

// Fleet prints its window's bounds, which move with the clock between the two calls.
const clock = (text: string): string => text.replace(/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z/g, '<time>');

function same(args: string[], home: string): CliResult {
  const fast = runComis(args, { home });
  const slow = viaOclif(args, home);
  expect({ status: fast.status, stdout: clock(fast.stdout), stderr: fast.stderr }, args.join(' ')).toEqual({ status: slow.status, stdout: clock(slow.stdout), stderr: slow.stderr });
  return fast;
}

describe('explain --last, jail probe and fleet without oclif', () => {
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

  it('fleet [--since X] [--json]: the same output, envelope and exit code as the oclif command, with and without runs', () => {
    const home = tempDir();
    expect(same(['fleet'], home).stdout).toMatch(/0 runs/);
    expect(same(['fleet', '--since', '30d', '--json'], home).stdout).toContain('"status": "ok"');
    const script = join(tempDir(), 'hello.js');
    spawnSync('sh', ['-c', `printf "console.log('hi')\\n" > ${script}`]);
    expect(runComis(['orchestrate', '--quiet', script], { home }).status).toBe(0);
    expect(same(['fleet', '--since', '30d'], home).stdout).toMatch(/1 orchestrate run /);
    expect(same(['fleet', '--since=2w', '--json'], home).stdout).toContain('"runCount": 1');
    // A bad --since is the same usage error either way.
    expect(same(['fleet', '--since', 'yesterday'], home).status).toBe(2);
    expect(same(['fleet', '--since', 'yesterday', '--json'], home).stdout).toContain('"USAGE"');
  });

  it('any other argument list still goes through oclif (usage errors included)', () => {
    const home = tempDir();
    const bad = runComis(['explain', '--last', '--bogus'], { home });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/Error \[USAGE\]: Nonexistent flag: --bogus/);
    expect(runComis(['jail', 'probe', '--help'], { home }).stdout).toMatch(/USAGE/);
    expect(runComis(['fleet', '--help'], { home }).stdout).toMatch(/USAGE/);
    expect(runComis(['fleet', '--since'], { home }).stderr).toMatch(/--since expects a value|Flag --since expects a value/);
    expect(runComis(['fleet', '--bogus'], { home }).stderr).toMatch(/Nonexistent flag: --bogus/);
  });
});
