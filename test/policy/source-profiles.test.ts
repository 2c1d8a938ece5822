import { describe, expect, it } from 'vitest';

import { clampRequestChars, FLOORS, HARD_CEILINGS, resolveSourceProfile, SOURCE_PROFILES } from '../../src/lib/policy/source-profiles.js';

describe('source profiles (seed 002)', () => {
  it('has the seed values', () => {
    expect(SOURCE_PROFILES.web_fetch).toEqual({ maxResponseBytes: 2_000_000, maxChars: 50_000, extraction: 'readability' });
    expect(SOURCE_PROFILES.web_search).toEqual({ maxResponseBytes: 500_000, maxChars: 40_000, extraction: 'structured' });
    expect(SOURCE_PROFILES.mcp_default).toEqual({ maxResponseBytes: 2_000_000, maxChars: 50_000, extraction: 'raw' });
    expect(HARD_CEILINGS).toEqual({ maxResponseBytes: 5_000_000, maxChars: 500_000 });
  });

  it('clamps operator overrides to the ceilings and floors', () => {
    expect(resolveSourceProfile('web_fetch', { maxResponseBytes: 1e12, maxChars: 1e9 })).toMatchObject({ maxResponseBytes: 5_000_000, maxChars: 500_000 });
    expect(resolveSourceProfile('web_fetch', { maxResponseBytes: 1, maxChars: 0 })).toMatchObject({ maxResponseBytes: FLOORS.maxResponseBytes, maxChars: FLOORS.maxChars });
    expect(resolveSourceProfile('mcp_default', { maxChars: 1234.9 }).maxChars).toBe(1234);
    expect(resolveSourceProfile('web_search', { maxChars: Number.NaN }).maxChars).toBe(HARD_CEILINGS.maxChars);
  });

  it('lets a script ask for fewer chars, never more', () => {
    const p = resolveSourceProfile('web_fetch');
    expect(clampRequestChars(p, undefined)).toBe(50_000);
    expect(clampRequestChars(p, 10)).toBe(100);
    expect(clampRequestChars(p, 2_000)).toBe(2_000);
    expect(clampRequestChars(p, 10_000_000)).toBe(50_000);
  });
});
