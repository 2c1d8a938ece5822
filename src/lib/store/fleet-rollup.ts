/**
 * The aggregates `comis fleet` reports over a window, from the store's
 * append-only tables (`runs`, `audit_events`: comis inserts rows and never
 * updates or deletes them), with an optional per-UTC-day rollup cached in a
 * file so the cost of a report does not grow with the number of runs.
 *
 * Without a cache file every row of the window is read (one pass over each
 * table's window index). With one, the window is split into whole UTC days
 * that ended before today, answered from the rollup, and the two partial
 * days at its ends, read from the tables. The rollup holds, per day: the run
 * sums (additive), the deny tallies by capability, tool and reason
 * (additive), and the run ids denied per capability and per tool (so the
 * distinct-run counts stay exact when a run's denies straddle midnight).
 *
 * Keeping it true: the rollup covers the rows up to a recorded rowid of each
 * table. Rows inserted later are folded into their day on the next read
 * (a rowid range: cheap), days that closed since are read whole, and the
 * cache is thrown away and rebuilt when the store is not the one it was built
 * from (another file, or the row at the recorded rowid changed: a store moved
 * aside or vacuumed), when comis or this format changed, or when the file is
 * unreadable. Only the last {@link KEEP_DAYS} days are kept; a window reaching
 * further reads the older part from the tables.
 *
 * Security property: the file holds counts, closed enums, names (each passed
 * through the same safe-name check as the queries) and run ids (only ever
 * counted, never printed); it is written 0600 in a 0700 directory, atomically
 * (temporary file and rename). A cache that cannot be written costs the next
 * report a rebuild, nothing else.
 */
import { statSync } from 'node:fs';

import { readPrivateFile, writePrivateFileAtomic } from '../private-file.js';
import { comisVersion } from '../version.js';
import { DENY_REASONS, safeName, type DenyReason } from './obs-queries.js';
import { FAILURE_CLASSES, REFUSAL_REASONS } from './runs.js';
import type { Database } from './store.js';

const DAY = 86_400_000;
/** Days of rollup kept (older windows read their older part from the tables). */
export const KEEP_DAYS = 92;
const FORMAT = 1;

// The run sums, in this order: an array so days add up column by column.
const RUN_SUMS = [
  'COUNT(*)',
  "COALESCE(SUM(outcome = 'failure'), 0)",
  'COALESCE(SUM(result_ref_count > 0), 0)',
  'COALESCE(SUM(result_ref_count), 0)',
  'COALESCE(SUM(result_ref_bytes), 0)',
  'COALESCE(SUM(CASE WHEN result_ref_count > 0 THEN MAX(COALESCE(est_saved_tokens, 0), 0) ELSE 0 END), 0)',
  "COALESCE(SUM(outcome = 'refused'), 0)",
  ...FAILURE_CLASSES.map((c) => `COALESCE(SUM(failure_class = '${c}'), 0)`),
  ...REFUSAL_REASONS.map((r) => `COALESCE(SUM(refusal_reason = '${r}'), 0)`),
].join(', ');
const RUN_WIDTH = 7 + FAILURE_CLASSES.length + REFUSAL_REASONS.length;
/** Run sums of a stretch of time: the columns of RUN_SUMS (read by obs-queries.ts's windowRunStats). */
export type RunSums = number[];

/** Deny tallies and denied run ids of a stretch of time; names already passed through safeName. */
export interface DenySums {
  /** `capability\0tool\0reason` -> events. */
  tallies: Map<string, number>;
  /** capability -> the runs denied on it. */
  capRuns: Map<string, Set<string>>;
  /** tool -> the runs denied on it with capability `none`. */
  noneToolRuns: Map<string, Set<string>>;
}

export interface WindowSums {
  runs: RunSums;
  denies: DenySums;
}

const emptyRuns = (): RunSums => new Array<number>(RUN_WIDTH).fill(0);
const emptyDenies = (): DenySums => ({ tallies: new Map(), capRuns: new Map(), noneToolRuns: new Map() });

