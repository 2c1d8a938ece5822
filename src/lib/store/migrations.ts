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
  {
    version: 2,
    name: 'orchestrate runs and capability audit',
    sql: `
      CREATE TABLE runs (
        run_id            TEXT PRIMARY KEY,
        session_key       TEXT NOT NULL,
        agent_id          TEXT NOT NULL,
        lease_id          TEXT,
        parent_run_id     TEXT,
        language          TEXT NOT NULL,
        started_at        INTEGER NOT NULL,
        ended_at          INTEGER,
        duration_ms       INTEGER,
        outcome           TEXT CHECK (outcome IN ('success', 'failure')),
        exit_code         INTEGER,
        failure_class     TEXT CHECK (failure_class IN ('timeout', 'stdout_cap', 'nonzero_exit', 'spawn_fail', 'lease_absent')),
        stdout_chars      INTEGER NOT NULL DEFAULT 0,
        result_ref_count  INTEGER NOT NULL DEFAULT 0,
        result_ref_bytes  INTEGER NOT NULL DEFAULT 0,
        est_saved_tokens  INTEGER,
        saved_ratio       REAL
      );
      CREATE INDEX runs_session ON runs(session_key, started_at);
      CREATE INDEX runs_started ON runs(started_at);
      CREATE INDEX runs_lease ON runs(lease_id);

      CREATE TABLE audit_events (
        id          INTEGER PRIMARY KEY,
        lease_id    TEXT NOT NULL,
        run_id      TEXT NOT NULL,
        tool        TEXT NOT NULL,
        capability  TEXT NOT NULL,
        decision    TEXT NOT NULL CHECK (decision IN ('allow', 'deny')),
        reason      TEXT,
        at          INTEGER NOT NULL
      );
      CREATE INDEX audit_lease ON audit_events(lease_id);
      CREATE INDEX audit_run ON audit_events(run_id);
      CREATE INDEX audit_at ON audit_events(at);

      CREATE TABLE run_tool_calls (
        run_id      TEXT NOT NULL,
        tool        TEXT NOT NULL,
        capability  TEXT NOT NULL,
        decision    TEXT NOT NULL,
        count       INTEGER NOT NULL,
        PRIMARY KEY (run_id, tool, capability, decision)
      );
    `,
  },
  {
    version: 3,
    name: 'observability indexes for explain and fleet',
    // fleet reads a window of runs and of denies. runs_window covers the one
    // pass over the window's runs (narrower than the rows, so a cold scan reads
    // a third of the pages); audit_deny_at is partial, holding only the denies
    // (a few percent of audit_events), and covers "most denied capabilities".
    sql: `
      CREATE INDEX runs_window ON runs(started_at, outcome, failure_class, result_ref_count, result_ref_bytes, est_saved_tokens);
      CREATE INDEX audit_deny_at ON audit_events(at, capability, tool, reason, run_id) WHERE decision = 'deny';
    `,
  },
  {
    version: 4,
    name: 'coordinator plan runs, child states and stored events',
    // comis run: one row per plan run, one per child, and the content-free
    // event stream (ids, counts, states, sizes) that --follow tails.
    sql: `
      CREATE TABLE plan_runs (
        plan_run_id         TEXT PRIMARY KEY,
        session_key         TEXT NOT NULL,
        lead_agent_id       TEXT NOT NULL,
        plan_name           TEXT NOT NULL,
        pid                 INTEGER,
        started_at          INTEGER NOT NULL,
        ended_at            INTEGER,
        status              TEXT NOT NULL CHECK (status IN ('running', 'success', 'failure', 'interrupted')),
        child_count         INTEGER NOT NULL,
        lead_context_chars  INTEGER NOT NULL DEFAULT 0
      );
      CREATE INDEX plan_runs_session ON plan_runs(session_key, started_at);

      CREATE TABLE plan_children (
        plan_run_id     TEXT NOT NULL,
        child_id        TEXT NOT NULL,
        agent_id        TEXT NOT NULL,
        run_id          TEXT,
        state           TEXT NOT NULL,
        duration_ms     INTEGER,
        steps           INTEGER NOT NULL DEFAULT 0,
        summary_chars   INTEGER NOT NULL DEFAULT 0,
        result_bytes    INTEGER,
        granted_caps    TEXT NOT NULL,
        denied_caps     TEXT NOT NULL,
        PRIMARY KEY (plan_run_id, child_id)
      );

      CREATE TABLE plan_events (
        id           INTEGER PRIMARY KEY,
        plan_run_id  TEXT NOT NULL,
        type         TEXT NOT NULL,
        payload      TEXT NOT NULL,
        at           INTEGER NOT NULL
      );
      CREATE INDEX plan_events_run ON plan_events(plan_run_id, id);
    `,
  },
  {
    version: 5,
    name: 'jail uid registry',
    // One host uid per workspace (real path), for jails started as root. Both
    // columns are UNIQUE: two workspaces never share a uid, whatever races.
    sql: `
      CREATE TABLE jail_uids (
        workspace     TEXT PRIMARY KEY,
        uid           INTEGER NOT NULL UNIQUE,
        allocated_at  INTEGER NOT NULL,
        used_at       INTEGER NOT NULL
      );
    `,
  },
];
