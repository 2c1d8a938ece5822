import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { ComisError } from '../../src/lib/errors.js';
import { MIGRATIONS } from '../../src/lib/store/migrations.js';
import { openStore } from '../../src/lib/store/store.js';
import { tempDir } from '../helpers/temp.js';

describe('store', () => {
  it('creates one SQLite file in WAL mode and applies migrations once', () => {
    const home = tempDir();
    const store = openStore({ home });
    expect(store.path).toBe(join(home, 'comis.db'));
    expect(store.db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(store.version).toBe(Math.max(...MIGRATIONS.map((m) => m.version)));
    store.close();
    const again = openStore({ home });
    const rows = again.db.prepare('SELECT version FROM schema_migrations ORDER BY version').all();
    expect(rows).toHaveLength(MIGRATIONS.length);
    again.close();
  });

  it('applies a later migration on top of an existing store', () => {
    const path = join(tempDir(), 'x.db');
    openStore({ path }).close();
    const next = [...MIGRATIONS, { version: 999, name: 'extra', sql: 'CREATE TABLE extra (id INTEGER PRIMARY KEY);' }];
    const store = openStore({ path, migrations: next });
    expect(store.version).toBe(999);
    store.db.prepare('INSERT INTO extra (id) VALUES (1)').run();
    store.close();
  });

  it('rolls back a failing migration and reports it', () => {
    const path = join(tempDir(), 'x.db');
    const bad = [...MIGRATIONS, { version: 500, name: 'broken', sql: 'CREATE TABLE ok1 (a); THIS IS NOT SQL;' }];
    expect(() => openStore({ path, migrations: bad })).toThrow(ComisError);
    const store = openStore({ path });
    expect(store.db.prepare("SELECT name FROM sqlite_master WHERE name='ok1'").get()).toBeUndefined();
    store.close();
  });

  it('refuses a store from a newer comis', () => {
    const path = join(tempDir(), 'x.db');
    openStore({ path, migrations: [...MIGRATIONS, { version: 9999, name: 'future', sql: 'SELECT 1;' }] }).close();
    expect(() => openStore({ path })).toThrow(/newer than this comis knows/);
  });
});
