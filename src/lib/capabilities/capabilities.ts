/**
 * The closed capability union and what each autonomy profile holds.
 *
 * Semantics: a capability is a permission token checked at the capability
 * socket for every `tool.invoke`. Profiles only ever grant from this union;
 * `role: coordinator` narrows tools and never touches capabilities.
 */
import type { AutonomyProfile } from '../config/schema.js';

export const CAPABILITIES = ['orch:read', 'orch:web', 'orch:write', 'orch:message', 'orch:mcp'] as const;
export type Capability = (typeof CAPABILITIES)[number];

export function isCapability(value: string): value is Capability {
  return (CAPABILITIES as readonly string[]).includes(value);
}

/**
 * Capabilities held by each profile. `orch:read` and `orch:web` are on from
 * `standard` up; `orch:write`, `orch:message` and `orch:mcp` are floor
 * capabilities of standard/unattended/max. `assistant` withholds write and
 * message (and mcp). Holding `orch:write` does not open the write surface: that
 * also needs `autonomy.write: true`; holding `orch:mcp` opens no server until
 * it is listed in `autonomy.mcp.allow`.
 */
export const PROFILE_CAPABILITIES: Record<AutonomyProfile, readonly Capability[]> = {
  assistant: ['orch:read', 'orch:web'],
  standard: ['orch:read', 'orch:web', 'orch:write', 'orch:message', 'orch:mcp'],
  unattended: ['orch:read', 'orch:web', 'orch:write', 'orch:message', 'orch:mcp'],
  max: ['orch:read', 'orch:web', 'orch:write', 'orch:message', 'orch:mcp'],
};

/** Sorted, de-duplicated intersection: a child never holds more than its parent. */
export function intersectCapabilities(parent: readonly Capability[], requested: readonly Capability[]): Capability[] {
  const held = new Set(parent);
  return CAPABILITIES.filter((c) => held.has(c) && requested.includes(c));
}
