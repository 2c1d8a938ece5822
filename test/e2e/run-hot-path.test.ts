/**
 * The hot path of a run loads what a run needs and nothing else: with a
 * config.yaml whose compiled form is cached, a plain orchestrate run loads no
 * schema library, no YAML parser, no web or MCP client and no DuckDB. (A
 * static import of the MCP config schema from the gate once brought all of
 * zod back onto every run.)
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { repoRoot, runComis } from '../helpers/cli.js';
import { mcpConfigYaml } from '../helpers/mcp.js';
import { makeHome } from '../helpers/orchestrate.js';
import { tempDir } from '../helpers/temp.js';

const HEAVY = /\/zod\/|\/yaml\/|undici|linkedom|readability|@modelcontextprotocol|duckdb|\/ink\/|\/react\//;

function traced(home: string, args: string[]): string[] {
  const trace = join(tempDir(), 'trace.txt');
  const res = runComis(args, { home, env: { NODE_OPTIONS: `--import=${join(repoRoot, 'test/helpers/trace-imports.mjs')}`, COMIS_TRACE_IMPORTS: trace } });
  expect(res.status, res.stderr).toBe(0);
  return readFileSync(trace, 'utf8').split('\n');
}

describe('the hot path of a run', () => {
  it('with a cached config (agents, MCP servers and allowlists), a plain run loads no zod, yaml, web, MCP or DuckDB module', () => {
    const h = makeHome(mcpConfigYaml({ default: ['edge'] }));
    const script = h.script('plain.mjs', `import { comis_tools } from './comis_tools.js';\nconsole.log('hot path');`);
    // Positive control: the first run validates the config, and the tracer sees zod and yaml load.
    const first = traced(h.home, ['orchestrate', script]);
    expect(first.some((m) => /\/zod\//.test(m))).toBe(true);
    expect(first.some((m) => /\/yaml\//.test(m))).toBe(true);
    const second = traced(h.home, ['orchestrate', script]);
    expect(second.filter((m) => HEAVY.test(m))).toEqual([]);
  });
});
