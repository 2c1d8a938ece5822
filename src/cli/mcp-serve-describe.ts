/**
 * What `comis mcp serve` tells an MCP client about the jailed SDK of one
 * agent: the `describe_tools` answer and the `orchestrate` tool's own
 * description. Both come from the one tool table (tool-map.ts) narrowed by the
 * agent's surface (profile capabilities, tool policy, role, write toggle), the
 * same surface the socket, the pre-flight and the mounted SDK enforce, so the
 * client is never offered a tool a script would be refused.
 */

import { PROFILE_CAPABILITIES } from '../lib/capabilities/capabilities.js';
import { TOOL_MAP, toolJsonSchema } from '../lib/capabilities/tool-map.js';
import type { ResolvedAgent } from '../lib/config/load.js';
import { agentSurface, describeDrop, MCP_SURFACE_TOOL } from '../lib/policy/surface.js';

export interface DescribedTool {
  name: string;
  capability: string;
  summary: string;
  /** JSON Schema of the call's parameters (what the script passes). */
  params: Record<string, unknown>;
  /** JSON Schema of what the call returns to the script. */
  result: Record<string, unknown>;
}

export interface ToolsDescription {
  agent: string;
  profile: string;
  role: 'worker' | 'coordinator';
  languages: { ts: string; js: string; py: string };
  tools: DescribedTool[];
  /** Tools of the table this agent's scripts cannot call, and the config that says so. */
  unavailable: { name: string; why: string }[];
  /** Connected MCP tools (`comis_tools.mcp.<server>.<tool>`), from the config alone: no server is started to describe them. */
  mcp: { allow: string[]; servers: string[]; call: string; describe: string; unavailable?: string };
  notes: string[];
}

/** The MCP part: the allowlist and the configured servers it opens, or why none is reachable. */
function describeMcp(agent: ResolvedAgent, dropped: ReturnType<typeof agentSurface>['dropped']): ToolsDescription['mcp'] {
  const allow = [...(agent.config.autonomy.mcp?.allow ?? [])];
  const configured = agent.mcpServers ?? {};
  const servers = [...new Set(allow.map((e) => e.split('.', 1)[0]!))].filter((n) => Object.hasOwn(configured, n)).sort();
  const out: ToolsDescription['mcp'] = {
    allow,
    servers,
    call: 'await comis_tools.mcp.<server>.<tool>({ ... })  (Python: comis_tools.mcp.<server>.<tool>({...}), synchronous)',
    describe: 'await comis_tools.mcp.describe() in a script lists the allowlisted tools with their descriptions and input schemas (from the servers themselves)',
  };
  const drop = dropped.get(MCP_SURFACE_TOOL);
  const profile = agent.config.autonomy.profile;
  if (drop) out.unavailable = describeDrop(agent.id, MCP_SURFACE_TOOL, drop);
  else if (!PROFILE_CAPABILITIES[profile].includes('orch:mcp')) out.unavailable = `profile ${profile} does not hold orch:mcp`;
  else if (servers.length === 0) out.unavailable = `no configured MCP server is allowlisted (agents.${agent.id}.autonomy.mcp.allow)`;
  return out;
}

// The same conversion as the SDK emitter's, so the schemas match describe(name) in the jail.
const toJsonSchema = toolJsonSchema;

/** The `describe_tools` answer for `agent`. */
export function describeAgentTools(agent: ResolvedAgent): ToolsDescription {
  const surface = agentSurface(agent);
  const profile = agent.config.autonomy.profile;
  const caps = PROFILE_CAPABILITIES[profile];
  const tools: DescribedTool[] = [];
  const unavailable: { name: string; why: string }[] = [];
  for (const spec of TOOL_MAP) {
    const drop = surface.dropped.get(spec.name);
    if (drop) unavailable.push({ name: spec.name, why: describeDrop(agent.id, spec.name, drop) });
    else if (!caps.includes(spec.capability)) unavailable.push({ name: spec.name, why: `profile ${profile} does not hold ${spec.capability}` });
    else if (spec.surface === 'write' && !surface.write) unavailable.push({ name: spec.name, why: `the write surface is off (agents.${agent.id}.autonomy.write)` });
    else tools.push({ name: spec.name, capability: spec.capability, summary: spec.summary, params: toJsonSchema(spec.params, 'input'), result: toJsonSchema(spec.result, 'output') });
  }
  return {
    agent: agent.id,
    profile,
    role: surface.role,
    languages: {
      ts: "import { comis_tools, ResultRef } from './comis_tools.js';  const r = await comis_tools.read({ path: 'notes.md' });",
      js: "import { comis_tools } from './comis_tools.js';  const r = await comis_tools.read({ path: 'notes.md' });",
      py: 'import comis_tools;  r = comis_tools.read({"path": "notes.md"})  # synchronous',
    },
    tools,
    unavailable,
    mcp: describeMcp(agent, surface.dropped),
    notes: [
      'Only what the script prints to stdout comes back (about 30,000 characters, head and tail kept); tool results stay in the jail.',
      "The working directory is the agent's workspace (persistent between runs); paths are relative to it. There is no network.",
      'A result over 15,000 bytes comes back as a ResultRef handle: slice it with ref.read(), ref.grep(), ref.jq() in the jail, or ref.sql() and ref.jsonpath().',
      'comis_tools.describe() lists the same tools from inside the script.',
    ],
  };
}

/** The `orchestrate` tool's description: what it does, how a script looks, what this agent's scripts can call. */
export function orchestrateToolDescription(described: ToolsDescription): string {
  const names = described.tools.map((t) => t.name).join(', ') || 'none';
  return [
    `Run ONE script (TypeScript, JavaScript or Python) in comis's bubblewrap jail (no network) as agent "${described.agent}", and get back only what it printed to stdout.`,
    'Chain several tool calls inside one script instead of calling tools one by one: intermediate results never leave the jail, so print only the answer.',
    `TS/JS: ${described.languages.ts} console.log(r.content.slice(0, 200));`,
    `Python: ${described.languages.py}; print(r["content"][:200])`,
    `Tools this agent's scripts can call: ${names}. Call describe_tools for their parameters and results.`,
    ...(described.mcp.unavailable ? [] : [`Connected MCP tools: comis_tools.mcp.<server>.<tool>(args), allowlisted: ${described.mcp.allow.join(', ')}.`]),
    'A failed run returns isError with its failure class (timeout, stdout_cap, nonzero_exit, spawn_fail) and the redacted end of stderr; a refused one with the reason, before anything ran.',
  ].join('\n');
}