function addRuns(into: RunSums, row: readonly unknown[]): void {
  for (let i = 0; i < RUN_WIDTH; i++) into[i] = (into[i] ?? 0) + (Number(row[i]) || 0);
}

function safeReason(value: unknown): DenyReason {
  return (DENY_REASONS as readonly unknown[]).includes(value) ? (value as DenyReason) : 'other';
}

function addToSet(map: Map<string, Set<string> | string[]>, key: string, id: string): void {
  let set = map.get(key);
  if (!(set instanceof Set)) map.set(key, (set = new Set(set)));
  set.add(id);
}

/** One grouped deny row: capability, tool, reason, run_id, events (raw, as stored). */
function addDeny(into: DenySums | DayDenies, capability: unknown, tool: unknown, reason: unknown, runId: unknown, n: number): void {
  const cap = safeName(capability);
  const t = safeName(tool);
  const key = `${cap}\u0000${t}\u0000${safeReason(reason)}`;
  into.tallies.set(key, (into.tallies.get(key) ?? 0) + n);
  const id = String(runId);
  addToSet(into.capRuns, cap, id);
  if (capability === 'none') addToSet(into.noneToolRuns, t, id);
}

/**
 * Each key's run ids of several days, gathered to be joined once ({@link unionInto}): a report runs
 * once, cold, so a JavaScript loop adding ids one by one ran in the interpreter (~28,000 ids for
 * 30 days of the scale bench: 20 ms), where building a Set from one array is one native call.
 */
type IdParts = Map<string, Iterable<string>[]>;

function gather(into: IdParts, from: Map<string, Iterable<string>>): void {
  for (const [k, ids] of from) {
    const parts = into.get(k);
    if (parts) parts.push(ids);
    else into.set(k, [ids]);
  }
}

/** into[k] = into[k] ∪ every part gathered for k. */
function unionInto(into: Map<string, Set<string>>, gathered: IdParts): void {
  for (const [k, parts] of gathered) {
    const own = into.get(k);
    const arrays = parts.map((p) => (Array.isArray(p) ? (p as string[]) : [...p]));
    into.set(k, new Set((own ? [...own] : []).concat(...arrays)));
  }
}

const DENY_COLUMNS = 'capability, tool, reason, run_id, COUNT(*) AS n';
const DENY_GROUP = 'capability, tool, reason, run_id';

/** The sums of [from, to] (ms, both inclusive), read from the tables through the window indexes. */
function readRange(db: Database, from: number, to: number, into: WindowSums): void {
  if (to < from) return;
  const row = db.prepare(`SELECT ${RUN_SUMS} FROM runs WHERE started_at >= ? AND started_at <= ?`).raw().get(from, to) as unknown[];
  addRuns(into.runs, row);
  const rows = db.prepare(`SELECT ${DENY_COLUMNS} FROM audit_events WHERE decision = 'deny' AND at >= ? AND at <= ? GROUP BY ${DENY_GROUP}`).raw().all(from, to) as unknown[][];
  for (const r of rows) addDeny(into.denies, r[0], r[1], r[2], r[3], Number(r[4]));
}

/** The sums of the window [since, until] (ms, both inclusive), read from the tables alone. */
export function windowSumsUncached(db: Database, since: number, until: number): WindowSums {
  const out: WindowSums = { runs: emptyRuns(), denies: emptyDenies() };
  readRange(db, since, until, out);
  return out;
}

// ------------------------------------------------------------ the cached rollup

interface Day {
  runs: RunSums;
  /** As DenySums, but a day read from the cache file keeps its run id lists as loaded (arrays). */
  denies: DayDenies;
}

interface DayDenies {
  tallies: Map<string, number>;
  capRuns: Map<string, Set<string> | string[]>;
  noneToolRuns: Map<string, Set<string> | string[]>;
}

interface Mark {
  /** Highest rowid covered. */
  upto: number;
  /** What the row at `upto` held (a store replaced or vacuumed no longer matches). */
  id: string | null;
}

