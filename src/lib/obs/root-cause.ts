/**
 * The deterministic `likelyRootCause` of `comis explain`: a fixed table of
 * rules over content-free run signals (failure class, exit code, denied
 * calls). Rules are tried in table order; the first rule that matches any run
 * decides the verdict, and among the runs it matches the newest one is named
 * (ties by run id). Same signals in, same verdict out: no clocks, no locale,
 * no randomness.
 *
 * Precedence, highest first (docs/commands/explain.md):
 *   spawn_fail > timeout > stdout_cap > deny > refused > nonzero_exit > failure > none
 * A jail that never started explains everything after it; a deny explains
 * the non-zero exit of a script that threw on it. A refusal (exit 4, nothing
 * ran) is a deny made in pre-flight: it ranks with the denies, after the ones
 * that reached the socket (those ran and may have done part of their work).
 */
import type { FailureClass, RepairRecord, ToolCallTally } from '../store/runs.js';
import { isPolicyDeny, type DenyReason, type DenyTally, type RunRefusal } from '../store/obs-queries.js';

export const ROOT_CAUSE_SIGNALS = ['spawn_fail', 'timeout', 'stdout_cap', 'deny', 'refused', 'nonzero_exit', 'failure', 'none'] as const;
export type RootCauseSignal = (typeof ROOT_CAUSE_SIGNALS)[number];

/** What the rules look at: ids, counts and closed enums of one run. */
export interface RunSignals {
  runId: string;
  agentId: string;
  startedAt: number;
  outcome: 'success' | 'failure' | 'refused' | null;
  exitCode: number | null;
  failureClass?: FailureClass | undefined;
  /** Only for a run refused before it started. */
  refusal?: RunRefusal | undefined;
  /** Only when the run's first attempt failed: what the one-shot repair did. */
  repair?: RepairRecord | undefined;
  durationMs: number | null;
  toolCalls: readonly ToolCallTally[];
  denies: readonly DenyTally[];
}

export interface LikelyRootCause {
  code: 'orchestrate_failed' | 'none';
  signal: RootCauseSignal;
  /** The run the verdict names (absent for `none`). */
  runId?: string;
  failureClass?: FailureClass;
  exitCode?: number | null;
  /** For a deny: the denied capability, the tool, and the dispatcher's reason. */
  capability?: string;
  tool?: string;
  reason?: DenyReason;
  /** For signal refused: the refusal as recorded (code, reason, capabilities, tools). */
  refusal?: RunRefusal;
  /** Runs in the report that exited non-zero, failed or recorded a deny. */
  affectedRuns: number;
  detail: string;
  nextSteps: string[];
}

interface RootCauseRule {
  signal: Exclude<RootCauseSignal, 'none'>;
  matches: (run: RunSignals) => boolean;
  explain: (run: RunSignals) => { detail: string; nextSteps: string[] };
}

const ms = (run: RunSignals): string => (run.durationMs === null ? '' : ` after ${run.durationMs} ms`);
const LOG_STEP = 'Re-run with --verbose and read $COMIS_HOME/logs/comis.log (content-free, ids and counts only).';

/** Next steps for a deny, by the dispatcher's reason. */
function denySteps(deny: DenyTally, agentId: string): string[] {
  switch (deny.reason) {
    case 'capability_missing':
      return [
        `Run as an agent whose profile holds ${deny.capability} (see docs/config.md), or remove the ${deny.tool} call.`,
        'Pre-flight names a missing capability before spawning; a call that reached the socket was computed dynamically.',
      ];
    case 'surface_disabled':
      return deny.capability === 'orch:write'
        ? [`The write surface of agent "${agentId}" is off: set agents.${agentId}.autonomy.write: true in config.yaml, or remove the ${deny.tool} call.`]
        : [`The surface behind ${deny.capability} is off for agent "${agentId}": turn it on in config.yaml, or remove the ${deny.tool} call.`];
    case 'denied_by_origin':
      return ['The administrative control plane is never reachable from a jailed script: remove the call.'];
    case 'unknown_tool':
      return ['The script called a tool that is not on the capability surface: call only the tools comis_tools.describe() lists.'];
    case 'explicit_deny':
      return [`The tool policy of agent "${agentId}" denies ${deny.tool} (agents.${agentId}.skills.toolPolicy.deny): remove the call, or the deny entry.`];
    case 'not_in_profile':
      return [`${deny.tool} is not in the tool-policy profile of agent "${agentId}": add it to agents.${agentId}.skills.toolPolicy.allow, or remove the call.`];
    case 'role_coordinator':
      return [`Agent "${agentId}" is a coordinator (autonomy.role), whose own scripts have no write, message or other mutating tool: run that work as a child with \`comis run\`.`];
    case 'host_denied':
      return [`web_fetch asked for a host that agents.${agentId}.web.fetch.allowHosts/denyHosts refuse: fix the URL, or the host lists.`];
    default:
      return [`Check why ${deny.capability} was denied for agent "${agentId}" (profile and surfaces in config.yaml).`];
  }
}

