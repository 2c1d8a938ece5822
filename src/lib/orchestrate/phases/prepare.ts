/**
 * Phase 1, prepare: everything decided before a run exists. The profile gets
 * orchestrate, a working jail exists, the script is transpiled and its
 * interpreter resolved, its static footprint is checked against the agent's
 * capabilities, tool policy and surfaces, and the approval (if configured) is
 * given. A refusal here is a {@link RunRefusedError} carrying its
 * content-free record; nothing has been created on disk.
 */
import { join } from 'node:path';

import { PROFILE_CAPABILITIES, type Capability } from '../../capabilities/capabilities.js';
import { newId } from '../../capabilities/lease.js';
import { findToolEntry } from '../../capabilities/tool-table.js';
import { ComisError } from '../../errors.js';
import { agentSurface, assertGetsOrchestrate, describeDrop, type AgentSurface } from '../../policy/surface.js';
import type { RefusalReason, RefusalRecord } from '../../store/runs.js';
import { footprintOf, mcpPreflightRefusal, scanJavaScript, scanPython, type Footprint } from '../preflight.js';
import type { OrchestrateEvent, OrchestrateOptions } from '../runner.js';
import { prepareScript, type PreparedScript } from '../transpile.js';
import { MAX_TIMEOUT_MS } from './constants.js';

/**
 * A run refused before it started (exit 4): the error exactly as the user sees
 * it (same code, message, hint, details, exit code), plus the content-free
 * record of the refusal for the caller to store (`comis orchestrate` does, so
 * `explain --last` shows it). A ComisError like any other for every caller.
 */
export class RunRefusedError extends ComisError {
  readonly refusal: RefusalRecord;
  constructor(err: ComisError, refusal: RefusalRecord) {
    super(err.code, err.message, { hint: err.hint, details: err.details, exitCode: err.exitCode });
    this.refusal = refusal;
  }
}

export type JailModule = typeof import('../../jail/spawn.js');

/** What prepare hands the later phases. */
export interface PreparedRun {
  timeoutMs: number;
  surface: AgentSurface;
  jail: JailModule;
  script: PreparedScript;
  interpreter: ReturnType<JailModule['resolveInterpreter']>;
  footprint: Footprint;
  /** The agent's capabilities, attenuated by the caller's request (coordinator children). */
  agentCaps: Capability[];
}