interface Rollup {
  /** Days (index = ms / DAY) in [first, closedEnd) are complete up to the marks. */
  first: number;
  closedEnd: number;
  runs: Mark;
  audit: Mark;
  days: Map<number, Day>;
}

interface FileShape {
  v: number;
  comis: string;
  store: string;
  dev: number;
  ino: number;
  first: number;
  closedEnd: number;
  runs: Mark;
  audit: Mark;
  days: [number, RunSums, [string, number][], [string, string[]][], [string, string[]][]][];
}

function markOf(db: Database, table: 'runs' | 'audit'): Mark {
  const sql = table === 'runs' ? 'SELECT MAX(rowid) AS m FROM runs' : 'SELECT MAX(id) AS m FROM audit_events';
  const upto = Number((db.prepare(sql).get() as { m: number | null }).m ?? 0);
  return { upto, id: idAt(db, table, upto) };
}

function idAt(db: Database, table: 'runs' | 'audit', rowid: number): string | null {
  if (rowid === 0) return null;
  const row =
    table === 'runs'
      ? (db.prepare('SELECT run_id AS id FROM runs WHERE rowid = ?').get(rowid) as { id: string } | undefined)
      : (db.prepare("SELECT run_id || ' ' || at AS id FROM audit_events WHERE id = ?").get(rowid) as { id: string } | undefined);
  return row ? String(row.id) : null;
}

/** Reads whole days [fromDay, toDay) from the tables, every rowid. */
function readDays(db: Database, fromDay: number, toDay: number, days: Map<number, Day>): void {
  if (toDay <= fromDay) return;
  const day = (d: number): Day => {
    let x = days.get(d);
    if (!x) days.set(d, (x = { runs: emptyRuns(), denies: emptyDenies() }));
    return x;
  };
  const runRows = db
    .prepare(`SELECT CAST(started_at / ${DAY} AS INTEGER) AS d, ${RUN_SUMS} FROM runs WHERE started_at >= ? AND started_at < ? GROUP BY d`)
    .raw()
    .all(fromDay * DAY, toDay * DAY) as unknown[][];
  for (const r of runRows) addRuns(day(Number(r[0])).runs, r.slice(1));
  const denyRows = db
    .prepare(`SELECT CAST(at / ${DAY} AS INTEGER) AS d, ${DENY_COLUMNS} FROM audit_events WHERE decision = 'deny' AND at >= ? AND at < ? GROUP BY d, ${DENY_GROUP}`)
    .raw()
    .all(fromDay * DAY, toDay * DAY) as unknown[][];
  for (const r of denyRows) addDeny(day(Number(r[0])).denies, r[1], r[2], r[3], r[4], Number(r[5]));
}

/** Folds the rows inserted after the marks whose day is in [first, closedEnd) (a run recorded after midnight, say). */
function foldNewRows(db: Database, r: Rollup, runsMark: Mark, auditMark: Mark): void {
  const day = (d: number): Day => {
    let x = r.days.get(d);
    if (!x) r.days.set(d, (x = { runs: emptyRuns(), denies: emptyDenies() }));
    return x;
  };
  const from = r.first * DAY;
  const to = r.closedEnd * DAY;
  if (runsMark.upto > r.runs.upto) {
    const rows = db
      .prepare(`SELECT CAST(started_at / ${DAY} AS INTEGER) AS d, ${RUN_SUMS} FROM runs WHERE rowid > ? AND rowid <= ? AND started_at >= ? AND started_at < ? GROUP BY d`)
      .raw()
      .all(r.runs.upto, runsMark.upto, from, to) as unknown[][];
    for (const row of rows) addRuns(day(Number(row[0])).runs, row.slice(1));
  }
  if (auditMark.upto > r.audit.upto) {
    const rows = db
      .prepare(`SELECT CAST(at / ${DAY} AS INTEGER) AS d, ${DENY_COLUMNS} FROM audit_events WHERE id > ? AND id <= ? AND decision = 'deny' AND at >= ? AND at < ? GROUP BY d, ${DENY_GROUP}`)
      .raw()
      .all(r.audit.upto, auditMark.upto, from, to) as unknown[][];
    for (const row of rows) addDeny(day(Number(row[0])).denies, row[1], row[2], row[3], row[4], Number(row[5]));
  }
  r.runs = runsMark;
  r.audit = auditMark;
}

