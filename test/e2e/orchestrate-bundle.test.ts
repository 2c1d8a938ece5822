/**
 * `comis orchestrate` runs from one bundled script (scripts/build-orchestrate-bundle.mjs,
 * src/cli/orchestrate-bundle.ts) while that bundle is current, with a V8 code cache
 * written after the first run; otherwise from the modules. Same output either way.
 */
import { spawnSync } from 'node:child_process';
import { appendFileSync, cpSync, mkdirSync, readdirSync, readFileSync, statSync, symlinkSync, utimesSync, writeFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { repoRoot } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp.js';

const BUNDLE_URL = /\/dist\/cli\/fast-orchestrate\.bundle\.cjs$/;

describe('the orchestrate bundle', () => {
  it('is used while current, with a code cache written once and reused; a newer or resized dist file or a missing bundle loads the modules; a corrupt cache is rewritten; same output', () => {
    // A copy of the package (dist with its mtimes), so the repository's build is left alone.
    const pkg = tempDir();
    for (const entry of ['bin', 'dist', 'package.json']) cpSync(join(repoRoot, entry), join(pkg, entry), { recursive: true, preserveTimestamps: true });
    symlinkSync(join(repoRoot, 'node_modules'), join(pkg, 'node_modules'));
    const home = tempDir();
    const script = join(tempDir(), 'hi.js');
    writeFileSync(script, "console.log('hi', 6 * 7);\n");
    const run = (): { loaded: string[]; status: number | null; stdout: string; stderr: string } => {
      const trace = join(tempDir(), 'trace.txt');
      const res = spawnSync(process.execPath, [join(pkg, 'bin/comis.js'), 'orchestrate', '--quiet', script], {
        encoding: 'utf8',
        env: { PATH: process.env.PATH, HOME: home, COMIS_HOME: home, NODE_OPTIONS: `--import=${join(repoRoot, 'test/helpers/trace-imports.mjs')}`, COMIS_TRACE_IMPORTS: trace },
      });
      return { loaded: readFileSync(trace, 'utf8').split('\n'), status: res.status, stdout: res.stdout, stderr: res.stderr };
    };
    const bundled = (loaded: string[]): boolean => loaded.some((m) => BUNDLE_URL.test(m));
    const cacheFiles = (): string[] => readdirSync(join(home, 'cache')).filter((n) => n.startsWith('orchestrate-') && n.endsWith('.v8'));

    // Entries of other builds: written a day or more ago, removed when this build writes its own;
    // a recent one (another checkout in use), another node's and other files stay.
    const cacheDir = join(home, 'cache');
    mkdirSync(cacheDir, { mode: 0o700 });
    const planted = (name: string, ageMs: number): string => {
      const path = join(cacheDir, name);
      writeFileSync(path, 'old', { mode: 0o600 });
      const at = new Date(Date.now() - ageMs);
      utimesSync(path, at, at);
      return name;
    };
    const suffix = `${process.version}-${process.arch}.v8`;
    const stale = planted(`orchestrate-0000000000000000-${suffix}`, 2 * 86_400_000);
    const recent = planted(`orchestrate-1111111111111111-${suffix}`, 3_600_000);
    const otherNode = planted(`orchestrate-0000000000000000-v0.0.0-${process.arch}.v8`, 2 * 86_400_000);
    const otherName = planted(`skill-scan-0000000000000000-${suffix}`, 2 * 86_400_000);

    const first = run();
    expect([first.status, first.stdout, first.stderr]).toEqual([0, 'hi 42\n', '']);
    expect(readdirSync(cacheDir)).not.toContain(stale);
    expect(readdirSync(cacheDir)).toEqual(expect.arrayContaining([recent, otherNode, otherName]));
    for (const name of [recent, otherNode, otherName]) rmSync(join(cacheDir, name));
    expect(bundled(first.loaded)).toBe(true);
    // The tracer names the bundle's evaluated modules as their dist files (the hot-path tests read these).
    expect(first.loaded.some((m) => m.endsWith('/dist/lib/orchestrate/runner.js'))).toBe(true);
    expect(first.loaded.some((m) => m.endsWith('/dist/lib/orchestrate/phases/repair.js'))).toBe(false);
    expect(cacheFiles()).toHaveLength(1);
    const cache = join(home, 'cache', cacheFiles()[0]!);
    expect(statSync(cache).mode & 0o777).toBe(0o600);

    // The second run uses the entry (V8 accepts it) and leaves it as it was.
    const stamp = new Date(Date.now() - 3_600_000);
    utimesSync(cache, stamp, stamp);
    const stamped = statSync(cache).mtimeMs;
    const second = run();
    expect([second.status, second.stdout, second.stderr, bundled(second.loaded)]).toEqual([0, 'hi 42\n', '', true]);
    expect(statSync(cache).mtimeMs).toBe(stamped);

    // A corrupt entry: V8 rejects it, the run is the same, and a good entry replaces it.
    writeFileSync(cache, Buffer.alloc(4096, 7), { mode: 0o600 });
    const corrupt = run();
    expect([corrupt.status, corrupt.stdout, corrupt.stderr, bundled(corrupt.loaded)]).toEqual([0, 'hi 42\n', '', true]);
    expect(readFileSync(cache).equals(Buffer.alloc(4096, 7))).toBe(false);

    const bundle = join(pkg, 'dist/cli/fast-orchestrate.bundle.cjs');
    const runner = join(pkg, 'dist/lib/orchestrate/runner.js');
    // A dist file rewritten after the bundle (as `npm run build:fast` does), same bytes.
    const later = new Date(statSync(bundle).mtimeMs + 5000);
    utimesSync(runner, later, later);
    const newer = run();
    expect([newer.status, newer.stdout, bundled(newer.loaded)]).toEqual([0, 'hi 42\n', false]);
    expect(newer.loaded.some((m) => m.endsWith('/dist/lib/orchestrate/runner.js'))).toBe(true);
    // Same age as the bundle again: bundled. Another size at that age (an edit that kept the mtime): modules.
    const old = new Date(statSync(bundle).mtimeMs - 5000);
    utimesSync(runner, old, old);
    expect(bundled(run().loaded)).toBe(true);
    appendFileSync(runner, '\n');
    utimesSync(runner, old, old);
    const resized = run();
    expect([resized.status, resized.stdout, bundled(resized.loaded)]).toEqual([0, 'hi 42\n', false]);
    // No bundle at all.
    rmSync(bundle);
    const missing = run();
    expect([missing.status, missing.stdout, bundled(missing.loaded)]).toEqual([0, 'hi 42\n', false]);
  }, 180_000);
});