/** What a refusal names, for the detail line: `orch:web; tools web_fetch`. */
function refusalNames(r: RunRefusal): string {
  const parts = [...r.capabilities];
  if (r.tools.length > 0) parts.push(`tool${r.tools.length === 1 ? '' : 's'} ${r.tools.join(', ')}`);
  return parts.length > 0 ? `: ${parts.join('; ')}` : '';
}

/** Next steps for a refusal, by its reason. */
function refusalSteps(r: RunRefusal, agentId: string): string[] {
  const tools = r.tools.length > 0 ? r.tools.join(', ') : 'the tool';
  switch (r.reason) {
    case 'profile_no_orchestrate':
      return [`Agent "${agentId}" has a profile without orchestrate (assistant): set agents.${agentId}.autonomy.profile: standard (or unattended, max) in config.yaml, or use another agent.`];
    case 'capability_missing':
      return [`Run as an agent whose profile holds ${r.capabilities.join(', ') || 'the capability'} (see docs/config.md), or remove the ${tools} call.`];
    case 'surface_disabled':
      return [`The write surface of agent "${agentId}" is off: set agents.${agentId}.autonomy.write: true in config.yaml, or remove the ${tools} call.`];
    case 'explicit_deny':
    case 'not_in_profile':
    case 'role_coordinator':
      return denySteps({ tool: tools, capability: 'none', reason: r.reason, count: 1 }, agentId);
    case 'approval_required':
      return [`Agent "${agentId}" requires an approval for each run (autonomy.approvals): pass --yes, or run from a terminal to answer the prompt.`];
    case 'approval_refused':
      return ['The run was not approved at the prompt: run it again and approve it, or pass --yes.'];
  }
}

/**
 * What a failed run's repair record says, as a next step: only what happened
 * to that run (its agent's model class decided), so no hint promises a repair
 * that did not or could not happen. Nothing for a run that was not recoverable.
 */
function repairSteps(run: RunSignals): string[] {
  const r = run.repair;
  if (!r || r.outcome === 'not_recoverable') return [];
  const cls = r.class ?? 'recoverable';
  switch (r.outcome) {
    case 'rerun_failed':
      return [`One automatic repair was tried (${cls}): the repaired script failed too, so this is the original error; fix the script by hand.`];
    case 'refused':
      return [`One automatic repair was tried (${cls}): the repaired script needed a capability or tool agent "${run.agentId}" lacks and was refused before it ran; the original error stands.`];
    case 'model_error':
      return [`One automatic repair was tried (${cls}) but agents.${run.agentId}.model gave no usable answer (see $COMIS_HOME/logs/comis.log); the original error stands.`];
    case 'no_fix':
      return [`One automatic repair was tried (${cls}) but the model's answer held no new script; the original error stands.`];
    case 'class_off':
      return [`No automatic repair (${cls}): the model class of agent "${run.agentId}" is mid or frontier, and only nano and small models get one.`];
    case 'no_model':
      return [`No automatic repair (${cls}): agent "${run.agentId}" has no model (agents.${run.agentId}.model) to ask.`];
    case 'disabled':
      return [`No automatic repair (${cls}): it was turned off for this run (--no-repair).`];
    default:
      return [];
  }
}

function failed(run: RunSignals, cls: FailureClass): boolean {
  return run.failureClass === cls;
}

