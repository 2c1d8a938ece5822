/**
 * Attacks on comis_tools.mcp from inside a real jail, through `bin/comis.js`
 * and the raw capability socket (`{method: "mcp", params: {server, tool, args}}`),
 * against real MCP servers over stdio (server-everything and the edge fixture).
 * The promise: allowlisted or denied, nothing in between; a denial is
 * content-free in the store; results come back as data.
 */
import { join } from 'node:path';

import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';

import { parseJson } from '../helpers/cli.js';
import { mcpConfigYaml, RAW_MCP } from '../helpers/mcp.js';
import { makeHome } from '../helpers/orchestrate.js';

function auditOf(home: string, leaseId: string): { tool: string; capability: string; decision: string; reason: string | null }[] {
  const db = new Database(join(home, 'comis.db'), { readonly: true });
  try {
    return db.prepare('SELECT tool, capability, decision, reason FROM audit_events WHERE lease_id = ? ORDER BY id').all(leaseId) as never;
  } finally {
    db.close();
  }
}

/** Every text column of the store, for "this name never reached it". */
function storeText(home: string): string {
  const db = new Database(join(home, 'comis.db'), { readonly: true });
  try {
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[];
    return tables.map((t) => JSON.stringify(db.prepare(`SELECT * FROM "${t.name}"`).all())).join('\n');
  } finally {
    db.close();
  }
}

const show = `const show = (r) => console.log(r.ok ? 'ok ' + JSON.stringify(r.result) : 'err ' + r.error.code + ' ' + r.error.message);`;

