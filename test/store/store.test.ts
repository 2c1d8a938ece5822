import { chmodSync, statSync, writeFileSync } from 'node:fs';
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

  it('is private to the invoking user: the db and its -wal/-shm are 0600 whatever the umask; an old 0644 store is tightened', () => {
    const home = tempDir();
    const old = process.umask(0o022);
    try {
      const store = openStore({ home });
      store.db.exec('CREATE TABLE IF NOT EXISTS t (x)'); // makes SQLite write the -wal and -shm files
      for (const f of ['comis.db', 'comis.db-wal', 'comis.db-shm']) expect(statSync(join(home, f)).mode & 0o777, f).toBe(0o600);
      store.close();
      // Positive control of the tightening: a store left readable by an older comis.
      chmodSync(join(home, 'comis.db'), 0o644);
      const again = openStore({ home });
      expect(statSync(join(home, 'comis.db')).mode & 0o777).toBe(0o600);
      again.close();
      // A pre-existing file keeps its contents (O_EXCL never truncates it).
      const other = tempDir();
      writeFileSync(join(other, 'comis.db'), '');
      chmodSync(join(other, 'comis.db'), 0o664);
      openStore({ home: other }).close();
      expect(statSync(join(other, 'comis.db')).mode & 0o777).toBe(0o600);
    } finally {
      process.umask(old);
    }
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