export async function prepareRun(options: OrchestrateOptions, emit: (event: OrchestrateEvent) => void, mark: (phase: string) => void): Promise<PreparedRun> {
  const limits = options.agent.config.autonomy.limits;
  const timeoutMs = Math.min(MAX_TIMEOUT_MS, Math.max(100, options.timeoutMs ?? limits.timeoutMs));
  // Refusals (exit 4) carry their record: the reason and the table names involved, never the script's text.
  const refusedFrom = Date.now();
  const refuse = (err: ComisError, reason: RefusalReason, names: { capabilities?: readonly string[]; tools?: readonly string[] } = {}): RunRefusedError =>
    new RunRefusedError(err, {
      runId: newId('r'),
      sessionKey: options.sessionKey,
      agentId: options.agent.id,
      parentRunId: options.parentRunId,
      language: options.language,
      startedAt: refusedFrom,
      endedAt: Date.now(),
      code: err.code as RefusalRecord['code'],
      reason,
      capabilities: names.capabilities ?? [],
      tools: names.tools ?? [],
    });
  // A profile without orchestrate (assistant) is refused before anything else runs.
  try {
    assertGetsOrchestrate(options.agent);
  } catch (err) {
    throw err instanceof ComisError ? refuse(err, 'profile_no_orchestrate') : err;
  }
  const surface = agentSurface(options.agent);
  const jail = await import('../../jail/spawn.js');

  // Refuse before anything else if there is no working jail: never run unjailed.
  const provider = jail.detectSandboxProvider({ cacheFile: join(options.home, 'cache', 'jail-provider.json') });
  if (provider.provider !== 'bwrap' || provider.problem) {
    throw new ComisError('SANDBOX_UNAVAILABLE', provider.problem?.message ?? `No working sandbox provider on ${process.platform}.`, {
      hint: `${provider.problem?.hint ?? 'Install bubblewrap (apt-get install bubblewrap).'} Run \`comis jail probe\` for details.`,
    });
  }

  mark('provider');
  // Script → what the jail runs; interpreter resolved before any side effect.
  const script = await prepareScript(options.source, options.language, options.displayName, { cacheDir: join(options.home, 'cache') });
  const interpreter = jail.resolveInterpreter(options.language === 'py' ? 'python3' : 'node');
  mark('transpile');

  // Pre-flight: the footprint against the agent's capabilities and surfaces.
  // A script that never names the SDK has no static footprint; skip the parser.
  const scan = !script.code.includes('comis_tools') ? { tools: new Set<string>(), parsed: true } : options.language === 'py' ? scanPython(script.code, interpreter.hostPath) : await scanJavaScript(script.code);
  const footprint = footprintOf(scan);
  emit({ type: 'run:preflight', footprint });
  mark('preflight');
  const profileCaps = PROFILE_CAPABILITIES[options.agent.config.autonomy.profile];
  const agentCaps = options.requestedCaps ? profileCaps.filter((c) => options.requestedCaps!.includes(c)) : [...profileCaps];
  // Tool policy and role first: they name the config entry that took the tool away.
  const policyDenied = footprint.tools.filter((t) => surface.dropped.has(t));
  if (policyDenied.length > 0) {
    const first = policyDenied[0]!;
    const drop = surface.dropped.get(first)!;
    const err = new ComisError('CAPABILITY_DENIED', `The script calls comis_tools.${first}, which the tool policy of agent "${options.agent.id}" denies (${describeDrop(options.agent.id, first, drop)}).`, {
      hint: `Nothing was run. Change agents.${options.agent.id}.skills.toolPolicy (or autonomy.role) in ${options.agent.source ?? 'config.yaml'}, or remove the call.`,
      details: { missingCapabilities: [], policyDenied: policyDenied.map((t) => ({ tool: t, ...surface.dropped.get(t)! })) },
    });
    throw refuse(err, drop.why, { tools: policyDenied });
  }
  const missing = footprint.capabilities.filter((c) => !agentCaps.includes(c));
  if (missing.length > 0) {
    const tools = footprint.tools.filter((t) => missing.includes(t === 'mcp' ? 'orch:mcp' : findToolEntry(t)!.capability));
    const err = new ComisError('CAPABILITY_DENIED', `The script needs ${missing.join(', ')}, which agent "${options.agent.id}" (profile ${options.agent.config.autonomy.profile}) does not hold.`, {
      hint: 'Nothing was run. Use an agent whose profile holds it (see docs/config.md), or remove the call.',
      details: { missingCapabilities: missing, tools },
    });
    throw refuse(err, 'capability_missing', { capabilities: missing, tools });
  }
  if (footprint.tools.includes('write') && !surface.write) {
    const err = new ComisError('CAPABILITY_DENIED', `The script calls comis_tools.write, but the write surface of agent "${options.agent.id}" is off.`, {
      hint: `Nothing was run. Set agents.${options.agent.id}.autonomy.write: true in config.yaml to turn it on.`,
      details: { missingCapabilities: [], surface: 'write' },
    });
    throw refuse(err, 'surface_disabled', { capabilities: ['orch:write'], tools: ['write'] });
  }
  const mcpRefusal = mcpPreflightRefusal(footprint, options.agent.config.autonomy.mcp?.allow, options.agent.id);
  if (mcpRefusal) {
    const err = new ComisError('CAPABILITY_DENIED', mcpRefusal.message, { hint: mcpRefusal.hint, details: { missingCapabilities: [], surface: 'mcp' } });
    throw refuse(err, 'surface_disabled', { capabilities: ['orch:mcp'], tools: ['mcp'] });
  }
  if (options.agent.config.autonomy.approvals) {
    if (!options.approve) {
      const err = new ComisError('APPROVAL_REQUIRED', 'This agent requires an approval for each run and there is no way to ask.', { hint: 'Pass --yes to approve.' });
      throw refuse(err, 'approval_required', footprint);
    }
    let approved: boolean;
    try {
      approved = await options.approve(footprint);
    } catch (err) {
      // The prompt refuses to hang (no terminal: APPROVAL_REQUIRED); that is a refusal too.
      if (err instanceof ComisError && (err.code === 'APPROVAL_REQUIRED' || err.code === 'APPROVAL_REFUSED')) throw refuse(err, err.code === 'APPROVAL_REQUIRED' ? 'approval_required' : 'approval_refused', footprint);
      throw err;
    }
    if (!approved) {
      throw refuse(new ComisError('APPROVAL_REFUSED', 'The run was not approved; nothing was run.'), 'approval_refused', footprint);
    }
  }
  return { timeoutMs, surface, jail, script, interpreter, footprint, agentCaps };
}
