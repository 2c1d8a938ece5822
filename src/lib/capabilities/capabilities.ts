/**
 * The closed capability union and what each autonomy profile holds.
 *
 * Semantics: a capability is a permission token checked at the capability
 * socket for every `tool.invoke`. Profiles only ever grant from this union;
 * tool policy and `role: coordinator` narrow tools and never touch
 * capabilities.
 */
import type { AutonomyProfile } from '../config/schema.js';

export const CAPABILITIES = ['orch:read', 'orch:web', 'orch:write', 'orch:message', 'orch:mcp'] as const;
export type Capability = (typeof CAPABILITIES)[number];

/** The floor capabilities of every autonomy-bearing profile (seed 000). */
export const FLOOR_CAPABILITIES: readonly Capability[] = ['orch:read', 'orch:web', 'orch:write', 'orch:message', 'orch:mcp'];

export interface ProfileSpec {
  /** Whether the agent gets the orchestrate tool at all. */
  orchestrate: boolean;
  capabilities: readonly Capability[];
}

/**
 * THE profile table (seed 000 and DESIGN §9). `assistant` is the
 * non-autonomy profile: no capabilities and no orchestrate ("a non-autonomy
 * agent … does not get the tool"). `standard` (the default), `unattended`
 * and `max` hold the floor capabilities. Holding `orch:write` does not open
 * the write surface: that also needs `autonomy.write: true`; holding
 * `orch:mcp` opens no server (that needs `autonomy.mcp.allow`, checked
 * by src/lib/mcp/gate.ts). docs/config.md's profile table is checked
 * against this one by test/capabilities/profiles.test.ts.
 */
export const PROFILES: Readonly<Record<AutonomyProfile, ProfileSpec>> = {
  assistant: { orchestrate: false, capabilities: [] },
  standard: { orchestrate: true, capabilities: FLOOR_CAPABILITIES },
  unattended: { orchestrate: true, capabilities: FLOOR_CAPABILITIES },
  max: { orchestrate: true, capabilities: FLOOR_CAPABILITIES },
};

/** Capabilities held by each profile (a view of {@link PROFILES}). */
export const PROFILE_CAPABILITIES: Readonly<Record<AutonomyProfile, readonly Capability[]>> = Object.fromEntries(Object.entries(PROFILES).map(([name, spec]) => [name, spec.capabilities])) as Record<AutonomyProfile, readonly Capability[]>;

/** Sorted, de-duplicated intersection: a child never holds more than its parent. */
export function intersectCapabilities(parent: readonly Capability[], requested: readonly Capability[]): Capability[] {
  const held = new Set(parent);
  return CAPABILITIES.filter((c) => held.has(c) && requested.includes(c));
}
