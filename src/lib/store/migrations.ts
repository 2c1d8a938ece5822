/**
 * Versioned schema migrations of the comis store. Each capability adds its
 * own tables in its own migration, appended here; applied migrations are
 * never edited (a changed migration would leave old stores behind).
 *
 * Content-free by design: no table holds script text, stdout, tool arguments,
 * tool results, file contents or bearers.
 */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'sessions',
    sql: `
      CREATE TABLE sessions (
        session_key TEXT PRIMARY KEY,
        agent_id    TEXT NOT NULL,
        created_at  INTEGER NOT NULL,
        updated_at  INTEGER NOT NULL
      );
      CREATE INDEX sessions_updated ON sessions(updated_at DESC);
    `,
  },
];
