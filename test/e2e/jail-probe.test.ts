/**
 * `comis jail probe` end to end, through the built bin/comis.js (run
 * `npm run build:fast` first), as a user would run it.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, readFileSync, statSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { deriveJailUid, findHelper, findOnPath, isRoot } from '../../src/lib/jail/host.js';
import { resolveInterpreter } from '../../src/lib/jail/interpreters.js';
import { comisBin, parseJson, repoRoot, runComis } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp.js';

interface Report {
  working: boolean;
  provider: string;
  problem?: { code: string; message: string; hint: string; detail?: string };
  checks: { name: string; ok: boolean; detail: string }[];
  runtime: Record<string, { found: boolean; path?: string; version?: string; runsInJail?: boolean }>;
  missing: { part: string; hint: string }[];
}

/** A PATH with python3 and jq but no bwrap. */
function pathWithoutBwrap(): string {
  const dir = tempDir();
  symlinkSync(resolveInterpreter('python3').hostPath, join(dir, 'python3'));
  symlinkSync(findOnPath('jq')!, join(dir, 'jq'));
  return dir;
}

/** The unprivileged uid of this test must be able to reach the checkout. */
function traversableByOthers(path: string): boolean {
  for (let p = path; ; p = dirname(p)) {
    if ((statSync(p).mode & 0o001) === 0) return false;
    if (p === dirname(p)) return true;
  }
}

