/**
 * The comis store: one SQLite file under $COMIS_HOME (WAL mode), opened
 * lazily by the commands that need it and never by `--help`, `jail probe` or
 * `sdk emit`. better-sqlite3 is imported here, inside {@link openStore}, so
 * merely importing this module costs nothing.
 */
import { chmodSync, closeSync, existsSync, constants as fsConstants, lstatSync, mkdirSync, openSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

import type BetterSqlite3 from 'better-sqlite3';

import { ComisError } from '../errors.js';
import { comisHome, storePath } from '../config/paths.js';
import { sweepDurableRuns } from './durable-runs.js';
import { MIGRATIONS, type Migration } from './migrations.js';

export type Database = BetterSqlite3.Database;

export interface Store {
  readonly db: Database;
  readonly path: string;
  /** Schema version after migrations. */
  readonly version: number;
  close(): void;
}

export interface OpenStoreOptions {
  home?: string;
  path?: string;
  migrations?: readonly Migration[];
  readonly?: boolean;
  /**
   * Run the start-up sweep of durable runs (default true for a writable store). A caller
   * that opens the store for one lookup before the run's own connection (the jail uid
   * registry) passes false: that connection sweeps.
   */
  sweep?: boolean;
}

const require = createRequire(import.meta.url);

let addon: string | null | undefined;
/**
 * better-sqlite3's native addon, found as its own loader (the `bindings` package) would find it
 * first: `build/`, `build/Debug/`, then `build/Release/` of the package. `bindings` walks the stack
 * and throws a MODULE_NOT_FOUND per miss to get there (several ms on every store open of a
 * process); three stats say the same. Undefined: none of the three, and `bindings` searches the rest.
 */
function nativeBinding(): string | undefined {
  if (addon === undefined) {
    addon = null;
    try {
      const build = join(dirname(require.resolve('better-sqlite3/package.json')), 'build');
      for (const dir of ['', 'Debug', 'Release']) {
        const file = join(build, dir, 'better_sqlite3.node');
        if (existsSync(file)) {
          addon = file;
          break;
        }
      }
    } catch {
      /* bindings finds it */
    }
  }
  return addon ?? undefined;
}

export function openStore(options: OpenStoreOptions = {}): Store {
  const path = options.path ?? storePath(options.home ?? comisHome());
  let db: Database;
  try {
    if (!options.readonly) {
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
      makePrivate(path);
    }
    const Driver = require('better-sqlite3') as typeof BetterSqlite3;
    const binding = nativeBinding();
    db = new Driver(path, { readonly: options.readonly ?? false, fileMustExist: options.readonly ?? false, ...(binding ? { nativeBinding: binding } : {}) });
  } catch (err) {
    throw new ComisError('STORE_ERROR', `Cannot open the store ${path}: ${(err as Error).message}.`, {
      hint: 'Check that $COMIS_HOME is writable; `comis` creates it on first use.',
    });
  }
  try {
    db.pragma('busy_timeout = 5000');
    if (!options.readonly) {
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
    }
    db.pragma('foreign_keys = ON');
    const version = options.readonly ? currentVersion(db) : migrate(db, options.migrations ?? MIGRATIONS);
    // The start-up sweep of durable runs: settles interrupted, expired and broken ones; runs nothing.
    if (!options.readonly && options.sweep !== false) sweepQuietly(db, dirname(path));
    return { db, path, version, close: () => db.close() };
  } catch (err) {
    db.close();
    if (err instanceof ComisError) throw err;
    throw new ComisError('STORE_ERROR', `The store ${path} could not be prepared: ${(err as Error).message}.`, {
      hint: 'If the file is corrupt, move it aside; comis creates a fresh store.',
    });
  }
}

/**
 * The start-up sweep of a connection opened with `sweep: false`, run later: `comis orchestrate`
 * opens its one connection for the jail uid registry before the spawn and sweeps once the jail runs.
 */
export function startupSweep(store: Store): void {
  sweepQuietly(store.db, dirname(store.path));
}

function sweepQuietly(db: Database, home: string): void {
  try {
    sweepDurableRuns(db, home);
  } catch {
    /* a sweep that cannot finish leaves its rows for the next opening; the store still serves */
  }
}

/**
 * The store holds run records, audit rows and jail uids: private to the invoking user.
 * SQLite creates the database with the umask's mode (often 0644) and gives its -wal and
 * -shm files the database's own mode, so the file is created 0600 first, and a store an
 * older comis left readable to others is tightened (with its -wal/-shm) on open.
 */
function makePrivate(path: string): void {
  try {
    closeSync(openSync(path, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW, 0o600));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    try {
      const st = lstatSync(file);
      if (st.isFile() && st.uid === process.getuid?.() && (st.mode & 0o077) !== 0) chmodSync(file, st.mode & 0o700);
    } catch {
      /* absent (-wal/-shm before the first write) */
    }
  }
}

function currentVersion(db: Database): number {
  const exists = db.prepare("SELECT 1 FROM sqlite_master WHERE type='table' AND name='schema_migrations'").get();
  if (!exists) return 0;
  const row = db.prepare('SELECT MAX(version) AS v FROM schema_migrations').get() as { v: number | null };
  return row.v ?? 0;
}

/** Applies pending migrations, each in its own transaction; returns the new version. */
export function migrate(db: Database, migrations: readonly Migration[]): number {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    applied_at INTEGER NOT NULL
  )`);
  const applied = currentVersion(db);
  const known = Math.max(0, ...migrations.map((m) => m.version));
  if (applied > known) {
    throw new ComisError('STORE_ERROR', `The store is at schema version ${applied}, newer than this comis knows (${known}).`, {
      hint: 'Upgrade comis, or point COMIS_HOME elsewhere.',
    });
  }
  const insert = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
  for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
    if (m.version <= applied) continue;
    db.transaction(() => {
      db.exec(m.sql);
      insert.run(m.version, m.name, Date.now());
    })();
  }
  return currentVersion(db);
}