function storeIdentity(db: Database): { store: string; dev: number; ino: number } | undefined {
  const file = db.name;
  if (!file || file === ':memory:') return undefined;
  try {
    const st = statSync(file);
    return { store: file, dev: st.dev, ino: st.ino };
  } catch {
    return undefined;
  }
}

const isNum = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
const isMark = (m: unknown): m is Mark => m !== null && typeof m === 'object' && isNum((m as Mark).upto) && ((m as Mark).id === null || typeof (m as Mark).id === 'string');

function load(db: Database, cacheFile: string, identity: { store: string; dev: number; ino: number }): Rollup | undefined {
  let shape: FileShape;
  try {
    shape = JSON.parse(readPrivateFile(cacheFile)) as FileShape;
  } catch {
    return undefined;
  }
  if (shape === null || typeof shape !== 'object' || shape.v !== FORMAT || shape.comis !== comisVersion()) return undefined;
  if (shape.store !== identity.store || shape.dev !== identity.dev || shape.ino !== identity.ino) return undefined;
  if (!isNum(shape.first) || !isNum(shape.closedEnd) || !isMark(shape.runs) || !isMark(shape.audit) || !Array.isArray(shape.days)) return undefined;
  // The rows at the marks must still be the ones the rollup was built from.
  if (idAt(db, 'runs', shape.runs.upto) !== shape.runs.id || idAt(db, 'audit', shape.audit.upto) !== shape.audit.id) return undefined;
  const days = new Map<number, Day>();
  for (const entry of shape.days) {
    if (!Array.isArray(entry) || entry.length !== 5) return undefined;
    const [d, runs, tallies, capRuns, noneToolRuns] = entry;
    if (!isNum(d) || !Array.isArray(runs) || runs.length !== RUN_WIDTH || !runs.every(isNum)) return undefined;
    const denies: DayDenies = emptyDenies();
    for (const [k, n] of tallies) {
      const parts = typeof k === 'string' ? k.split('\u0000') : [];
      if (parts.length !== 3 || safeName(parts[0]) !== parts[0] || safeName(parts[1]) !== parts[1] || safeReason(parts[2]) !== parts[2] || !isNum(n)) return undefined;
      denies.tallies.set(k, n);
    }
    for (const [into, list] of [
      [denies.capRuns, capRuns],
      [denies.noneToolRuns, noneToolRuns],
    ] as const) {
      for (const [k, ids] of list) {
        // The ids are only counted (never printed, never compared with anything but each other), so
        // the list is kept as parsed: no copy, no per-id check.
        if (safeName(k) !== k || !Array.isArray(ids)) return undefined;
        into.set(k, ids);
      }
    }
    days.set(d, { runs, denies });
  }
  return { first: shape.first, closedEnd: shape.closedEnd, runs: shape.runs, audit: shape.audit, days };
}

function save(cacheFile: string, identity: { store: string; dev: number; ino: number }, r: Rollup): void {
  const shape: FileShape = {
    v: FORMAT,
    comis: comisVersion(),
    ...identity,
    first: r.first,
    closedEnd: r.closedEnd,
    runs: r.runs,
    audit: r.audit,
    days: [...r.days].map(([d, x]) => [d, x.runs, [...x.denies.tallies], [...x.denies.capRuns].map(([k, s]) => [k, [...s]]), [...x.denies.noneToolRuns].map(([k, s]) => [k, [...s]])]),
  };
  try {
    writePrivateFileAtomic(cacheFile, JSON.stringify(shape));
  } catch {
    /* best effort: the next report rebuilds */
  }
}

