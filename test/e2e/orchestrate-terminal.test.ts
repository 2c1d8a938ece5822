/**
 * Terminal injection through `comis orchestrate` in human mode: what a
 * script prints must not drive the operator's terminal. Under a real pty
 * (python3's `pty` module), OSC 52 (clipboard write), CSI 6n (a reply typed
 * into the shell), a carriage-return line overwrite and a one-byte C1 CSI
 * are shown escaped; `--raw` passes them through; piped stdout stays byte
 * for byte; the stderr tail is escaped even when piped.
 */

import { describe, expect, it } from 'vitest';

import { comisBin, repoRoot } from '../helpers/cli.js';
import { makeHome } from '../helpers/orchestrate.js';
import { underPty as runUnderPty } from '../helpers/pty.js';

/** Runs argv with stdin, stdout and stderr on a fresh pty; returns every byte the terminal received. */
function underPty(argv: string[], env: Record<string, string>): { status: number | null; bytes: Buffer } {
  return runUnderPty(argv, { env, cwd: repoRoot });
}

// Clipboard write, cursor-position query, line overwrite, one-byte C1 CSI (U+009B) clear screen.
const ATTACK = 'A\x1b]52;c;SGVsbG8=\x07B\x1b[6nC SAFE\rEVIL\u009b2J\n';
const ATTACK_JS = `process.stdout.write(${JSON.stringify(ATTACK)});`;

describe('orchestrate output on a terminal', () => {
  it('piped stdout is byte for byte what the script wrote (the attack really is in the output)', () => {
    const h = makeHome();
    const res = h.run(['orchestrate', h.script('inj.mjs', ATTACK_JS)]);
    expect(res.status).toBe(0);
    expect(res.stdout).toBe(ATTACK);
  });

  it('on a tty, escape sequences, CR and C1 controls are shown escaped; nothing raw reaches the terminal', () => {
    const h = makeHome();
    const script = h.script('inj.mjs', ATTACK_JS);
    const res = underPty([process.execPath, comisBin, 'orchestrate', script], { HOME: h.home, COMIS_HOME: h.home });
    expect(res.status).toBe(0);
    const text = res.bytes.toString('utf8');
    expect(text).toContain('A\u241b]52;c;SGVsbG8=\u2407B\u241b[6nC SAFE\u240dEVIL<U+009B>2J');
    expect(res.bytes.includes(0x1b)).toBe(false);
    expect(res.bytes.includes(0x07)).toBe(false);
    expect(text).not.toContain('\u009b');
    // The only CRs are the terminal's own (\n becomes \r\n on a tty).
    expect(text.replace(/\r\n/g, '')).not.toContain('\r');
  });

  it("--raw passes the script's stdout to the terminal as is", () => {
    const h = makeHome();
    const script = h.script('inj.mjs', ATTACK_JS);
    const res = underPty([process.execPath, comisBin, 'orchestrate', script, '--raw'], { HOME: h.home, COMIS_HOME: h.home });
    expect(res.status).toBe(0);
    expect(res.bytes.toString('utf8')).toContain('A\x1b]52;c;SGVsbG8=\x07B\x1b[6nC SAFE\rEVIL\u009b2J');
  });

  it('the stderr tail of a failed run is escaped even when piped, and with --raw', () => {
    const h = makeHome();
    const script = h.script('fail.mjs', `process.stderr.write('oops \\x1b]52;c;SGVsbG8=\\x07 \\x1b[2K\\rgone\\n'); process.exit(2);`);
    for (const extra of [[], ['--raw']]) {
      const res = h.run(['orchestrate', script, ...extra]);
      expect(res.status).toBe(1);
      expect(res.stderr).toContain('oops \u241b]52;c;SGVsbG8=\u2407 \u241b[2K\u240dgone');
      expect(res.stderr).not.toContain('\x1b');
      expect(res.stderr).not.toContain('\x07');
    }
  });
});