describe('comis_tools.mcp at the socket', () => {
  it('an allowlisted server tool answers; an unlisted server and an unlisted tool are denied', () => {
    const h = makeHome(mcpConfigYaml({ default: ['everything.echo'] }));
    const script = `${RAW_MCP}\n${show}\nconst n = ['get', 'sum'].join('-');\nshow(await mcpCall('everything', 'echo', { message: 'hi' }));\nshow(await mcpCall('everything', n, { a: 1, b: 2 }));\nshow(await mcpCall(['nope', 'srv'].join('_'), 'secretcanary', {}));`;
    const res = h.run(['orchestrate', h.script('gate.mjs', script), '--json']);
    const body = parseJson(res.stdout);
    const [echo, sum, nope] = (body.result.stdout as string).trim().split('\n');
    expect(echo).toMatch(
      /^ok \{"type":"McpResult","source":"mcp:everything.echo","isError":false,"content":\[\],"untrusted":true,"text":"<<<EXTERNAL_UNTRUSTED_CONTENT id=[0-9a-f]+ source=mcp:everything.echo>>>\\nEcho: hi\\n<<<END_EXTERNAL_UNTRUSTED_CONTENT id=[0-9a-f]+>>>"\}$/,
    );
    expect(sum).toBe('err mcp_not_allowed comis_tools.mcp.everything.get-sum is not allowlisted for agent "default": add "everything.get-sum" (or "everything" for all its tools) to agents.default.autonomy.mcp.allow');
    expect(nope).toMatch(/^err mcp_not_allowed comis_tools\.mcp\.nope_srv\.secretcanary is not allowlisted/);
    expect(auditOf(h.home, body.result.leaseId)).toEqual([
      { tool: 'mcp:everything.echo', capability: 'orch:mcp', decision: 'allow', reason: null },
      { tool: 'mcp', capability: 'orch:mcp', decision: 'deny', reason: 'surface_disabled' },
      { tool: 'mcp', capability: 'orch:mcp', decision: 'deny', reason: 'surface_disabled' },
    ]);
    // Names the operator did not list never reach the store.
    const stored = storeText(h.home);
    expect(stored).not.toContain('get-sum');
    expect(stored).not.toContain('nope_srv');
    expect(stored).not.toContain('secretcanary');
    // Positive control: with the server listed whole, the same dynamic call answers.
    const h2 = makeHome(mcpConfigYaml({ default: ['everything'] }));
    const again = h2.run(['orchestrate', h2.script('gate.mjs', script), '--json']);
    expect(parseJson(again.stdout).result.stdout.split('\n')[1]).toMatch(/^ok .*The sum of 1 and 2 is 3/);
  });

  it('an agent with no allowlist reaches no server, even a configured one (deny by absence)', () => {
    const h = makeHome(mcpConfigYaml({ default: undefined }));
    const res = h.run(['orchestrate', h.script('none.mjs', `${RAW_MCP}\n${show}\nconst s = 'every' + 'thing';\nshow(await mcpCall(s, 'echo', { message: 'hi' }));`), '--json']);
    const body = parseJson(res.stdout);
    expect(body.result.stdout).toMatch(/^err mcp_not_allowed comis_tools\.mcp\.everything\.echo is not allowlisted for agent "default"/);
    expect(auditOf(h.home, body.result.leaseId)).toEqual([{ tool: 'mcp', capability: 'orch:mcp', decision: 'deny', reason: 'surface_disabled' }]);
  });

  it('names with ../, __proto__, constructor, then, control characters or 10,000 characters are denied and never stored', () => {
    const h = makeHome(mcpConfigYaml({ default: ['edge', 'everything'] }));
    const names = [
      ['../edge', 'ping'],
      ['edge', '../ping'],
      ['__proto__', 'ping'],
      ['edge', '__proto__'],
      ['edge', 'constructor'],
      ['constructor', 'ping'],
      ['edge', 'then'],
      ['edge\\n', 'ping'],
      ['edge', 'p'.repeat(10_000)],
      ['e'.repeat(200), 'ping'],
    ];
    const script = `${RAW_MCP}\nconst names = ${JSON.stringify(names)};\nfor (const [s, t] of names) { const r = await mcpCall(s.replace('\\\\n', '\\n'), t, {}); console.log(r.ok ? 'ALLOWED' : r.error.code); }\nconst ok = await mcpCall('edge', 'ping', {});\nconsole.log(ok.ok ? 'control ok' : ok.error.code);`;
    const res = h.run(['orchestrate', h.script('names.mjs', script), '--json']);
    const body = parseJson(res.stdout);
    const lines = (body.result.stdout as string).trim().split('\n');
    expect(lines.slice(0, 10).every((l) => l === 'mcp_not_allowed' || l === 'bad_request')).toBe(true);
    // Positive control: the same socket, server and allowlist answer a legitimate call.
    expect(lines[10]).toBe('control ok');
    const stored = storeText(h.home);
    expect(stored).not.toContain('__proto__');
    expect(stored).not.toContain('../');
    expect(stored).not.toContain('ppppppppp');
  });

  it('a tool the server does not have is denied at the socket and recorded without its name', () => {
    const h = makeHome(mcpConfigYaml({ default: ['edge'] }));
    const res = h.run(['orchestrate', h.script('missing.mjs', `${RAW_MCP}\n${show}\nshow(await mcpCall('edge', 'no_such_tool_canary', {}));`), '--json']);
    const body = parseJson(res.stdout);
    expect(body.result.stdout).toMatch(/^err unknown_tool MCP server "edge" has no tool "no_such_tool_canary"/);
    expect(auditOf(h.home, body.result.leaseId)).toEqual([{ tool: 'mcp:edge.<unknown>', capability: 'orch:mcp', decision: 'deny', reason: 'unknown_tool' }]);
    expect(storeText(h.home)).not.toContain('no_such_tool_canary');
  });

  it('a coordinator never reaches mcp, whatever its allowlist says', () => {
    const h = makeHome(mcpConfigYaml({ default: ['edge'] }).replace('    autonomy:\n      mcp:', '    autonomy:\n      role: coordinator\n      mcp:'));
    const res = h.run(['orchestrate', h.script('coord.mjs', `${RAW_MCP}\n${show}\nshow(await mcpCall('edge', 'ping', {}));`), '--json']);
    const body = parseJson(res.stdout);
    expect(body.result.stdout).toMatch(/^err policy_denied mcp is denied by the tool policy of agent "default" \(role_coordinator/);
  });

  it('results are data: an envelope-closing text is defused, structured content sanitized, binaries become files', () => {
    const h = makeHome(mcpConfigYaml({ default: ['edge'] }));
    const script = `${RAW_MCP}\nimport { readFileSync } from 'node:fs';\nconst e = await mcpCall('edge', 'escape', {});\nconsole.log(JSON.stringify(e.result));\nconst i = await mcpCall('edge', 'image', {});\nconsole.log(JSON.stringify(i.result.content));\nconsole.log(readFileSync(i.result.content[0].file).toString('hex'));\nconst s = await mcpCall('edge', 'structured', {});\nconsole.log(JSON.stringify(s.result.structuredContent));\nconst f = await mcpCall('edge', 'fail', {});\nconsole.log(f.result.isError);\nconst t = await mcpCall('edge', 'throw', {});\nconsole.log(JSON.stringify(t));`;
    const res = h.run(['orchestrate', h.script('data.mjs', script), '--json']);
    const lines = (parseJson(res.stdout).result.stdout as string).trim().split('\n');
    const escape = JSON.parse(lines[0]!) as { text: string; structuredContent: Record<string, unknown> };
    // One envelope: exactly one opening and one closing marker, both ours (same id).
    const opens = escape.text.match(/<<<EXTERNAL_UNTRUSTED_CONTENT id=([0-9a-f]+)/g)!;
    const closes = escape.text.match(/<<<END_EXTERNAL_UNTRUSTED_CONTENT id=([0-9a-f]+)>>>/g)!;
    expect(opens).toHaveLength(1);
    expect(closes).toHaveLength(1);
    expect(escape.text).toContain('[marker removed]');
    expect(escape.text).not.toMatch(/[\u200b\u202e]|\udb40\udc41/);
    expect(JSON.stringify(escape.structuredContent)).not.toMatch(/external[\s_]untrusted[\s_]content/i);
    expect(Object.keys(escape.structuredContent)).not.toContain('__proto__');
    const parts = JSON.parse(lines[1]!) as { type: string; mimeType: string; bytes: number; file: string }[];
    expect(parts.map((p) => [p.type, p.mimeType, p.bytes])).toEqual([
      ['image', 'image/png', 4],
      ['audio', 'audio/wav', 4],
      ['resource', 'application/octet-stream', 5],
    ]);
    expect(parts[0]!.file).toMatch(/^results\/mcp-\d+\.png$/);
    expect(lines[2]).toBe('89504e47');
    expect(JSON.parse(lines[3]!)).toEqual({
      items: [
        { id: 1, name: 'a' },
        { id: 2, name: 'b' },
      ],
    });
    expect(lines[4]).toBe('true');
    // A tool that throws: the SDK server answers isError with the message, which is data like any text.
    const thrown = JSON.parse(lines[5]!) as { ok: boolean; result: { isError: boolean; text: string } };
    expect(thrown.ok && thrown.result.isError).toBe(true);
    expect(thrown.result.text).toContain('thrown [marker removed]');
  });

  it('a result over 15,000 bytes is a ResultRef sliced in the jail', () => {
    const h = makeHome(mcpConfigYaml({ default: ['edge'] }));
    const script = `${RAW_MCP}\nimport { readFileSync } from 'node:fs';\nconst r = await mcpCall('edge', 'large', { n: 40000 });\nconsole.log(r.result.type, r.result.kind, r.result.untrusted, r.result.source, r.result.bytes > 40000);\nconsole.log(readFileSync(r.result.ref, 'utf8').includes('line 0000000000100'));`;
    const res = h.run(['orchestrate', h.script('large.mjs', script), '--json']);
    const body = parseJson(res.stdout);
    expect(body.result.stdout).toBe('ResultRef json true mcp:edge.large true\ntrue\n');
    expect(body.result.resultRefs.count).toBe(1);
  });
});
