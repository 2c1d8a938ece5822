/**
 * `comis fleet`: store-wide findings over a time window, each
 * `{code, severity, subject?, count, detail, hint, data?}`, ordered by
 * severity, then count, then code and subject. The findings come from a
 * table of sources ({@link FLEET_SOURCES}), each reading the window's sums
 * (store/fleet-rollup.ts: one pass over the window's indexes, or, with a
 * rollup file, the cached whole days plus the two partial ones, so a report
 * over 100,000 runs reads only the rows of its first and last day).
 *
 * Security property: counts, closed enums and names only ("safe to paste
 * into a review"); nothing a script printed, read or passed is stored, so
 * nothing of it can appear.
 */
import { ComisError } from '../errors.js';
import { windowSums, type WindowSums } from '../store/fleet-rollup.js';
import { deniedByPolicy, deniedCapabilities, durableRunCounts, windowRepairs, windowRunStats, compareText, type DenyReason, type WindowRunStats } from '../store/obs-queries.js';
import type { FailureClass, RefusalReason } from '../store/runs.js';
import type { Database } from '../store/store.js';

export const FINDING_SEVERITIES = ['error', 'warning', 'info'] as const;
export type FindingSeverity = (typeof FINDING_SEVERITIES)[number];

export const FINDING_CODES = ['orchestrate_failed', 'orchestrate_refused', 'capability_denied', 'policy_denied', 'runs_orphaned', 'runs_resumable', 'orchestrate_efficiency'] as const;
export type FindingCode = (typeof FINDING_CODES)[number];

export interface FleetFinding {
  code: FindingCode;
  severity: FindingSeverity;
  /**
   * What the finding is about: a failure class, a capability, or (for a deny
   * that needed no capability: the control plane, an unknown tool) the tool
   * or the reason class; for policy_denied the tool.
   */
  subject?: string;
  count: number;
  detail: string;
  hint: string;
  /** Extra counts for machines (never content). */
  data?: Record<string, number>;
}

export interface FleetWindow {
  /** The --since value as given. */
  spec: string;
  since: string;
  until: string;
}

export interface FleetReport {
  window: FleetWindow;
  runCount: number;
  findings: FleetFinding[];
}

/** How many denied capabilities fleet lists. */
export const TOP_DENIED = 5;
export const DEFAULT_SINCE = '24h';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/**
 * Parses `--since`: a duration back from `now` (`90m`, `24h`, `30d`, `2w`,
 * `500ms`, `45s`) or an ISO 8601 date or date-time. Throws USAGE otherwise.
 */
export function parseSince(spec: string, now: number): number {
  const text = spec.trim();
  const m = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)$/i.exec(text);
  let since: number | undefined;
  if (m) since = now - Number(m[1]) * UNIT_MS[m[2]!.toLowerCase()]!;
  else if (/^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(text)) {
    const t = Date.parse(text);
    if (Number.isFinite(t)) since = t;
  }
  if (since === undefined || !Number.isFinite(since)) {
    throw new ComisError('USAGE', `--since "${text.slice(0, 60)}" is neither a duration nor a date.`, {
      hint: 'Use a duration such as 90m, 24h, 30d or 2w, or an ISO date such as 2025-01-31.',
    });
  }
  if (since > now) throw new ComisError('USAGE', `--since "${text.slice(0, 60)}" is in the future.`, { hint: 'Give a past date or a duration such as 24h.' });
  return since;
}

interface SourceContext {
  since: number;
  until: number;
  sums: WindowSums;
}

type FleetSource = (db: Database, ctx: SourceContext) => FleetFinding[];

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

const FAILURE_TEXT: Record<FailureClass, { what: string; hint: string }> = {
  spawn_fail: { what: 'never started a jail', hint: 'Run `comis jail probe`; then `comis explain <runId>` on one of them.' },
  timeout: { what: 'ran past the wall-clock timeout', hint: 'Raise --timeout-ms or autonomy.limits.timeoutMs, or split the work; `comis explain <sessionKey>` shows which.' },
  stdout_cap: { what: 'printed past the stdout hard cap', hint: 'Scripts should print summaries and keep large data in ResultRefs.' },
  nonzero_exit: { what: 'exited non-zero', hint: '`comis explain <sessionKey>` pins each one to its run; re-run a script to see its stderr tail.' },
};

