import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { colorWanted } from '../../src/cli/color.js';
import { runComis } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp.js';

const ESC = '\u001b[';

describe('colour in human output', () => {
  it('precedence: --no-color, --color, FORCE_COLOR, NO_COLOR, then whether the stream is a terminal; never with --json', () => {
    const tty = { isTTY: true };
    const pipe = { isTTY: false };
    expect(colorWanted(tty, [], {})).toBe(true);
    expect(colorWanted(pipe, [], {})).toBe(false);
    expect(colorWanted(tty, [], { NO_COLOR: '1' })).toBe(false);
    expect(colorWanted(tty, [], { NO_COLOR: '' })).toBe(true);
    expect(colorWanted(pipe, [], { FORCE_COLOR: '1' })).toBe(true);
    expect(colorWanted(tty, [], { FORCE_COLOR: '0' })).toBe(false);
    expect(colorWanted(pipe, [], { FORCE_COLOR: '1', NO_COLOR: '1' })).toBe(true);
    expect(colorWanted(pipe, ['--color'], { NO_COLOR: '1' })).toBe(true);
    expect(colorWanted(tty, ['--no-color'], { FORCE_COLOR: '1' })).toBe(false);
    expect(colorWanted(tty, ['--json', '--color'], { FORCE_COLOR: '1' })).toBe(false);
  });

  it('jail probe, skill scan, explain and errors colour their verdicts when asked, and are plain otherwise', () => {
    const home = tempDir();
    const probe = runComis(['jail', 'probe'], { home, env: { FORCE_COLOR: '1' } });
    expect(probe.stdout).toContain(`${ESC}32m  ok  ${ESC}39m`);
    // Control: the same command piped without FORCE_COLOR (or with NO_COLOR, --no-color, --json) has no escape at all.
    for (const [args, env] of [
      [['jail', 'probe'], {}],
      [['jail', 'probe'], { NO_COLOR: '1' }],
      [['jail', 'probe', '--no-color'], { FORCE_COLOR: '1' }],
      [['jail', 'probe', '--json'], { FORCE_COLOR: '1' }],
    ] as const) {
      const plain = runComis([...args], { home, env: { ...env } });
      expect(plain.stdout, args.join(' ')).not.toContain(ESC);
      expect(plain.stdout.length).toBeGreaterThan(0);
    }

    const skills = join(tempDir(), 'bad');
    mkdirSync(skills);
    writeFileSync(join(skills, 'SKILL.md'), '---\nname: bad\ndescription: Installs things.\n---\nRun:\n\n    cat install.sh | bash\n');
    const scan = runComis(['skill', 'scan', skills], { home, env: { FORCE_COLOR: '1' } });
    expect(scan.status).toBe(1);
    expect(scan.stdout).toContain(`${ESC}31m${ESC}1mCRITICAL`);
    expect(scan.stdout).toMatch(/\u001b\[31m\u001b\[1mFAIL \(findings/);
    expect(runComis(['skill', 'scan', skills], { home }).stdout).not.toContain(ESC);

    const missing = runComis(['explain', 'nosuch'], { home, env: { FORCE_COLOR: '1' } });
    expect(missing.status).toBe(2);
    expect(missing.stderr.startsWith(`${ESC}31m${ESC}1mError [NOT_FOUND]:`)).toBe(true);
    const plainMissing = runComis(['explain', 'nosuch'], { home });
    expect(plainMissing.stderr.startsWith('Error [NOT_FOUND]:')).toBe(true);
    const json = runComis(['explain', 'nosuch', '--json'], { home, env: { FORCE_COLOR: '1' } });
    expect(json.stdout + json.stderr).not.toContain(ESC);
  });
});
