/**
 * Versioned schema migrations of the comis store. Each capability adds its
 * own tables in its own migration, appended here; applied migrations are
 * never edited (a changed migration would leave old stores behind).
 *
 * Content-free by design: no table holds script text, stdout, tool arguments,
 * tool results, file contents or bearers. The memory index (version 7) keeps
 * to that: its full-text table is contentless (FTS5 `content=''`), holding
 * the inverted index of the agent's memory notes and where each chunk lies
 * (path, line, byte range), never their text; snippets are read back from
 * the files themselves, through the confinement module. The one exception is
 * the outbox (version 8): a message_* send of an agent with durability on keeps
 * its text while it is pending or failed (a crash must not lose it) and drops
 * it once delivered or dropped.
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
  {
    version: 6,
    name: 'refused runs',
    // A run refused before it started (exit 4: a missing capability, a tool-policy
    // or role deny in pre-flight, an assistant agent, an approval required or
    // refused) is recorded with outcome 'refused' and a content-free reason:
    // the error code, a closed reason and the capabilities and tool-table names
    // the refusal named (comma-separated; see recordRefusal). SQLite cannot alter
    // a CHECK constraint, so the table is rebuilt: same columns, same rows, same
    // indexes (runs_window also covers refusal_reason, for fleet's one pass).
    sql: `
      CREATE TABLE runs_v6 (
        run_id               TEXT PRIMARY KEY,
        session_key          TEXT NOT NULL,
        agent_id             TEXT NOT NULL,
        lease_id             TEXT,
        parent_run_id        TEXT,
        language             TEXT NOT NULL,
        started_at           INTEGER NOT NULL,
        ended_at             INTEGER,
        duration_ms          INTEGER,
        outcome              TEXT CHECK (outcome IN ('success', 'failure', 'refused')),
        exit_code            INTEGER,
        failure_class        TEXT CHECK (failure_class IN ('timeout', 'stdout_cap', 'nonzero_exit', 'spawn_fail', 'lease_absent')),
        stdout_chars         INTEGER NOT NULL DEFAULT 0,
        result_ref_count     INTEGER NOT NULL DEFAULT 0,
        result_ref_bytes     INTEGER NOT NULL DEFAULT 0,
        est_saved_tokens     INTEGER,
        saved_ratio          REAL,
        refusal_code         TEXT CHECK (refusal_code IN ('CAPABILITY_DENIED', 'APPROVAL_REQUIRED', 'APPROVAL_REFUSED')),
        refusal_reason       TEXT CHECK (refusal_reason IN ('profile_no_orchestrate', 'capability_missing', 'surface_disabled', 'explicit_deny', 'not_in_profile', 'role_coordinator', 'approval_required', 'approval_refused')),
        refusal_capabilities TEXT,
        refusal_tools        TEXT,
        CHECK ((outcome = 'refused') = (refusal_code IS NOT NULL AND refusal_reason IS NOT NULL))
      );
      INSERT INTO runs_v6 (run_id, session_key, agent_id, lease_id, parent_run_id, language, started_at, ended_at, duration_ms,
          outcome, exit_code, failure_class, stdout_chars, result_ref_count, result_ref_bytes, est_saved_tokens, saved_ratio)
        SELECT run_id, session_key, agent_id, lease_id, parent_run_id, language, started_at, ended_at, duration_ms,
          outcome, exit_code, failure_class, stdout_chars, result_ref_count, result_ref_bytes, est_saved_tokens, saved_ratio
        FROM runs;
      DROP TABLE runs;
      ALTER TABLE runs_v6 RENAME TO runs;
      CREATE INDEX runs_session ON runs(session_key, started_at);
      CREATE INDEX runs_started ON runs(started_at);
      CREATE INDEX runs_lease ON runs(lease_id);
      CREATE INDEX runs_window ON runs(started_at, outcome, failure_class, result_ref_count, result_ref_bytes, est_saved_tokens, refusal_reason);
    `,
  },
  {
    version: 7,
    name: 'memory full-text index',
    // memory_search: the Markdown under <workspace>/memory/, per workspace real path.
    // memory_files says what was indexed (mtime, size, inode: a change of any reindexes
    // the file); memory_chunks says where each indexed chunk lies; memory_fts is the
    // contentless FTS5 index over the chunks (rowid = memory_chunks.id), so the store
    // holds no note text. contentless_delete lets a changed file's rows go by rowid.
    sql: `
      CREATE TABLE memory_files (
        workspace      TEXT NOT NULL,
        path           TEXT NOT NULL,
        mtime_ms       INTEGER NOT NULL,
        size           INTEGER NOT NULL,
        ino            INTEGER NOT NULL,
        indexed_bytes  INTEGER NOT NULL,
        indexed_at     INTEGER NOT NULL,
        PRIMARY KEY (workspace, path)
      );
      CREATE TABLE memory_chunks (
        id          INTEGER PRIMARY KEY,
        workspace   TEXT NOT NULL,
        path        TEXT NOT NULL,
        line        INTEGER NOT NULL,
        byte_start  INTEGER NOT NULL,
        byte_len    INTEGER NOT NULL
      );
      CREATE INDEX memory_chunks_file ON memory_chunks(workspace, path);
      CREATE VIRTUAL TABLE memory_fts USING fts5(text, content='', contentless_delete=1, tokenize='porter unicode61 remove_diacritics 2');
    `,
  },
  {
    version: 8,
    name: 'message outbox and send rate',
    // message_* (issue 16). outbox: one row per (agent, operationId) of an agent with
    // autonomy.durability.enabled, written (synchronous=FULL, BEGIN IMMEDIATE) before
    // the delivery and marked delivered after; a repeated operationId is answered from
    // it. The one exception to "content-free": payload holds the message (text, emoji,
    // message id) while it is pending or failed, because a crash must not lose it; it
    // is set to NULL once delivered or dropped. target is the resolved channel (type,
    // endpoint, path, names of env variables), never a secret. claim_pid/claimed_at say
    // which process is delivering it (a dead claimant's row is swept).
    // message_sends: one row per send of any agent (durable or not), for maxPerHour.
    sql: `
      CREATE TABLE outbox (
        agent_id      TEXT NOT NULL,
        operation_id  TEXT NOT NULL,
        run_id        TEXT NOT NULL,
        action        TEXT NOT NULL CHECK (action IN ('send', 'reply', 'react')),
        channel       TEXT NOT NULL,
        channel_id    TEXT NOT NULL,
        target        TEXT NOT NULL,
        payload       TEXT,
        state         TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'failed', 'dropped')),
        attempts      INTEGER NOT NULL DEFAULT 0,
        claim_pid     INTEGER,
        claimed_at    INTEGER,
        created_at    INTEGER NOT NULL,
        updated_at    INTEGER NOT NULL,
        delivered_at  INTEGER,
        message_id    TEXT,
        error         TEXT,
        PRIMARY KEY (agent_id, operation_id)
      );
      CREATE INDEX outbox_open ON outbox(state, created_at) WHERE state IN ('pending', 'failed');
      CREATE TABLE message_sends (
        agent_id  TEXT NOT NULL,
        at        INTEGER NOT NULL
      );
      CREATE INDEX message_sends_at ON message_sends(agent_id, at);
    `,
  },
  {
    version: 9,
    name: 'durable runs: resumable and orphaned',
    // One row per durable run (orchestrate with autonomy.durability on) and per coordinator
    // plan run: its state, never its content. script_ref and checkpoint_ref name files of the
    // run's durable area ($COMIS_HOME/durable/<runId>/), relative to $COMIS_HOME. owner_pid and
    // owner_start name the comis process running it, so a start-up sweep can tell a live run
    // from one whose comis died (status interrupted). reason is a closed enum (durable-runs.ts).
    sql: `
      CREATE TABLE resumable_runs (
        run_id          TEXT PRIMARY KEY,
        kind            TEXT NOT NULL CHECK (kind IN ('orchestrate', 'plan')),
        agent_id        TEXT NOT NULL,
        session_key     TEXT NOT NULL,
        status          TEXT NOT NULL CHECK (status IN ('running', 'resumable', 'orphaned', 'resumed', 'completed', 'reclaimed')),
        reason          TEXT CHECK (reason IN ('checkpoint_missing', 'script_missing', 'expired', 'resume_prestart_failed', 'interrupted')),
        script_ref      TEXT,
        checkpoint_ref  TEXT,
        resumed_from    TEXT,
        resumed_by      TEXT,
        owner_pid       INTEGER,
        owner_start     TEXT,
        created_at      INTEGER NOT NULL,
        updated_at      INTEGER NOT NULL,
        expires_at      INTEGER NOT NULL
      );
      CREATE INDEX resumable_runs_status ON resumable_runs(status);
    `,
  },
  {
    version: 10,
    name: 'one-shot repair of a failed run',
    // Content-free: whether the model was asked, the recoverable class and the outcome,
    // closed enums (store/runs.ts REPAIR_CLASSES, REPAIR_OUTCOMES); NULL on a run that
    // did not fail the first time (and on runs recorded before this migration).
    // runs_repair serves fleet's repairs count without touching runs_window.
    sql: `
      ALTER TABLE runs ADD COLUMN repair_attempted INTEGER CHECK (repair_attempted IN (0, 1));
      ALTER TABLE runs ADD COLUMN repair_class TEXT CHECK (repair_class IN ('bad_import', 'comis_tools_misuse', 'syntax_error', 'type_error'));
      ALTER TABLE runs ADD COLUMN repair_outcome TEXT CHECK (repair_outcome IN ('repaired', 'rerun_failed', 'refused', 'model_error', 'no_fix', 'not_recoverable', 'class_off', 'no_model', 'disabled'));
      CREATE INDEX runs_repair ON runs(started_at, repair_outcome) WHERE repair_attempted = 1;
    `,
  },
];
