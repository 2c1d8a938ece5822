/**
 * The surface one agent's scripts see: which tools they may call and which
 * capabilities their lease holds, from the profile (capabilities), the tool
 * policy and the role (tools). Each layer only narrows:
 *
 *   profile      → capabilities (PROFILES; `assistant` gets no orchestrate)
 *   toolPolicy   → tools: profile → allow → deny, deny wins (./tool-policy.ts)
 *   role         → `coordinator` drops every tool that is not read-only
 *                  (write, message_*, mcp), whatever allow says; it never
 *                  changes a capability (seed 001: caps are byte-identical)
 *
 * The same surface drives the three enforcement points: the socket
 * (dispatch), the pre-flight, and the SDK the runner mounts (a dropped tool
 * is absent from describe() and the emitted types).
 */
import { PROFILES, type Capability } from '../capabilities/capabilities.js';
import { TOOL_TABLE } from '../capabilities/tool-table.js';
import type { AgentConfig } from '../config/schema.js';
import { ComisError } from '../errors.js';
import { resolveToolPolicy, type DropReason } from './tool-policy.js';

export type SurfaceDropReason = DropReason | 'role_coordinator';

export interface SurfaceDrop {
  why: SurfaceDropReason;
  /** For explicit_deny: the deny entry (a tool or group name from the config). */
  entry?: string;
}

/** The policy name of the comis_tools.mcp surface (group:mcp expands to it). */
export const MCP_SURFACE_TOOL = 'mcp';

/** Capabilities a coordinator keeps tools of: read-only drill-in. Everything else mutates or sends. */
const COORDINATOR_CAPABILITIES: readonly Capability[] = ['orch:read', 'orch:web'];

export interface AgentSurface {
  agentId: string;
  /** Tools of the table the agent may call (after policy and role), in table order. */
  tools: string[];
  /** Tools of the table (and `mcp`) dropped by policy or role, with why. */
  dropped: Map<string, SurfaceDrop>;
  /** The role in effect. */
  role: 'worker' | 'coordinator';
  /** The write surface toggle (autonomy.write), off for a coordinator. */
  write: boolean;
}

export interface AgentLike {
  id: string;
  config: AgentConfig;
  /** The config file the agent came from (undefined: the embedded default). */
  source?: string | undefined;
}

/**
 * Refuses, before anything runs, an agent whose profile gets no orchestrate
 * (`assistant`), naming the profile and how to change it.
 */
export function assertGetsOrchestrate(agent: AgentLike): void {
  const profile = agent.config.autonomy.profile;
  if (PROFILES[profile].orchestrate) return;
  const where = agent.source ?? 'config.yaml';
  throw new ComisError('CAPABILITY_DENIED', `Agent "${agent.id}" has profile ${profile}, which holds no capabilities and does not get the orchestrate tool.`, {
    hint: `Nothing was run. Set agents.${agent.id}.autonomy.profile: standard (or unattended, max) in ${where}, or use another agent.`,
    details: { profile, missingCapabilities: [] },
  });
}

/** The agent's tool surface, from its tool policy and role. */
export function agentSurface(agent: AgentLike): AgentSurface {
  const role = agent.config.autonomy.role;
  const universe = TOOL_TABLE.map((t) => t.name);
  // `mcp` (comis_tools.mcp, its own socket method) is under the same policy (group:mcp) and role, not in the table.
  const policy = resolveToolPolicy(agent.config.skills.toolPolicy, [...universe, MCP_SURFACE_TOOL]);
  const dropped = new Map<string, SurfaceDrop>();
  for (const d of policy.dropped) dropped.set(d.tool, d.entry === undefined ? { why: d.why } : { why: d.why, entry: d.entry });
  if (role === 'coordinator') {
    for (const t of TOOL_TABLE) if (!COORDINATOR_CAPABILITIES.includes(t.capability) && !dropped.has(t.name)) dropped.set(t.name, { why: 'role_coordinator' });
    if (!dropped.has(MCP_SURFACE_TOOL)) dropped.set(MCP_SURFACE_TOOL, { why: 'role_coordinator' });
  }
  return {
    agentId: agent.id,
    tools: universe.filter((n) => !dropped.has(n)),
    dropped,
    role,
    write: agent.config.autonomy.write && role !== 'coordinator',
  };
}

/** Where a drop comes from, for messages: names the config key and the entry. */
export function describeDrop(agentId: string, tool: string, drop: SurfaceDrop): string {
  switch (drop.why) {
    case 'explicit_deny':
      return `explicit_deny: "${drop.entry ?? tool}" in agents.${agentId}.skills.toolPolicy.deny`;
    case 'not_in_profile':
      return `not_in_profile: ${tool} is not in agents.${agentId}.skills.toolPolicy.profile and not in its allow list`;
    case 'role_coordinator':
      return `role_coordinator: agents.${agentId}.autonomy.role is coordinator, which has no write, message or other mutating tool`;
  }
}