const REFUSAL_TEXT: Record<RefusalReason, string> = {
  profile_no_orchestrate: 'An agent whose profile gets no orchestrate (assistant) was asked to run scripts: give it profile standard, or use another agent.',
  capability_missing: 'Scripts call tools needing a capability their agent lacks: use an agent whose profile holds it, or drop the call.',
  surface_disabled: "Scripts call write while the agent's write surface is off: set autonomy.write: true for the agent, or drop the call.",
  explicit_deny: "Scripts call a tool the agent's skills.toolPolicy.deny removes: drop the call, or change the deny list.",
  not_in_profile: "Scripts call a tool outside the agent's skills.toolPolicy.profile and allow list: add it to allow, or drop the call.",
  role_coordinator: 'A coordinator (autonomy.role) was given a script with write or another mutating tool: delegate that work to a child (`comis run`).',
  approval_required: 'The agent requires an approval per run (autonomy.approvals) and there was no terminal: pass --yes, or run interactively.',
  approval_refused: 'Runs were declined at the approval prompt.',
};

const DENY_HINT: Record<DenyReason, string> = {
  capability_missing: 'Scripts reach for a capability their agent lacks: use an agent whose profile holds it, or drop the call.',
  surface_disabled: 'Scripts call a surface that is off (e.g. autonomy.write): turn it on for the agent, or drop the call.',
  denied_by_origin: 'Scripts try the administrative control plane, which is never reachable from a jail: review those scripts.',
  unknown_tool: 'Scripts call tools that do not exist: check them against comis_tools.describe().',
  explicit_deny: "The agent's skills.toolPolicy.deny removes the tool: drop the call, or change the deny list.",
  not_in_profile: "The tool is not in the agent's skills.toolPolicy.profile or allow list: add it to allow, or drop the call.",
  role_coordinator: 'A coordinator (autonomy.role) has no write, message or other mutating tool: delegate that work to a child (`comis run`).',
  host_denied: "web_fetch reached for a host the agent's web.fetch.allowHosts/denyHosts refuse: fix the URL, or the host lists.",
  other: 'See `comis explain <sessionKey>` for the runs that were denied.',
};

function efficiencyFinding(s: WindowRunStats): FleetFinding {
  return {
    code: 'orchestrate_efficiency',
    severity: 'info',
    count: s.runs,
    detail:
      `${plural(s.runs, 'orchestrate run')} (${s.failures} failed${s.refused > 0 ? `, ${s.refused} refused before they started` : ''}); ${plural(s.runsWithResultRefs, 'run')} materialized ` +
      `${plural(s.resultRefCount, 'ResultRef')} (${s.resultRefBytes} bytes), an estimated ${s.estSavedTokens} tokens kept out of context.` +
      (s.repairs.attempted > 0 ? ` ${plural(s.repairs.attempted, 'one-shot repair')} attempted, ${s.repairs.succeeded} succeeded.` : ''),
    hint: 'estSavedTokens is an estimate: (materialized ResultRef bytes − stdout chars re-entered) / 4, clamped at 0.',
    data: {
      runs: s.runs,
      failedRuns: s.failures,
      refusedRuns: s.refused,
      runsWithResultRefs: s.runsWithResultRefs,
      resultRefCount: s.resultRefCount,
      resultRefBytes: s.resultRefBytes,
      estSavedTokens: s.estSavedTokens,
      repairsAttempted: s.repairs.attempted,
      repairsSucceeded: s.repairs.succeeded,
    },
  };
}

