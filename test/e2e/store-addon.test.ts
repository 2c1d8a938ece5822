/**
 * The store finds better-sqlite3's native addon where the package's own loader (`bindings`)
 * would find it first, without loading `bindings` (which walks the stack and throws a
 * MODULE_NOT_FOUND per candidate path on every process's first open).
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

import { describe, expect, it } from 'vitest';

import { repoRoot } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp.js';

function run(dir: string, body: string): { stdout: string; stderr: string; status: number | null } {
  const file = join(dir, `probe-${Math.random().toString(16).slice(2)}.mjs`);
  writeFileSync(file, body);
  return spawnSync(process.execPath, [file], { encoding: 'utf8', timeout: 30_000 });
}

describe('store: the native addon', () => {
  it('opens, migrates and writes without loading `bindings`, with the addon `bindings` itself picks', () => {
    const dir = tempDir();
    const store = pathToFileURL(join(repoRoot, 'dist/lib/store/store.js')).href;
    const r = run(
      dir,
      `
      import { createRequire } from 'node:module';
      const { openStore } = await import(${JSON.stringify(store)});
      const s = openStore({ home: ${JSON.stringify(dir)} });
      s.db.exec('CREATE TABLE probe (a)');
      s.db.prepare('INSERT INTO probe VALUES (1)').run();
      const n = s.db.prepare('SELECT count(*) AS n FROM probe').get().n;
      const loaded = Object.keys(createRequire(import.meta.url).cache).filter((k) => k.includes('/node_modules/'));
      const addon = loaded.find((k) => k.endsWith('.node'));
      s.close();
      // Which addon bindings would have loaded, asked of bindings itself afterwards.
      const req = createRequire(${JSON.stringify(join(repoRoot, 'node_modules/better-sqlite3/lib/database.js'))});
      const viaBindings = req('bindings')({ bindings: 'better_sqlite3.node', module_root: ${JSON.stringify(join(repoRoot, 'node_modules/better-sqlite3'))} });
      const after = Object.keys(req.cache).filter((k) => k.endsWith('.node'));
      process.stdout.write(JSON.stringify({ version: s.version, n, bindingsBefore: loaded.some((k) => k.endsWith('/bindings/bindings.js')), addon, same: after.length === 1 && after[0] === addon && typeof viaBindings.Database === 'function' }));
    `,
    );
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { version: number; n: number; bindingsBefore: boolean; addon: string; same: boolean };
    expect(out.n).toBe(1);
    expect(out.version).toBeGreaterThan(0);
    expect(out.addon).toMatch(/better_sqlite3\.node$/);
    expect(out.bindingsBefore).toBe(false);
    expect(out.same).toBe(true);
  });

  it('control: better-sqlite3 opened without the path loads `bindings`', () => {
    const dir = tempDir();
    const r = run(
      dir,
      `
      import { createRequire } from 'node:module';
      const req = createRequire(${JSON.stringify(join(repoRoot, 'dist/lib/store/store.js'))});
      const Driver = req('better-sqlite3');
      const db = new Driver(${JSON.stringify(join(dir, 'x.db'))});
      db.close();
      process.stdout.write(String(Object.keys(req.cache).some((k) => k.endsWith('/bindings/bindings.js'))));
    `,
    );
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toBe('true');
  });
});
