import { afterEach, describe, expect, it, vi } from 'vitest';

import { formatCauses, writeError } from '../../src/cli/output.js';
import { causeChain, ComisError, internalError, MAX_CAUSE_DEPTH } from '../../src/lib/errors.js';
import { registerSecret, unregisterSecret } from '../../src/lib/redact/output-guard.js';

const SECRET = 'sk-error-cause-secret-0123456789';

afterEach(() => {
  vi.restoreAllMocks();
  unregisterSecret(SECRET);
});

/** Captures what writeError puts on stdout and stderr. */
function capture(fn: () => void): { stdout: string; stderr: string } {
  let stdout = '';
  let stderr = '';
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => ((stdout += String(chunk)), true));
  vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => ((stderr += String(chunk)), true));
  try {
    fn();
  } finally {
    vi.restoreAllMocks();
  }
  return { stdout, stderr };
}

describe('internalError keeps the cause', () => {
  it('wraps a thrown Error as INTERNAL with the original as cause, message unchanged', () => {
    const inner = Object.assign(new Error('disk said no'), { code: 'EIO' });
    const outer = new TypeError('cannot read x', { cause: inner });
    const err = internalError(outer);
    expect(err).toBeInstanceOf(ComisError);
    expect(err.code).toBe('INTERNAL');
    expect(err.message).toBe('cannot read x');
    expect(err.cause).toBe(outer);
    const chain = causeChain(err);
    expect(chain.map((l) => [l.name, l.message, l.code])).toEqual([
      ['TypeError', 'cannot read x', undefined],
      ['Error', 'disk said no', 'EIO'],
    ]);
    expect(chain[0]!.stack).toContain('error-causes.test.ts');
  });

  it('keeps a ComisError as is, and a thrown non-Error as its string', () => {
    const usage = new ComisError('USAGE', 'bad flag');
    expect(internalError(usage)).toBe(usage);
    const err = internalError('a string was thrown');
    expect(err.message).toBe('a string was thrown');
    expect(causeChain(err)).toEqual([{ name: 'string', message: 'a string was thrown' }]);
  });

  it('follows a chain boundedly and stops at a cycle', () => {
    const a = new Error('a');
    const b = new Error('b', { cause: a });
    (a as { cause?: unknown }).cause = b;
    expect(causeChain(new Error('top', { cause: b })).map((l) => l.message)).toEqual(['b', 'a']);
    let deep: Error = new Error('0');
    for (let i = 1; i < 20; i++) deep = new Error(String(i), { cause: deep });
    expect(causeChain(new Error('top', { cause: deep }))).toHaveLength(MAX_CAUSE_DEPTH);
    expect(causeChain(new Error('no cause'))).toEqual([]);
    expect(causeChain('not an error')).toEqual([]);
  });
});

describe('--verbose prints the cause chain', () => {
  const bug = (): ComisError => internalError(new Error('outer failure', { cause: Object.assign(new Error(`inner with ${SECRET}`), { code: 'ENOENT' }) }));

  it('human mode: Caused by lines with stack frames follow the error only with verbose', () => {
    const quiet = capture(() => writeError(bug(), false));
    expect(quiet.stderr).toContain('Error [INTERNAL]: outer failure');
    expect(quiet.stderr).not.toContain('Caused by');
    const loud = capture(() => writeError(bug(), false, false, true));
    expect(loud.stderr).toContain('Caused by: Error: outer failure');
    expect(loud.stderr).toContain('Caused by: Error: inner with');
    expect(loud.stderr).toContain('(ENOENT)');
    expect(loud.stderr).toMatch(/\n\s+at .*error-causes\.test\.ts/);
    expect(loud.stdout).toBe('');
  });

  it('--json mode: the envelope on stdout keeps its shape; the chain goes to stderr', () => {
    const out = capture(() => writeError(bug(), true, false, true));
    expect(JSON.parse(out.stdout)).toEqual({ status: 'error', error: { code: 'INTERNAL', message: 'outer failure', hint: expect.any(String) } });
    expect(out.stderr).toContain('Caused by: Error: outer failure');
  });

  it('redacts registered secrets in every cause', () => {
    registerSecret(SECRET);
    const text = formatCauses(bug());
    expect(text).toContain('inner with [REDACTED]');
    expect(text).not.toContain(SECRET);
    const out = capture(() => writeError(bug(), false, false, true));
    expect(out.stderr).not.toContain(SECRET);
  });

  it('a ComisError with a cause (not only a bug) shows it too', () => {
    const err = new ComisError('CONFIG_UNREADABLE', 'cannot read config', { cause: Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES' }) });
    expect(formatCauses(err)).toContain('Caused by: Error: EACCES: permission denied (EACCES)');
  });
});