/** The finding sources, in no particular order (the report sorts). */
export const FLEET_SOURCES: readonly FleetSource[] = [
  function runs(db, { sums, since, until }) {
    const stats = windowRunStats(sums.runs, windowRepairs(db, since, until));
    const failures: FleetFinding[] = stats.failureClasses.map(({ failureClass, count }) => ({
      code: 'orchestrate_failed',
      severity: 'error',
      subject: failureClass,
      count,
      detail: `${plural(count, 'run')} ${FAILURE_TEXT[failureClass].what} (${failureClass}).`,
      hint: FAILURE_TEXT[failureClass].hint,
    }));
    // Refused runs (exit 4, nothing ran), one finding per reason: a warning, since the refusal held.
    const refused: FleetFinding[] = stats.refusalReasons.map(({ reason, count }) => ({
      code: 'orchestrate_refused',
      severity: 'warning',
      subject: reason,
      count,
      detail: `${plural(count, 'run')} refused before ${count === 1 ? 'it' : 'they'} started (${reason}).`,
      hint: `${REFUSAL_TEXT[reason]} \`comis explain <sessionKey>\` names each one.`,
    }));
    return [efficiencyFinding(stats), ...failures, ...refused];
  },
  function denied(_db, { sums }) {
    const { list, total } = deniedCapabilities(sums.denies, TOP_DENIED);
    return list.map((d, i) => ({
      code: 'capability_denied',
      severity: 'warning',
      subject: d.capability,
      count: d.events,
      detail:
        `${d.capability} denied ${plural(d.events, 'time')} in ${plural(d.runs, 'run')}, mostly on ${d.topTool} (${d.topReason})` +
        (i === list.length - 1 && total > list.length ? `; ${total - list.length} more capabilities not listed.` : '.'),
      hint: DENY_HINT[d.topReason],
      data: { events: d.events, runs: d.runs },
    }));
  },
  function policyDenied(_db, { sums }) {
    // Tool-policy and role denies, apart from capability denies: the capability was held.
    const { list, total } = deniedByPolicy(sums.denies, TOP_DENIED);
    return list.map((d, i) => ({
      code: 'policy_denied',
      severity: 'warning',
      subject: d.capability,
      count: d.events,
      detail:
        `${d.capability} denied by tool policy ${plural(d.events, 'time')} in ${plural(d.runs, 'run')} (mostly ${d.topReason})` + (i === list.length - 1 && total > list.length ? `; ${total - list.length} more tools not listed.` : '.'),
      hint: DENY_HINT[d.topReason],
      data: { events: d.events, runs: d.runs },
    }));
  },
  function durable(db) {
    // Reports only when the store has the durable-runs table (migration 9).
    const counts = durableRunCounts(db);
    if (!counts) return [];
    const out: FleetFinding[] = [];
    if (counts.orphaned > 0) {
      out.push({
        code: 'runs_orphaned',
        severity: 'warning',
        count: counts.orphaned,
        detail: `${plural(counts.orphaned, 'durable run')} surfaced as orphaned (interrupted, expired, or its pinned script or checkpoint gone).`,
        hint: 'Orphans cannot be resumed; their artifacts are reclaimed. `comis explain <runId>` names the reason; re-run the work.',
      });
    }
    if (counts.resumable > 0) {
      out.push({
        code: 'runs_resumable',
        severity: 'warning',
        count: counts.resumable,
        detail: `${plural(counts.resumable, 'run')} left resumable: timed out or interrupted, with its pinned script on disk.`,
        hint: 'Resume one with `comis orchestrate --resume <runId>`, or let the 24 h TTL reap it.',
      });
    }
    return out;
  },
];

const SEVERITY_RANK: Record<FindingSeverity, number> = { error: 0, warning: 1, info: 2 };

export function compareFindings(a: FleetFinding, b: FleetFinding): number {
  return SEVERITY_RANK[a.severity] - SEVERITY_RANK[b.severity] || b.count - a.count || compareText(a.code, b.code) || compareText(a.subject ?? '', b.subject ?? '');
}

export interface FleetOptions {
  /** The --since value (default 24h). */
  since?: string;
  /** The end of the window, ms since the epoch (default: now). */
  now?: number;
  /**
   * A file to keep the per-day rollup in (`$COMIS_HOME/cache/fleet-rollup.json` for the
   * command); without one every row of the window is read. The report is the same.
   */
  rollupFile?: string;
}

/** Builds the fleet report over [since, now]. */
export function fleet(db: Database, options: FleetOptions = {}): FleetReport {
  const until = options.now ?? Date.now();
  const spec = options.since ?? DEFAULT_SINCE;
  const since = parseSince(spec, until);
  const sums = windowSums(db, since, until, options.rollupFile);
  const findings = FLEET_SOURCES.flatMap((source) => source(db, { since, until, sums })).sort(compareFindings);
  const efficiency = findings.find((f) => f.code === 'orchestrate_efficiency');
  return {
    window: { spec, since: new Date(since).toISOString(), until: new Date(until).toISOString() },
    runCount: efficiency?.count ?? 0,
    findings,
  };
}

/** The report for a store that does not exist yet: nothing recorded, nothing found. */
export function emptyFleet(options: FleetOptions = {}): FleetReport {
  const until = options.now ?? Date.now();
  const spec = options.since ?? DEFAULT_SINCE;
  const since = parseSince(spec, until);
  return {
    window: { spec, since: new Date(since).toISOString(), until: new Date(until).toISOString() },
    runCount: 0,
    findings: [efficiencyFinding({ runs: 0, failures: 0, runsWithResultRefs: 0, resultRefCount: 0, resultRefBytes: 0, estSavedTokens: 0, failureClasses: [], refused: 0, refusalReasons: [], repairs: { attempted: 0, succeeded: 0 } })],
  };
}
