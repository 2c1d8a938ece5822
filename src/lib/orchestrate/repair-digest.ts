/**
 * The `describe()` digest of a repair prompt: the SDK methods this agent's
 * script may call (its tool surface, minus tools whose capability or
 * surface it lacks), each with its capability, compact parameters and
 * one-line summary, from the one tool table. Loads the schemas (zod): it
 * runs only when a repair is attempted.
 */
import type { Capability } from '../capabilities/capabilities.js';
import { findTool, toolJsonSchema } from '../capabilities/tool-map.js';
import type { MethodDigest } from '../model/repair-prompt.js';

export interface DigestSurface {
  /** The tools of the table the agent may call (after policy and role). */
  tools: readonly string[];
  /** The capabilities the run's lease holds. */
  caps: readonly Capability[];
  /** autonomy.write (and not a coordinator). */
  write: boolean;
  /** The MCP servers the agent may reach (autonomy.mcp.allow), when comis_tools.mcp is on its surface. */
  mcpServers: readonly string[];
}

export function methodDigest(surface: DigestSurface): MethodDigest[] {
  const out: MethodDigest[] = [];
  for (const name of surface.tools) {
    const spec = findTool(name);
    if (!spec || !surface.caps.includes(spec.capability)) continue;
    if (spec.surface === 'write' && !surface.write) continue;
    out.push({ name, capability: spec.capability, params: compactParams(toolJsonSchema(spec.params, 'input')), summary: spec.summary });
  }
  if (surface.mcpServers.length > 0 && surface.caps.includes('orch:mcp')) {
    out.push({
      name: 'mcp.<server>.<tool>',
      capability: 'orch:mcp',
      params: "{...the tool's arguments}",
      summary: `Call a tool of an allowed MCP server (${surface.mcpServers.join(', ')}); comis_tools.mcp.describe() lists them.`,
    });
  }
  return out;
}

/** `{path: string, offset?: integer}` from a JSON Schema object. */
export function compactParams(schema: Record<string, unknown>): string {
  const props = (schema.properties ?? {}) as Record<string, Record<string, unknown>>;
  const required = new Set((schema.required as string[] | undefined) ?? []);
  const parts = Object.entries(props).map(([k, v]) => `${k}${required.has(k) ? '' : '?'}: ${typeName(v)}`);
  return `{${parts.join(', ')}}`;
}

function typeName(s: Record<string, unknown>): string {
  if (Array.isArray(s.enum)) return s.enum.map((e) => JSON.stringify(e)).join(' | ');
  if (Array.isArray(s.anyOf)) return (s.anyOf as Record<string, unknown>[]).map(typeName).join(' | ');
  if (s.type === 'array') return `${typeName((s.items ?? {}) as Record<string, unknown>)}[]`;
  if (typeof s.type === 'string') return s.type;
  return 'any';
}
