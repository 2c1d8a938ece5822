import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { parseJson, repoRoot } from '../helpers/cli.js';

/**
 * The packed CLI is what a user installs (`npm install -g ./comis-<version>.tgz`):
 * pack the checkout (already built by `npm test`; `--ignore-scripts` so packing does
 * not rebuild dist/ under the other tests' feet), install the tarball into a temp
 * prefix, and run the installed binary as a user would. npm resolves the dependencies
 * from its cache where it can (`--prefer-offline`), else from the npm registry;
 * better-sqlite3 compiles, so this is the slowest test of the suite.
 */
let work: string;
let tarball: string;
let installedBin: string;
let installLog = '';

function sh(cmd: string, args: string[], opts: { cwd?: string; env?: Record<string, string>; timeoutMs?: number } = {}) {
  return spawnSync(cmd, args, {
    cwd: opts.cwd ?? repoRoot,
    env: { ...process.env, ...opts.env },
    encoding: 'utf8',
    timeout: opts.timeoutMs ?? 120_000,
    maxBuffer: 64 * 1024 * 1024,
  });
}

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'comis-pack-'));
  const pack = sh('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work]);
  expect(pack.status, pack.stderr).toBe(0);
  const [info] = parseJson<{ filename: string }[]>(pack.stdout);
  tarball = join(work, info!.filename);
  const prefix = join(work, 'prefix');
  const install = sh('npm', ['install', '-g', '--prefix', prefix, '--prefer-offline', '--no-audit', '--no-fund', '--loglevel', 'error', tarball], {
    cwd: work,
    timeoutMs: 540_000,
  });
  installLog = `${install.stdout}\n${install.stderr}`;
  expect(install.status, installLog).toBe(0);
  installedBin = join(prefix, 'bin', 'comis');
}, 600_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('npm pack → npm install -g', () => {
  it('ships the built CLI, its manifest and SDK assets, and no sources or tests', () => {
    const list = sh('tar', ['tzf', tarball]).stdout.split('\n').filter(Boolean).map((p) => p.replace(/^package\//, ''));
    for (const need of ['bin/comis.js', 'package.json', 'README.md', 'oclif.manifest.json', 'dist/commands/orchestrate.js', 'dist/sdk/comis_tools.js', 'dist/sdk/comis_tools.d.ts', 'dist/sdk/comis_tools.py', 'dist/lib/sdk/runtime/comis_tools_runtime.ts', 'dist/lib/sdk/runtime/comis_tools_declarations.ts', 'dist/lib/sdk/runtime/comis_tools_runtime.py', 'docs/config.schema.json']) {
      expect(list, need).toContain(need);
    }
    expect(list.filter((p) => p.startsWith('test/') || p.startsWith('src/') || p.startsWith('bench/') || p.startsWith('node_modules/'))).toEqual([]);
  });

  it('the installed binary answers --version, probes the jail and runs the quick-start example', () => {
    const version = sh(installedBin, ['--version']);
    expect(version.status, version.stderr).toBe(0);
    expect(version.stdout).toMatch(/^comis\/\d+\.\d+\.\d+ /);

    const home = join(work, 'probe-home');
    const probe = sh(installedBin, ['jail', 'probe', '--json'], { env: { COMIS_HOME: home, HOME: home } });
    expect(probe.status, probe.stderr).toBe(0);
    expect(parseJson(probe.stdout).result.working).toBe(true);

    // The README's quick start, on a copy of the examples (the run writes into its home and workspace).
    const examples = join(work, 'examples');
    cpSync(join(repoRoot, 'examples'), examples, { recursive: true });
    for (const generated of ['comis.db', 'comis.db-wal', 'comis.db-shm', 'logs', 'cache', 'workspaces', 'runs']) {
      rmSync(join(examples, 'comis-home', generated), { recursive: true, force: true });
    }
    const run = sh(installedBin, ['orchestrate', join(examples, 'todo-report.ts')], {
      env: { COMIS_HOME: join(examples, 'comis-home'), HOME: home },
    });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^3 TODOs in 2 files\nbusiest: notes\/release\.md \(2\)/);
    expect(readdirSync(join(examples, 'comis-home'))).toContain('comis.db');

    // The emitter finds its runtime sources inside the installed dist (no src/ ships):
    // `sdk emit` from the install writes what the build pre-generated, and --check agrees.
    const sdkOut = join(work, 'emitted-sdk');
    const emit = sh(installedBin, ['sdk', 'emit', '--out', sdkOut], { env: { COMIS_HOME: home, HOME: home } });
    expect(emit.status, emit.stderr).toBe(0);
    for (const name of ['comis_tools.ts', 'comis_tools.js', 'comis_tools.d.ts', 'comis_tools.py']) {
      expect(readFileSync(join(sdkOut, name), 'utf8'), name).toBe(readFileSync(join(repoRoot, 'dist/sdk', name), 'utf8'));
    }
    expect(sh(installedBin, ['sdk', 'emit', '--check', sdkOut], { env: { COMIS_HOME: home, HOME: home } }).status).toBe(0);
  });
});