/** The rules, highest precedence first. Order is the contract. */
export const ROOT_CAUSE_RULES: readonly RootCauseRule[] = [
  {
    signal: 'spawn_fail',
    matches: (r) => failed(r, 'spawn_fail'),
    explain: (r) => ({
      detail: `Run ${r.runId} never started its jail (spawn_fail)${ms(r)}.`,
      nextSteps: ['Run `comis jail probe` to check bubblewrap and the script interpreter.', LOG_STEP],
    }),
  },
  {
    signal: 'timeout',
    matches: (r) => failed(r, 'timeout'),
    explain: (r) => ({
      detail: `Run ${r.runId} ran past its wall-clock timeout and was killed (timeout)${ms(r)}.`,
      nextSteps: ['Raise the limit with --timeout-ms (at most 600000) or agents.<id>.autonomy.limits.timeoutMs.', 'Or make the script do less per run: slice ResultRefs instead of reading them whole.'],
    }),
  },
  {
    signal: 'stdout_cap',
    matches: (r) => failed(r, 'stdout_cap'),
    explain: (r) => ({
      detail: `Run ${r.runId} printed more than the stdout hard cap and was killed (stdout_cap)${ms(r)}.`,
      nextSteps: ['Print a summary, not the data: only about 30,000 characters of stdout re-enter the caller anyway.', 'Keep large results in ResultRefs and slice them in the jail.'],
    }),
  },
  {
    signal: 'deny',
    matches: (r) => r.denies.length > 0 || r.toolCalls.some((t) => t.decision === 'deny'),
    explain: (r) => {
      const first: DenyTally = r.denies[0] ?? {
        ...(r.toolCalls.find((t) => t.decision === 'deny') as ToolCallTally),
        reason: 'other',
      };
      const total = r.denies.reduce((n, d) => n + d.count, 0) || first.count;
      const others = [...new Set(r.denies.map((d) => (isPolicyDeny(d.reason) ? `${d.tool} (policy)` : d.capability)))].filter((c) => c !== first.capability && c !== `${first.tool} (policy)`);
      const also = others.length > 0 ? `; also denied: ${others.join(', ')}` : '';
      const exit = r.exitCode !== null && r.exitCode !== 0 ? `, then exited with code ${r.exitCode}` : '';
      const what = isPolicyDeny(first.reason) ? `${first.tool} by its tool policy` : `${first.capability} on ${first.tool}`;
      return {
        detail: `Run ${r.runId} was denied ${what} (${first.reason}), ${total} denied call${total === 1 ? '' : 's'}${also}${exit}.`,
        nextSteps: denySteps(first, r.agentId),
      };
    },
  },
  {
    signal: 'refused',
    matches: (r) => r.outcome === 'refused',
    explain: (r) => {
      const refusal = r.refusal ?? { code: 'CAPABILITY_DENIED', reason: 'capability_missing', capabilities: [], tools: [] };
      return {
        detail: `Run ${r.runId} was refused before it started (${refusal.code}, ${refusal.reason}${refusalNames(refusal)}); nothing ran.`,
        nextSteps: refusalSteps(refusal, r.agentId),
      };
    },
  },
  {
    signal: 'nonzero_exit',
    matches: (r) => failed(r, 'nonzero_exit') || (r.exitCode !== null && r.exitCode !== 0),
    explain: (r) => ({
      detail: `Run ${r.runId} exited with code ${r.exitCode ?? 'unknown'} (nonzero_exit)${ms(r)}.`,
      nextSteps: ['Re-run the script with `comis orchestrate` to see the stderr tail it prints on failure (explain keeps no stderr: it is content-free).', ...repairSteps(r)],
    }),
  },
  {
    signal: 'failure',
    matches: (r) => r.outcome === 'failure',
    explain: (r) => ({
      detail: `Run ${r.runId} failed without a recorded failure class.`,
      nextSteps: [LOG_STEP],
    }),
  },
];

function newestFirst(a: RunSignals, b: RunSignals): number {
  return b.startedAt - a.startedAt || (a.runId < b.runId ? 1 : a.runId > b.runId ? -1 : 0);
}

/** Applies {@link ROOT_CAUSE_RULES} to the runs of a report. */
export function likelyRootCause(runs: readonly RunSignals[]): LikelyRootCause {
  const affectedRuns = runs.filter((r) => ROOT_CAUSE_RULES.some((rule) => rule.matches(r))).length;
  for (const rule of ROOT_CAUSE_RULES) {
    const hit = runs.filter((r) => rule.matches(r)).sort(newestFirst)[0];
    if (!hit) continue;
    const { detail, nextSteps } = rule.explain(hit);
    const verdict: LikelyRootCause = { code: 'orchestrate_failed', signal: rule.signal, runId: hit.runId, affectedRuns, detail, nextSteps };
    if (hit.failureClass) verdict.failureClass = hit.failureClass;
    verdict.exitCode = hit.exitCode;
    if (rule.signal === 'deny') {
      const first = hit.denies[0];
      const tally = hit.toolCalls.find((t) => t.decision === 'deny');
      verdict.capability = first?.capability ?? tally?.capability ?? '<invalid>';
      verdict.tool = first?.tool ?? tally?.tool ?? '<invalid>';
      verdict.reason = first?.reason ?? 'other';
    }
    if (rule.signal === 'refused' && hit.refusal) verdict.refusal = hit.refusal;
    return verdict;
  }
  return {
    code: 'none',
    signal: 'none',
    affectedRuns: 0,
    detail: runs.length === 0 ? 'No orchestrate runs are recorded for this session.' : runs.length === 1 ? 'The run succeeded with no denied calls.' : `All ${runs.length} runs succeeded with no denied calls.`,
    nextSteps: [],
  };
}
