import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { FLOOR_CAPABILITIES, PROFILES } from '../../src/lib/capabilities/capabilities.js';
import { AUTONOMY_PROFILES } from '../../src/lib/config/schema.js';
import { repoRoot } from '../helpers/cli.js';

/** The rows of docs/config.md's "Profiles and capabilities" table. */
function docsProfileTable(): Map<string, { orchestrate: boolean; capabilities: string[] }> {
  const text = readFileSync(join(repoRoot, 'docs', 'config.md'), 'utf8');
  const section = text.slice(text.indexOf('## Profiles and capabilities'));
  const rows = new Map<string, { orchestrate: boolean; capabilities: string[] }>();
  for (const line of section.split('\n')) {
    const m = /^\| `([a-z]+)` \| (yes|no) \| (.*) \|$/.exec(line);
    if (!m) continue;
    rows.set(m[1]!, { orchestrate: m[2] === 'yes', capabilities: m[3] === 'none' ? [] : [...m[3]!.matchAll(/`([^`]+)`/g)].map((x) => x[1]!) });
    if (rows.size === AUTONOMY_PROFILES.length) break;
  }
  return rows;
}

describe('profiles (seed 000)', () => {
  it('assistant holds no capabilities and gets no orchestrate; standard, unattended and max hold the floor', () => {
    expect(PROFILES.assistant).toEqual({ orchestrate: false, capabilities: [] });
    for (const p of ['standard', 'unattended', 'max'] as const) expect(PROFILES[p]).toEqual({ orchestrate: true, capabilities: FLOOR_CAPABILITIES });
    expect(FLOOR_CAPABILITIES).toEqual(['orch:read', 'orch:web', 'orch:write', 'orch:message', 'orch:mcp']);
  });

  it("docs/config.md's profile table is the data table", () => {
    const docs = docsProfileTable();
    expect([...docs.keys()]).toEqual([...AUTONOMY_PROFILES]);
    for (const name of AUTONOMY_PROFILES) expect(docs.get(name), name).toEqual({ orchestrate: PROFILES[name].orchestrate, capabilities: [...PROFILES[name].capabilities] });
  });
});
