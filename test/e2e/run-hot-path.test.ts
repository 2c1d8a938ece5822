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

/** Heavy or needless on a plain run: pino too (the run's few log lines are written without it, see obs/logger.ts). */
const HEAVY = /\/zod\/|\/picomatch\/|\/yaml\/|undici|linkedom|readability|@modelcontextprotocol|duckdb|\/ink\/|\/react\/|\/pino\//;

function traced(home: string, args: string[], status = 0): string[] {
  const trace = join(tempDir(), 'trace.txt');
  const res = runComis(args, { home, env: { NODE_OPTIONS: `--import=${join(repoRoot, 'test/helpers/trace-imports.mjs')}`, COMIS_TRACE_IMPORTS: trace } });
  expect(res.status, res.stderr).toBe(status);
  return readFileSync(trace, 'utf8').split('\n');
}

/** Modules of the one-shot repair that only a failed, repairable run may load. */
const REPAIR_ONLY = /\/lib\/model\/|\/orchestrate\/phases\/repair\.|\/orchestrate\/repair-digest\.|undici/;

describe('the hot path of a run', () => {
  it('with a cached config (agents, MCP servers and allowlists), a plain run loads no zod, yaml, web, MCP or DuckDB module', () => {
    const h = makeHome(mcpConfigYaml({ default: ['edge'] }));
    const script = h.script('plain.mjs', `import { comis_tools } from './comis_tools.js';\nconsole.log('hot path');`);
    // Positive control: the first run validates the config, and the tracer sees zod and yaml load.
    const first = traced(h.home, ['orchestrate', script]);
    expect(first.some((m) => /\/zod\//.test(m))).toBe(true);
    expect(first.some((m) => /\/yaml\//.test(m))).toBe(true);
    const second = traced(h.home, ['orchestrate', script]);
    // Through the bundled fast path (src/cli/orchestrate-bundle.ts), whose modules the tracer lists as their dist files.
    expect(second.some((m) => m.endsWith('/dist/cli/fast-orchestrate.bundle.cjs'))).toBe(true);
    expect(second.some((m) => m.endsWith('/dist/lib/orchestrate/runner.js'))).toBe(true);
    expect(second.filter((m) => HEAVY.test(m))).toEqual([]);
    // Nothing pending in the outbox: the run's own connection probed it, the sweep's modules stay unloaded
    // (test/e2e/outbox-sweep-run.test.ts: a pending send is still delivered by the next run).
    expect(second.filter((m) => /orchestrate\/outbox-sweep\.|orchestrate\/message\./.test(m))).toEqual([]);
  });

  it('an agent with a small model: a run that succeeds, and one whose failure is not recoverable, load no model client, no undici and no repair phase', () => {
    // Port 9 (discard) on loopback: nothing answers, and a run that does not repair never dials it.
    const h = makeHome('agents:\n  default:\n    model:\n      baseUrl: http://127.0.0.1:9/v1\n      name: tiny\n      class: small\n');
    const ok = h.script('ok.mjs', `console.log('fine');`);
    traced(h.home, ['orchestrate', ok]);
    expect(traced(h.home, ['orchestrate', ok]).filter((m) => REPAIR_ONLY.test(m))).toEqual([]);
    // A failure that is not recoverable loads the (small) repair decision, still no model client.
    const thrown = h.script('thrown.mjs', `throw new RangeError('no');`);
    const failed = traced(h.home, ['orchestrate', thrown], 1);
    expect(failed.filter((m) => /\/lib\/model\/|undici/.test(m))).toEqual([]);
    // Positive control: a recoverable failure attempts the repair, which loads the client and undici
    // (the model is unreachable: the original error stands).
    const bad = h.script('bad.mjs', `import { x } from './nope.js';`);
    const repairing = traced(h.home, ['orchestrate', bad], 1);
    expect(repairing.some((m) => /\/lib\/model\/client\.js$/.test(m))).toBe(true);
    expect(repairing.some((m) => /undici/.test(m))).toBe(true);
  });
});
