/**
 * README "Your first script" runs exactly as written: its shell block, its
 * TypeScript and Python scripts, and the outputs it shows (explain --last is
 * compared by shape: ids and durations differ per run).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { comisBin, repoRoot } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp.js';

function section(): { lang: string; body: string }[] {
  const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
  const start = readme.indexOf('## Your first script');
  const end = readme.indexOf('\n## ', start + 1);
  expect(start).toBeGreaterThan(-1);
  return [...readme.slice(start, end).matchAll(/```(\w+)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1]!, body: m[2]! }));
}

let scratch = '';
afterEach(() => {
  if (scratch) rmSync(scratch, { recursive: true, force: true });
  scratch = '';
});

describe('README: your first script', () => {
  it('the shell setup, first.ts and first.py run as written and print what the README shows', () => {
    const blocks = section();
    const only = (lang: string) => blocks.filter((b) => b.lang === lang);
    const [setup] = only('sh');
    const [ts] = only('ts');
    const [py] = only('python');
    const consoles = only('console').map((b) => {
      const [command, ...out] = b.body.split('\n');
      return { command: command!.replace(/^\$ /, ''), out: out.join('\n') };
    });
    expect(setup && ts && py).toBeTruthy();
    expect(consoles.map((c) => c.command)).toEqual(['./bin/comis.js orchestrate first.ts', './bin/comis.js orchestrate first.py', './bin/comis.js explain --last']);

    const dir = tempDir('comis-readme-');
    writeFileSync(join(dir, 'first.ts'), ts!.body);
    writeFileSync(join(dir, 'first.py'), py!.body);
    // The commands run from the checkout in the README; here ./bin/comis.js is the checkout's, by path.
    const commands = consoles.map((c, i) => `${c.command.replace('./bin/comis.js', `"${comisBin}"`)} > out${i}.txt`);
    // The scratch home the README's mktemp made is named in home.txt, to be removed after the test.
    writeFileSync(join(dir, 'run.sh'), `set -e\n${setup!.body}\necho "$COMIS_HOME" > home.txt\n${commands.join('\n')}\n`);
    const res = spawnSync('bash', ['run.sh'], { cwd: dir, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: dir }, encoding: 'utf8', timeout: 120_000 });
    try {
      scratch = readFileSync(join(dir, 'home.txt'), 'utf8').trim();
    } catch {
      /* the setup failed before: the status below says so */
    }
    expect(res.status, res.stderr).toBe(0);
    expect(scratch.startsWith(tmpdir())).toBe(true);
    const out = (i: number) => readFileSync(join(dir, `out${i}.txt`), 'utf8');
    expect(out(0)).toBe(consoles[0]!.out);
    expect(out(1)).toBe(consoles[1]!.out);
    // explain: same lines, with this run's ids, time and duration.
    const shape = (text: string) =>
      text
        .replace(/s-[a-z0-9]+-[0-9a-f]+/g, 's-ID')
        .replace(/r-[0-9a-f]{12}/g, 'r-ID')
        .replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/g, 'TIME')
        // explain prints "840 ms" or "1.1 s" (formatDuration): a slow machine must not change the shape.
        .replace(/\b\d+(?:\.\d+)? (?:ms|s|min) /g, 'N ms ')
        .replace(/ +/g, ' ');
    expect(shape(out(2))).toBe(shape(consoles[2]!.out));
  });
});