describe('comis jail probe', () => {
  it('finds a working hardened jail here: exit 0, each smoke check and runtime part reported', () => {
    const res = runComis(['jail', 'probe'], { home: tempDir() });
    expect(res.stderr).toBe('');
    expect(res.status).toBe(0);
    expect(res.stdout).toMatch(/^Sandbox provider: bubblewrap \d+\.\d+\.\d+ \(\S*bwrap\): working$/m);
    for (const check of ['not root inside', 'no capabilities', 'no_new_privs', 'seccomp filter', 'no network', 'workspace writable', '/usr read-only']) {
      expect(res.stdout).toMatch(new RegExp(`^ {2}ok {4}${check.replace('/', '\\/')}`, 'm'));
    }
    expect(res.stdout).toMatch(/^ {2}ok {4}node\s+v\d+.*\(runs in the jail/m);
    expect(res.stdout).toMatch(/^ {2}ok {4}python3\s+\d+\.\d+\.\d+.*\(runs in the jail/m);
    expect(res.stdout).toMatch(/^ {2}ok {4}jq\s+jq-.*\(runs in the jail/m);
    expect(res.stdout).toMatch(/@duckdb\/node-api/);
    expect(res.stdout).toContain('A working jail is available');
  });

  it('--json gives the full report in the envelope', () => {
    const res = runComis(['jail', 'probe', '--json'], { home: tempDir() });
    expect(res.status).toBe(0);
    const body = parseJson<{ status: string; result: Report; warnings: string[] }>(res.stdout);
    expect(body.status).toBe('ok');
    const r = body.result;
    expect(r).toMatchObject({ working: true, provider: 'bwrap' });
    expect(r.checks.length).toBeGreaterThanOrEqual(7);
    expect(r.checks.every((c) => c.ok)).toBe(true);
    expect(r.checks.find((c) => c.name === 'seccomp filter')!.detail).toBe('Seccomp 2');
    for (const part of ['node', 'python3', 'jq']) expect(r.runtime[part]).toMatchObject({ found: true, runsInJail: true });
    expect(r.runtime.python3!.path).toBe(resolveInterpreter('python3').hostPath);
    expect(r.runtime.duckdb).toMatchObject({ found: true, version: expect.any(String) });
  });

  it('with bwrap removed from PATH: a clear "no sandbox provider" answer with the install hint, exit 1', () => {
    const env = { PATH: pathWithoutBwrap() };
    const res = runComis(['jail', 'probe'], { home: tempDir(), env });
    expect(res.status).toBe(1);
    expect(res.stdout).toContain('Sandbox provider: none: NOT working');
    expect(res.stdout).toContain('No sandbox provider: bubblewrap (bwrap) is not on PATH.');
    expect(res.stdout).toContain('apt-get install bubblewrap');
    expect(res.stdout).toContain('No working jail');
    const json = runComis(['jail', 'probe', '--json'], { home: tempDir(), env });
    expect(json.status).toBe(1);
    const body = parseJson<{ status: string; result: Report }>(json.stdout);
    expect(body.status).toBe('fail');
    expect(body.result).toMatchObject({ working: false, provider: 'none', problem: { code: 'BWRAP_MISSING' } });
    expect(body.result.missing[0]).toMatchObject({ part: 'sandbox provider', hint: expect.stringContaining('apt-get install bubblewrap') });
    expect(body.result.runtime.python3).toMatchObject({ found: true });
  });

  // A real restriction, not a mock: run the probe inside an outer bubblewrap that
  // forbids further user namespaces (as a locked-down container would).
  it.skipIf(!isRoot() || !findOnPath('bwrap') || !traversableByOthers(repoRoot))('user namespaces restricted: says so in words, not a raw bwrap error, exit 1', () => {
    const home = tempDir();
    chmodSync(home, 0o777);
    const uid = deriveJailUid(home);
    // SHELL is set because oclif asks the passwd database for the shell otherwise, and
    // this uid has no entry there.
    const res = spawnSync(
      findHelper('setpriv')!,
      [
        `--reuid=${uid}`,
        `--regid=${uid}`,
        '--clear-groups',
        '--inh-caps=-all',
        '--bounding-set=-all',
        '--no-new-privs',
        findOnPath('bwrap')!,
        '--unshare-user',
        '--disable-userns',
        '--die-with-parent',
        '--ro-bind',
        '/',
        '/',
        '--dev',
        '/dev',
        '--proc',
        '/proc',
        '--tmpfs',
        '/tmp',
        // The checkout may itself live under /tmp (CI clones do): show it again over the tmpfs.
        '--ro-bind',
        repoRoot,
        repoRoot,
        '--setenv',
        'HOME',
        '/tmp',
        '--setenv',
        'SHELL',
        '/bin/sh',
        '--setenv',
        'COMIS_HOME',
        '/tmp/comis',
        '--setenv',
        'PATH',
        '/usr/bin:/bin',
        '--chdir',
        repoRoot,
        process.execPath,
        comisBin,
        'jail',
        'probe',
        '--json',
      ],
      { env: {}, encoding: 'utf8', timeout: 120_000 },
    );
    expect(res.stderr).toBe('');
    expect(res.status).toBe(1);
    const r = parseJson<{ status: string; result: Report }>(res.stdout).result;
    expect(r.working).toBe(false);
    expect(r.problem!.code).toBe('USERNS_RESTRICTED');
    expect(r.problem!.message).toMatch(/^User namespaces are restricted on this machine, so bubblewrap cannot build the jail\. /);
    expect(r.problem!.message).not.toMatch(/^bwrap:/);
    expect(r.problem!.hint.length).toBeGreaterThan(20);
    expect(r.problem!.detail).toMatch(/^bwrap: /);
  });

  it('loads no heavy module: no zod, better-sqlite3, ink, undici, DuckDB, esbuild or pino, and no other command', () => {
    const trace = join(tempDir(), 'trace.txt');
    const res = runComis(['jail', 'probe', '--json'], {
      home: tempDir(),
      env: { NODE_OPTIONS: `--import=${join(repoRoot, 'test/helpers/trace-imports.mjs')}`, COMIS_TRACE_IMPORTS: trace },
    });
    expect(res.status).toBe(0);
    const loaded = readFileSync(trace, 'utf8').split('\n');
    expect(loaded.filter((m) => /\/zod\/|better-sqlite3|\/ink\/|\/react\/|undici|duckdb|\/esbuild\/|\/pino\//.test(m))).toEqual([]);
    // Answered by bin/comis.js's fast path (src/cli/fast-commands.ts): no command module, no oclif.
    expect(loaded.filter((m) => m.includes('/dist/commands/') || m.includes('@oclif'))).toEqual([]);
  });
});
