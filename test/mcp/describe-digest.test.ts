/**
 * `comis_tools.describe()` stays synchronous (seed 000: `const tools =
 * comis_tools.describe();`) and lists the allowlisted MCP tools with their
 * descriptions and input schemas: pre-flight sees `describe(`, the runner asks
 * the allowlisted servers (the run's own clients) before the spawn, and the
 * runtimes read the digest. Real jail, real server-everything, a real server
 * that cannot start (unavailable with a reason, the run goes on), and a
 * marker file that shows when a server was started (never for a script that
 * does not call describe(), once for one that calls describe() and a tool).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { describeEntries, digestJson, MCP_DIGEST_MAX_BYTES, wantsMcpDigest } from '../../src/lib/mcp/describe-digest.js';
import { parseAllowlist } from '../../src/lib/mcp/allowlist.js';
import type { McpGateSurface } from '../../src/lib/mcp/gate.js';
import { parseJson } from '../helpers/cli.js';
import { EDGE_ENTRY, EVERYTHING_ENTRY } from '../helpers/mcp.js';
import { makeHome } from '../helpers/orchestrate.js';
import { tempDir } from '../helpers/temp.js';

function config(marker: string, allow: string[]): string {
  const sh = `echo started >> ${JSON.stringify(marker)}; exec ${JSON.stringify(process.execPath)} ${JSON.stringify(EDGE_ENTRY)}`;
  return [
    'mcp:',
    '  servers:',
    '    everything:',
    `      command: ${JSON.stringify(process.execPath)}`,
    `      args: ${JSON.stringify([EVERYTHING_ENTRY, 'stdio'])}`,
    '      startupTimeoutMs: 30000',
    '    edge:',
    '      command: /bin/sh',
    `      args: ${JSON.stringify(['-c', sh])}`,
    '      startupTimeoutMs: 30000',
    '    broken:',
    '      command: /nonexistent/mcp-server',
    '      startupTimeoutMs: 5000',
    'agents:',
    '  default:',
    '    autonomy:',
    '      mcp:',
    `        allow: ${JSON.stringify(allow)}`,
    '',
  ].join('\n');
}

const surface = (allow: string[]): McpGateSurface => ({ allow: parseAllowlist(allow), configured: () => true, listTools: async () => [], call: async () => null });

describe('comis_tools.describe() lists the allowlisted MCP tools', () => {
  it('TypeScript: synchronous describe() has the MCP tools (description, input schema) and an unavailable server with its reason', () => {
    const marker = join(tempDir('comis-digest-'), 'starts');
    const h = makeHome(config(marker, ['everything.echo', 'edge', 'broken']));
    const ts = [
      "import { comis_tools } from './comis_tools.js';",
      'const tools = comis_tools.describe();',
      "const mcp = tools.filter((t) => t.capability === 'orch:mcp');",
      "console.log(JSON.stringify(tools.some((t) => t.name === 'read')));",
      'console.log(JSON.stringify(mcp.map((t) => t.name)));',
      "const echo = mcp.find((t) => t.name === 'mcp.everything.echo') as any;",
      'console.log(JSON.stringify([echo.call, echo.server, echo.tool, typeof echo.description, echo.summary.length > 0, echo.inputSchema.properties.message.type, echo.untrusted]));',
      "const broken = mcp.find((t) => t.name === 'mcp.broken') as any;",
      'console.log(JSON.stringify([broken.unavailable, broken.error, broken.reason.length > 0, broken.summary.startsWith("unavailable: ")]));',
      "const full = comis_tools.describe('mcp.everything.echo')!;",
      'console.log(JSON.stringify([(full.params as any).properties.message.type, full.result.required]));',
      "console.log(comis_tools.describe('mcp.broken') === undefined, comis_tools.describe('mcp.everything.add') === undefined);",
      'const r = await comis_tools.mcp.edge.ping();',
      "console.log((r as any).text.includes('pong'));",
    ].join('\n');
    const res = h.run(['orchestrate', h.script('d.ts', ts), '--json']);
    const body = parseJson(res.stdout);
    expect(body.result.outcome, JSON.stringify(body)).toBe('success');
    const [table, names, echo, broken, full, absent, pong] = (body.result.stdout as string).trim().split('\n');
    expect(table).toBe('true');
    const listed = JSON.parse(names!) as string[];
    // Only allowlisted tools: echo of everything (not add), every edge tool, the broken server as one entry.
    expect(listed).toContain('mcp.everything.echo');
    expect(listed).not.toContain('mcp.everything.add');
    expect(listed).toContain('mcp.edge.ping');
    expect(listed).toContain('mcp.broken');
    expect(listed.filter((n) => n.startsWith('mcp.edge.'))).toEqual([...listed.filter((n) => n.startsWith('mcp.edge.'))].sort());
    expect(JSON.parse(echo!)).toEqual(['comis_tools.mcp.everything.echo', 'everything', 'echo', 'string', true, 'string', true]);
    expect(JSON.parse(broken!)).toEqual([true, 'mcp_start_failed', true, true]);
    expect(JSON.parse(full!)).toEqual(['string', ['type', 'source', 'isError', 'content', 'untrusted']]);
    expect(absent).toBe('true true');
    expect(pong).toBe('true');
    // The server describe() asked is the one the call used: started once in the run.
    expect(readFileSync(marker, 'utf8')).toBe('started\n');
  });

  it('Python: describe() is synchronous and lists the same entries', () => {
    const marker = join(tempDir('comis-digest-'), 'starts');
    const h = makeHome(config(marker, ['everything.echo', 'broken']));
    const py = [
      'import json, comis_tools',
      'tools = comis_tools.describe()',
      'mcp = [t for t in tools if t["capability"] == "orch:mcp"]',
      'print(json.dumps([t["name"] for t in mcp]))',
      'echo = comis_tools.describe("mcp.everything.echo")',
      'print(json.dumps([echo["call"], echo["params"]["properties"]["message"]["type"], echo["untrusted"]]))',
      'print(json.dumps([t.get("unavailable") for t in mcp if t["name"] == "mcp.broken"]))',
    ].join('\n');
    const res = h.run(['orchestrate', h.script('d.py', py), '--json']);
    const body = parseJson(res.stdout);
    expect(body.result.outcome, JSON.stringify(body)).toBe('success');
    const [names, echo, broken] = (body.result.stdout as string).trim().split('\n');
    expect(JSON.parse(names!)).toEqual(['mcp.broken', 'mcp.everything.echo']);
    expect(JSON.parse(echo!)).toEqual(['comis_tools.mcp.everything.echo', 'string', true]);
    expect(JSON.parse(broken!)).toEqual([true]);
  });

  it('lazy: a script that does not call describe( starts no server and gets no digest', () => {
    const marker = join(tempDir('comis-digest-'), 'starts');
    const h = makeHome(config(marker, ['edge']));
    const ts = "import { comis_tools } from './comis_tools.js';\nconst d = (comis_tools as any)['desc' + 'ribe'];\nconsole.log(process.env.COMIS_MCP_TOOLS === undefined, d().some((t: any) => t.capability === 'orch:mcp'));";
    const res = h.run(['orchestrate', h.script('lazy.ts', ts), '--json']);
    const body = parseJson(res.stdout);
    expect(body.result.stdout.trim()).toBe('true false');
    expect(existsSync(marker)).toBe(false);
  });

  it('pre-flight asks only when describe( is called and a server is allowlisted and orch:mcp is held', () => {
    expect(wantsMcpDigest('const t = comis_tools.describe();', surface(['edge']), true)).toBe(true);
    expect(wantsMcpDigest('comis_tools.describe ()', surface(['edge.ping']), true)).toBe(true);
    expect(wantsMcpDigest('await comis_tools.mcp.edge.ping()', surface(['edge']), true)).toBe(false);
    expect(wantsMcpDigest('comis_tools.describe()', surface([]), true)).toBe(false);
    expect(wantsMcpDigest('comis_tools.describe()', surface(['edge']), false)).toBe(false);
  });

  it('the digest is bounded: past the limit a tool keeps its entry and loses its schema', () => {
    const big = { type: 'object', description: 'x'.repeat(400_000) };
    const entries = describeEntries(Array.from({ length: 8 }, (_, i) => ({ server: 's', tool: `t${i}`, call: `comis_tools.mcp.s.t${i}`, capability: 'orch:mcp' as const, inputSchema: big, untrusted: true as const })));
    const json = digestJson(entries);
    expect(json.length).toBeLessThanOrEqual(MCP_DIGEST_MAX_BYTES);
    const parsed = JSON.parse(json) as { name: string; inputSchema: unknown; schemaOmitted?: boolean }[];
    expect(parsed.map((e) => e.name)).toEqual(entries.map((e) => e.name));
    expect(parsed.filter((e) => e.schemaOmitted).length).toBeGreaterThan(0);
    expect(parsed[0]!.inputSchema).toEqual(big);
  });
});