/**
 * The rollup of the days before `today` (a day index), brought up to date
 * with the tables, read from `cacheFile` when it is still true, rebuilt
 * otherwise, and written back when it changed.
 */
function currentRollup(db: Database, cacheFile: string, today: number): Rollup | undefined {
  const identity = storeIdentity(db);
  if (!identity) return undefined;
  const runsMark = markOf(db, 'runs');
  const auditMark = markOf(db, 'audit');
  const first = today - KEEP_DAYS;
  let r = load(db, cacheFile, identity);
  let changed = false;
  if (!r || r.closedEnd > today || r.runs.upto > runsMark.upto || r.audit.upto > auditMark.upto) {
    r = { first, closedEnd: first, runs: runsMark, audit: auditMark, days: new Map() };
    readDays(db, first, today, r.days);
    r.closedEnd = today;
    changed = true;
  } else {
    if (runsMark.upto !== r.runs.upto || auditMark.upto !== r.audit.upto) {
      foldNewRows(db, r, runsMark, auditMark);
      changed = true;
    }
    if (r.closedEnd < today) {
      // Days that closed since: read whole (every rowid), after the fold, which
      // only touched days before the old closedEnd.
      readDays(db, Math.max(r.closedEnd, first), today, r.days);
      r.closedEnd = today;
      changed = true;
    }
    if (r.first < first) {
      for (const d of r.days.keys()) if (d < first) r.days.delete(d);
      r.first = first;
      changed = true;
    }
  }
  if (changed) save(cacheFile, identity, r);
  return r;
}

/**
 * The sums of the window [since, until] (ms, both inclusive). With a
 * `cacheFile`, whole closed days come from the rollup kept there; the result
 * is the same as {@link windowSumsUncached}.
 */
export function windowSums(db: Database, since: number, until: number, cacheFile?: string): WindowSums {
  if (cacheFile === undefined) return windowSumsUncached(db, since, until);
  // One read snapshot: a run recorded meanwhile is neither lost between the marks and the reads nor counted twice.
  return db.transaction(() => cachedWindowSums(db, since, until, cacheFile))();
}

function cachedWindowSums(db: Database, since: number, until: number, cacheFile: string): WindowSums {
  const today = Math.floor(until / DAY);
  // A window holding no whole closed day the rollup would keep (the default 24h, say) reads the tables alone.
  if (Math.max(Math.ceil(since / DAY), today - KEEP_DAYS) > Math.min(Math.floor((until + 1) / DAY), today) - 1) return windowSumsUncached(db, since, until);
  const rollup = currentRollup(db, cacheFile, today);
  if (!rollup) return windowSumsUncached(db, since, until);
  // Whole days inside the window that the rollup holds.
  const firstFull = Math.max(Math.ceil(since / DAY), rollup.first);
  const lastFull = Math.min(Math.floor((until + 1) / DAY), rollup.closedEnd) - 1; // inclusive
  if (lastFull < firstFull) return windowSumsUncached(db, since, until);
  const out: WindowSums = { runs: emptyRuns(), denies: emptyDenies() };
  readRange(db, since, firstFull * DAY - 1, out);
  readRange(db, (lastFull + 1) * DAY, until, out);
  const capRuns: IdParts = new Map();
  const noneToolRuns: IdParts = new Map();
  for (let d = firstFull; d <= lastFull; d++) {
    const day = rollup.days.get(d);
    if (!day) continue;
    addRuns(out.runs, day.runs);
    for (const [k, n] of day.denies.tallies) out.denies.tallies.set(k, (out.denies.tallies.get(k) ?? 0) + n);
    gather(capRuns, day.denies.capRuns);
    gather(noneToolRuns, day.denies.noneToolRuns);
  }
  unionInto(out.denies.capRuns, capRuns);
  unionInto(out.denies.noneToolRuns, noneToolRuns);
  return out;
}
