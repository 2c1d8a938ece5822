/**
 * Source profiles (seed 002, "Source Profiles"): every built-in tool that
 * ingests content from outside the machine has a byte limit on what it reads
 * and a char limit on what it hands back, plus an extraction strategy. An
 * operator may tune them per agent, but only between the floors and the hard
 * ceilings below: no config raises a limit past a ceiling, and none lowers it
 * under a floor (a 0-byte fetch limit would only turn every page into an
 * error the operator did not mean).
 */

export type SourceProfileName = 'web_fetch' | 'web_search' | 'mcp_default';

export type ExtractionStrategy = 'readability' | 'structured' | 'raw';

export interface SourceProfile {
  /** Most bytes read off the wire (decoded); the body is cut there, never buffered whole. */
  maxResponseBytes: number;
  /** Most characters of extracted text handed to the script. */
  maxChars: number;
  extraction: ExtractionStrategy;
}

/** No operator override goes above these (seed 002: 5 MB, 500K chars). */
export const HARD_CEILINGS = Object.freeze({ maxResponseBytes: 5_000_000, maxChars: 500_000 });

/** No operator override goes below these. */
export const FLOORS = Object.freeze({ maxResponseBytes: 32_000, maxChars: 100 });

export const SOURCE_PROFILES: Readonly<Record<SourceProfileName, Readonly<SourceProfile>>> = Object.freeze({
  web_fetch: Object.freeze({ maxResponseBytes: 2_000_000, maxChars: 50_000, extraction: 'readability' as const }),
  web_search: Object.freeze({ maxResponseBytes: 500_000, maxChars: 40_000, extraction: 'structured' as const }),
  mcp_default: Object.freeze({ maxResponseBytes: 2_000_000, maxChars: 50_000, extraction: 'raw' as const }),
});

export interface SourceProfileOverride {
  maxResponseBytes?: number;
  maxChars?: number;
}

function clamp(value: number, floor: number, ceiling: number): number {
  if (!Number.isFinite(value)) return ceiling;
  return Math.min(ceiling, Math.max(floor, Math.floor(value)));
}

/**
 * The effective profile of one tool: the default, with an operator's override
 * clamped into [floor, ceiling]. A per-call request (a script's `maxChars`)
 * goes through `clampRequest` on top: a script may ask for less, never more.
 */
export function resolveSourceProfile(name: SourceProfileName, override?: SourceProfileOverride): SourceProfile {
  const base = SOURCE_PROFILES[name];
  return {
    maxResponseBytes: clamp(override?.maxResponseBytes ?? base.maxResponseBytes, FLOORS.maxResponseBytes, HARD_CEILINGS.maxResponseBytes),
    maxChars: clamp(override?.maxChars ?? base.maxChars, FLOORS.maxChars, HARD_CEILINGS.maxChars),
    extraction: base.extraction,
  };
}

/** A script's own `maxChars` for one call: at most the profile's, at least the floor. */
export function clampRequestChars(profile: SourceProfile, requested: number | undefined): number {
  if (requested === undefined) return profile.maxChars;
  return clamp(requested, FLOORS.maxChars, profile.maxChars);
}
