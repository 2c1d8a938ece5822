/**
 * The restore of a durable run's kept results into a replay's results area
 * (orchestrate/replay.ts restoreKeptResults), and the resume ceiling
 * (orchestrate/durable.ts narrowToCeiling): unit level, real files.
 */
import { lstatSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { narrowToCeiling } from '../../src/lib/orchestrate/durable.js';
import { restoreKeptResults } from '../../src/lib/orchestrate/replay.js';
import { agentSurface } from '../../src/lib/policy/surface.js';
import { loadConfig, resolveAgent } from '../../src/lib/config/load.js';
import { tempDir } from '../helpers/temp.js';

describe('restoreKeptResults', () => {
  it('copies regular files and directories with the given modes, and skips links without following them', () => {
    const from = tempDir('comis-kept-');
    const to = tempDir('comis-replay-results-');
    const outside = join(tempDir('comis-outside-'), 'secret.txt');
    writeFileSync(outside, 'outside');
    writeFileSync(join(from, 'ref-1.json'), '[1,2,3]');
    mkdirSync(join(from, 'writes'));
    writeFileSync(join(from, 'writes', 'a.txt'), 'written');
    symlinkSync(outside, join(from, 'ref-2.json'));
    symlinkSync(join(outside, '..'), join(from, 'writes', 'dir-link'));
    mkdirSync(join(to, 'writes'));
    restoreKeptResults(from, to, { file: 0o640, dir: 0o750 });
    expect(readFileSync(join(to, 'ref-1.json'), 'utf8')).toBe('[1,2,3]');
    expect(statSync(join(to, 'ref-1.json')).mode & 0o777).toBe(0o640);
    expect(readFileSync(join(to, 'writes', 'a.txt'), 'utf8')).toBe('written');
    expect(() => lstatSync(join(to, 'ref-2.json'))).toThrow(/ENOENT/);
    expect(() => lstatSync(join(to, 'writes', 'dir-link'))).toThrow(/ENOENT/);
  });

  it('never overwrites: a name already in the results area is an error, not a replaced file', () => {
    const from = tempDir('comis-kept-');
    const to = tempDir('comis-replay-results-');
    writeFileSync(join(from, 'ref-1.json'), 'kept');
    writeFileSync(join(to, 'ref-1.json'), 'there');
    expect(() => restoreKeptResults(from, to, { file: 0o600, dir: 0o700 })).toThrow(/EEXIST/);
    expect(readFileSync(join(to, 'ref-1.json'), 'utf8')).toBe('there');
  });

  it('a missing kept area restores nothing', () => {
    const to = tempDir('comis-replay-results-');
    expect(restoreKeptResults(join(to, 'nope'), to, { file: 0o600, dir: 0o700 })).toBe(0);
  });
});

describe('narrowToCeiling', () => {
  async function agentOf(yaml: string) {
    const home = tempDir('comis-home-');
    writeFileSync(join(home, 'config.yaml'), yaml);
    return resolveAgent(await loadConfig({ home }));
  }

  it("keeps only what both the original run and today's config allow", async () => {
    const agent = await agentOf('agents:\n  default:\n    autonomy:\n      write: true\n      mcp:\n        allow: ["edge", "everything.echo"]\n');
    const narrowed = narrowToCeiling(agent, { caps: ['orch:read'], tools: ['read', 'grep', 'mcp'], write: false, mcpAllow: ['everything.echo', 'other'] });
    const surface = agentSurface(narrowed);
    expect(surface.write).toBe(false);
    expect(surface.tools).toEqual(['read', 'grep']);
    expect(surface.dropped.has('mcp')).toBe(false);
    expect(narrowed.config.autonomy.mcp?.allow).toEqual(['everything.echo']);
    // The agent it came from is not changed.
    expect(agent.config.autonomy.write).toBe(true);
    expect(agentSurface(agent).tools).toContain('web_fetch');
  });

  it("never widens: a ceiling wider than today's config changes nothing", async () => {
    const agent = await agentOf('agents:\n  default:\n    autonomy:\n      write: false\n    skills:\n      toolPolicy:\n        deny: ["grep"]\n');
    const all = agentSurface(agent);
    const narrowed = narrowToCeiling(agent, { caps: ['orch:read', 'orch:web', 'orch:write', 'orch:message', 'orch:mcp'], tools: [...all.tools, 'grep', 'mcp'], write: true, mcpAllow: ['edge'] });
    const surface = agentSurface(narrowed);
    expect(surface.write).toBe(false);
    expect(surface.tools).toEqual(all.tools);
    expect(narrowed.config.autonomy.mcp?.allow ?? []).toEqual([]);
  });
});
