import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

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
    const list = sh('tar', ['tzf', tarball])
      .stdout.split('\n')
      .filter(Boolean)
      .map((p) => p.replace(/^package\//, ''));
    for (const need of [
      'bin/comis.js',
      'package.json',
      'README.md',
      'oclif.manifest.json',
      'dist/commands/orchestrate.js',
      'dist/sdk/comis_tools.js',
      'dist/sdk/comis_tools.d.ts',
      'dist/sdk/comis_tools.py',
      'dist/lib/sdk/runtime/comis_tools_runtime.ts',
      'dist/lib/sdk/runtime/comis_tools_declarations.ts',
      'dist/lib/sdk/runtime/comis_tools_runtime.py',
      'docs/config.schema.json',
      'dist/lib/resultref/duckdb/query-child.js',
    ]) {
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

  it('the GitHub Actions example of docs/commands/skill-scan.md works with the packed tarball (scan step run as documented)', () => {
    // The documented workflow; its install step is what beforeAll did (npm pack, npm install -g the tarball),
    // so the tarball is packed once for the whole file. The scan step runs verbatim with that install on PATH.
    const doc = readFileSync(join(repoRoot, 'docs/commands/skill-scan.md'), 'utf8');
    const yaml = /## GitHub Actions[\s\S]*?```yaml\n([\s\S]*?)```/.exec(doc)![1]!;
    const step = (id: string): string => {
      const m = new RegExp(`- id: ${id}\\n(?:\\s+#[^\\n]*\\n)*\\s+run: \\|\\n((?:\\s{10}[^\\n]*\\n)+)`).exec(yaml);
      expect(m, `step ${id} in the documented workflow`).not.toBeNull();
      return m![1]!
        .split('\n')
        .map((l) => l.slice(10))
        .join('\n');
    };
    expect(step('install-comis')).toMatch(/npm pack --pack-destination "\$RUNNER_TEMP"\)\nnpm install -g "\$RUNNER_TEMP"\/comis-\*\.tgz/);
    const scan = step('scan');
    const env = { PATH: `${dirname(installedBin)}:${process.env.PATH}`, COMIS_HOME: join(work, 'gha-home'), HOME: join(work, 'gha-home') };

    const repo = join(work, 'gha-repo');
    mkdirSync(join(repo, '.git'), { recursive: true });
    mkdirSync(join(repo, 'skills', 'bad'), { recursive: true });
    writeFileSync(join(repo, 'skills', 'bad', 'SKILL.md'), '---\nname: bad\ndescription: Bad.\n---\n\nRun:\n\n    cat install.sh | bash\n');
    const run = sh('bash', ['-e', '-c', scan], { cwd: repo, env });
    expect(run.status, run.stderr).toBe(0); // findings (exit 1) still reach the upload step
    const sarif = JSON.parse(readFileSync(join(repo, 'skill-scan.sarif'), 'utf8'));
    expect(sarif.version).toBe('2.1.0');
    expect(sarif.runs[0].tool.driver.informationUri).toMatch(/^(?:https?|file):\/\//);
    expect(sarif.runs[0].results.map((r: { ruleId: string }) => r.ruleId)).toContain('EXEC_PIPE_BASH');
    expect(sarif.runs[0].results[0].locations[0].physicalLocation.artifactLocation).toMatchObject({ uri: 'skills/bad/SKILL.md', uriBaseId: '%SRCROOT%' });

    // A repository without skills/ (a typo in CI) fails the job instead of uploading an empty log.
    const empty = join(work, 'gha-empty');
    mkdirSync(join(empty, '.git'), { recursive: true });
    const typo = sh('bash', ['-e', '-c', scan], { cwd: empty, env });
    expect(typo.status).toBe(2);
  });
});
