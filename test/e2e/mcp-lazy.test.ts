/**
 * The MCP SDK is paid for only by runs that call an MCP tool: other
 * commands, and orchestrate runs of an agent with servers configured and
 * allowlisted whose script makes no mcp call, never load it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { repoRoot, runComis } from '../helpers/cli.js';
import { mcpConfigYaml, RAW_MCP } from '../helpers/mcp.js';
import { makeHome } from '../helpers/orchestrate.js';
import { tempDir } from '../helpers/temp.js';

const SDK = /@modelcontextprotocol\/sdk/;

function traced(home: string, args: string[]): string[] {
  const trace = join(tempDir(), 'trace.txt');
  runComis(args, { home, env: { NODE_OPTIONS: `--import=${join(repoRoot, 'test/helpers/trace-imports.mjs')}`, COMIS_TRACE_IMPORTS: trace } });
  return readFileSync(trace, 'utf8').split('\n');
}

describe('the MCP SDK loads lazily', () => {
  it('--help, --version, jail probe, sdk emit and a run without mcp calls do not load it; a run with one does', () => {
    const h = makeHome(mcpConfigYaml({ default: ['edge'] }));
    for (const args of [['--help'], ['--version'], ['jail', 'probe', '--json'], ['sdk', 'emit', '--out', tempDir()]]) {
      expect(
        traced(h.home, args).filter((m) => SDK.test(m)),
        args.join(' '),
      ).toEqual([]);
    }
    const plain = traced(h.home, ['orchestrate', h.script('plain.mjs', `import { comis_tools } from './comis_tools.js';\nconsole.log('no mcp here');`)]);
    expect(plain.filter((m) => SDK.test(m) || /\/dist\/lib\/mcp\/client-manager/.test(m))).toEqual([]);
    // Positive control: the same agent, a script that calls mcp.
    const withMcp = traced(h.home, ['orchestrate', h.script('mcp.mjs', `${RAW_MCP}\nconsole.log((await mcpCall('edge', 'ping', {})).ok);`)]);
    expect(withMcp.filter((m) => SDK.test(m)).length).toBeGreaterThan(0);
  });
});
