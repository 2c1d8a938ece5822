/**
 * The SDK proxy, TS/JS and Python, end to end in a real jail against the
 * real server-everything over stdio: `comis_tools.mcp.everything.echo({message: "hi"})`
 * works for an allowlisted agent and is denied, audited and explained for any
 * other; the proxy is not thenable or otherwise confusable.
 */
import { join } from 'node:path';

import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';

import { parseJson } from '../helpers/cli.js';
import { mcpConfigYaml } from '../helpers/mcp.js';
import { makeHome } from '../helpers/orchestrate.js';

const ENVELOPE = /^<<<EXTERNAL_UNTRUSTED_CONTENT id=[0-9a-f]+ source=mcp:everything\.echo>>>\nEcho: hi\n<<<END_EXTERNAL_UNTRUSTED_CONTENT id=[0-9a-f]+>>>$/;

function audit(home: string, leaseId: string): unknown[] {
  const db = new Database(join(home, 'comis.db'), { readonly: true });
  try {
    return db.prepare('SELECT tool, capability, decision, reason FROM audit_events WHERE lease_id = ? ORDER BY id').all(leaseId);
  } finally {
    db.close();
  }
}

describe('comis_tools.mcp from the SDK', () => {
  const config = mcpConfigYaml({ default: ['everything.echo', 'everything.get-sum'], other: undefined });

  it('TypeScript: echo works for the allowlisted agent; describe() lists only its allowlisted tools', () => {
    const h = makeHome(config);
    const ts = `import { comis_tools } from './comis_tools.js';\nconst r = await comis_tools.mcp.everything.echo({ message: 'hi' });\nconsole.log(r.text);\nconst sum = await comis_tools.mcp.everything['get-sum']({ a: 2, b: 3 });\nconsole.log(sum.text?.includes('5'));\nconst d = await comis_tools.mcp.describe();\nconsole.log(JSON.stringify(d.map((t) => [t.call, typeof t.description, Object.keys(t.inputSchema).length > 0])));`;
    const res = h.run(['orchestrate', h.script('echo.ts', ts), '--json']);
    const body = parseJson(res.stdout);
    const [e1, e2, e3, sum, desc] = (body.result.stdout as string).split('\n');
    expect([e1, e2, e3].join('\n')).toMatch(ENVELOPE);
    expect(sum).toBe('true');
    expect(JSON.parse(desc!)).toEqual([
      ['comis_tools.mcp.everything.echo', 'string', true],
      ['comis_tools.mcp.everything.get-sum', 'string', true],
    ]);
  });

  it('Python: echo works synchronously; dunder names are refused', () => {
    const h = makeHome(config);
    const py = `import comis_tools\nr = comis_tools.mcp.everything.echo({"message": "hi"})\nprint(r["text"])\nfor name in ["__class__", "__await__", "__iter__", "_private"]:\n    try:\n        getattr(comis_tools.mcp.everything, name)\n        print(name, "REACHABLE")\n    except AttributeError:\n        print(name, "refused")\ntry:\n    comis_tools.mcp.__dict__\n    print("dict REACHABLE")\nexcept AttributeError:\n    print("dict refused")\nprint(len(comis_tools.mcp.describe()))`;
    const res = h.run(['orchestrate', h.script('echo.py', py), '--json']);
    const out = (parseJson(res.stdout).result.stdout as string).split('\n');
    expect(out.slice(0, 3).join('\n')).toMatch(ENVELOPE);
    expect(out.slice(3, 8)).toEqual(['__class__ refused', '__await__ refused', '__iter__ refused', '_private refused', 'dict refused']);
    expect(out[8]).toBe('2');
  });

  it('another agent: denied at the socket (a thrown error in the same turn), audited, and explained', () => {
    const h = makeHome(config);
    // Dynamic names pass the pre-flight, so the socket decides.
    const ts = `import { comis_tools } from './comis_tools.js';\nconst s = ['every', 'thing'].join('');\ntry { await comis_tools.mcp[s].echo({ message: 'hi' }); console.log('ALLOWED'); } catch (e) { console.log(e.name, e.code, e.message); }\nconsole.log('same turn');`;
    const res = h.run(['orchestrate', h.script('deny.ts', ts), '--agent', 'other', '--json']);
    const body = parseJson(res.stdout);
    expect(body.result.stdout).toBe(
      'ComisToolError mcp_not_allowed comis_tools.mcp.everything.echo is not allowlisted for agent "other": add "everything.echo" (or "everything" for all its tools) to agents.other.autonomy.mcp.allow\nsame turn\n',
    );
    expect(audit(h.home, body.result.leaseId)).toEqual([{ tool: 'mcp', capability: 'orch:mcp', decision: 'deny', reason: 'surface_disabled' }]);
    const explain = h.run(['explain', '--last', '--json']);
    expect(JSON.stringify(parseJson(explain.stdout))).toContain('"tool":"mcp"');
    // A static call is refused before the jail, naming the entry to add.
    const pre = h.run(['orchestrate', h.script('static.ts', `import { comis_tools } from './comis_tools.js';\nawait comis_tools.mcp.everything.echo({ message: 'hi' });`), '--agent', 'other']);
    expect(pre.status).toBe(4);
    expect(pre.stderr).toContain('The script calls comis_tools.mcp.everything.echo, which agent "other" may not call: it is not on agents.other.autonomy.mcp.allow.');
    expect(pre.stderr).toContain('Add "everything.echo" (or "everything" for all its tools) to agents.other.autonomy.mcp.allow');
  });

  it('the thenable trap: awaiting or inspecting the proxy calls nothing', () => {
    const h = makeHome(config);
    const js = `import { comis_tools } from './comis_tools.js';\nimport util from 'node:util';\nconst srv = await comis_tools.mcp.everything;\nconst ns = await comis_tools.mcp;\nconsole.log(typeof srv.echo, typeof ns.describe);\nconsole.log(['then', 'catch', 'finally', 'toJSON', 'constructor', '__proto__', 'inspect', 'valueOf'].map((k) => typeof comis_tools.mcp.everything[k] + '/' + typeof comis_tools.mcp[k]).join(' '));\nconsole.log(typeof comis_tools.mcp.everything[Symbol.toPrimitive], typeof comis_tools.mcp[Symbol.iterator], typeof comis_tools.mcp[util.inspect.custom]);\nconsole.log(JSON.stringify(comis_tools.mcp.everything), Object.keys(comis_tools.mcp).length, Object.getPrototypeOf(comis_tools.mcp));\nutil.inspect(comis_tools.mcp.everything); String(Object.prototype.toString.call(comis_tools.mcp));\n// Positive control: a real call on the same proxy reaches the socket.\nconsole.log((await comis_tools.mcp.everything.echo({ message: 'x' })).source);`;
    const res = h.run(['orchestrate', h.script('then.mjs', js), '--json']);
    const body = parseJson(res.stdout);
    expect(body.result.stdout).toBe('function function\n' + Array(8).fill('undefined/undefined').join(' ') + '\nundefined undefined undefined\n{} 0 null\nmcp:everything.echo\n');
    // Exactly one MCP call reached the socket: the positive control.
    expect(audit(h.home, body.result.leaseId)).toEqual([{ tool: 'mcp:everything.echo', capability: 'orch:mcp', decision: 'allow', reason: null }]);
  });
});
