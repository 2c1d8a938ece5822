/**
 * Tool policy and the coordinator role, end to end through bin/comis.js:
 * pre-flight refusal, socket deny of a dynamically named call, the SDK the
 * agent sees, and how explain and fleet report policy denies. Each refusal
 * has a positive control: the same script under a permissive agent does what
 * the refused one could not, so "refused" means the policy held.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { SUCCESS_LINE, parseJson } from '../helpers/cli.js';
import { makeHome } from '../helpers/orchestrate.js';
import { schemaValidator } from '../obs/schema.js';

const MINIMAL_NO_GREP = 'agents:\n  default:\n    autonomy:\n      write: true\n    skills:\n      toolPolicy:\n        profile: minimal\n        deny: [grep, write]\n';
const COORDINATOR = 'agents:\n  lead:\n    autonomy:\n      role: coordinator\n      write: true\n';
const WORKER = 'agents:\n  lead:\n    autonomy:\n      role: worker\n      write: true\n';

// A call whose name the static scan cannot see: it reaches the socket.
const DYNAMIC = (tool: string, args: string) => `import { comis_tools } from './comis_tools.js';
const name = [${tool
  .split('')
  .map((c) => JSON.stringify(c))
  .join(', ')}].join('');
console.log('REACHED');
try {
  const r = await comis_tools.invoke(name, ${args});
  console.log('ALLOWED', JSON.stringify(r).length > 0);
} catch (e) {
  console.log('DENIED', e.code, e.message);
}`;

describe('tool policy (skills.toolPolicy)', () => {
  it('pre-flight: minimal with deny [grep, write] refuses grep and write before spawning, naming the entry', () => {
    const h = makeHome(MINIMAL_NO_GREP);
    writeFileSync(join(h.workspace(), 'a.txt'), 'TODO\n');
    const grep = h.run(['orchestrate', h.script('g.mjs', `import { writeFileSync } from 'node:fs';\nimport { comis_tools } from './comis_tools.js';\nwriteFileSync('ran.txt', 'x');\nawait comis_tools.grep({ pattern: 'TODO' });`), '--json']);
    expect(grep.status).toBe(4);
    const body = parseJson(grep.stdout);
    expect(body).toMatchObject({ status: 'error', error: { code: 'CAPABILITY_DENIED', details: { policyDenied: [{ tool: 'grep', why: 'explicit_deny', entry: 'grep' }] } } });
    expect(body.error.message).toContain('explicit_deny: "grep" in agents.default.skills.toolPolicy.deny');
    expect(existsSync(join(h.workspace(), 'ran.txt'))).toBe(false);
    const write = h.run(['orchestrate', h.script('w.mjs', `import { comis_tools } from './comis_tools.js';\nawait comis_tools.write({ path: 'a', content: 'b' });`)]);
    expect(write.status).toBe(4);
    expect(write.stderr).toContain('explicit_deny: "write"');
    // ref_sql is not in minimal and not allowed: not_in_profile.
    const sql = h.run(['orchestrate', h.script('s.mjs', `import { comis_tools } from './comis_tools.js';\nawait comis_tools.ref_sql({ ref: 'x', query: 'select 1' });`)]);
    expect(sql.status).toBe(4);
    expect(sql.stderr).toContain('not_in_profile: ref_sql');
    // read is in the profile: it runs.
    const read = h.run(['orchestrate', h.script('r.mjs', `import { comis_tools } from './comis_tools.js';\nconsole.log((await comis_tools.read({ path: 'a.txt' })).content);`)]);
    expect(read.stderr).toMatch(SUCCESS_LINE);
    expect(read.stdout).toBe('TODO\n');
    // Positive control: the same grep script with the default (full) policy runs.
    const full = makeHome();
    writeFileSync(join(full.workspace(), 'a.txt'), 'TODO\n');
    const ok = full.run(['orchestrate', full.script('g.mjs', `import { comis_tools } from './comis_tools.js';\nconsole.log((await comis_tools.grep({ pattern: 'TODO' })).matches.length);`)]);
    expect(ok.stdout).toBe('1\n');
  });

  it('socket: a dynamically named denied call passes pre-flight and is denied as a policy deny; explain and fleet report it apart', () => {
    const h = makeHome(MINIMAL_NO_GREP);
    writeFileSync(join(h.workspace(), 'a.txt'), 'TODO\n');
    const res = h.run(['orchestrate', h.script('d.mjs', DYNAMIC('grep', "{ pattern: 'TODO' }")), '--json', '--session', 'pol-1']);
    expect(res.status).toBe(0);
    const run = parseJson(res.stdout).result;
    expect(run.stdout).toMatch(/^REACHED\nDENIED policy_denied grep is denied by the tool policy of agent "default" \(explicit_deny: "grep" in agents\.default\.skills\.toolPolicy\.deny\)\n$/);
    expect(run.toolCalls).toEqual([{ tool: 'grep', capability: 'none', decision: 'deny', count: 1 }]);
    const explain = h.run(['explain', 'pol-1', '--json']);
    const report = parseJson(explain.stdout);
    schemaValidator('explain')(report);
    expect(report.result.orchestrate[0].policyDenies).toEqual([{ tool: 'grep', reason: 'explicit_deny', count: 1 }]);
    expect(report.result.likelyRootCause).toMatchObject({ signal: 'deny', tool: 'grep', reason: 'explicit_deny' });
    expect(report.result.likelyRootCause.detail).toContain('denied grep by its tool policy (explicit_deny)');
    expect(report.result.likelyRootCause.nextSteps.join(' ')).toContain('agents.default.skills.toolPolicy.deny');
    const pretty = h.run(['explain', 'pol-1']);
    expect(pretty.stdout).toContain('grep×1 DENIED BY POLICY (explicit_deny)');
    const fleet = parseJson(h.run(['fleet', '--json']).stdout);
    schemaValidator('fleet')(fleet);
    expect(fleet.result.findings.find((f: { code: string }) => f.code === 'policy_denied')).toMatchObject({ subject: 'grep', count: 1, data: { events: 1, runs: 1 } });
    expect(fleet.result.findings.some((f: { code: string }) => f.code === 'capability_denied')).toBe(false);
    // Positive control: the same dynamic call under the full policy is allowed.
    const full = makeHome();
    writeFileSync(join(full.workspace(), 'a.txt'), 'TODO\n');
    expect(full.run(['orchestrate', full.script('d.mjs', DYNAMIC('grep', "{ pattern: 'TODO' }"))]).stdout).toBe('REACHED\nALLOWED true\n');
  });

  it('the SDK the agent sees has no denied tool: describe(), the .d.ts and Python', () => {
    const h = makeHome(MINIMAL_NO_GREP);
    const js = h.run([
      'orchestrate',
      h.script(
        'l.mjs',
        `import { readFileSync } from 'node:fs';\nimport { comis_tools } from './comis_tools.js';\nconst dts = readFileSync('/run/comis/comis_tools.d.ts', 'utf8');\nconsole.log(JSON.stringify({ names: comis_tools.describe().map((t) => t.name), grep: typeof comis_tools[['gr', 'ep'].join('')], dtsGrep: dts.includes('GrepParams'), dtsRead: dts.includes('ReadParams') }));`,
      ),
    ]);
    expect(js.stderr).toMatch(SUCCESS_LINE);
    expect(JSON.parse(js.stdout)).toEqual({ names: ['read'], grep: 'undefined', dtsGrep: false, dtsRead: true });
    const py = h.run(['orchestrate', h.script('l.py', `import comis_tools\nprint([t["name"] for t in comis_tools.describe()], hasattr(comis_tools, "grep"), hasattr(comis_tools, "read"))`)]);
    expect(py.stderr).toMatch(SUCCESS_LINE);
    expect(py.stdout).toBe("['read'] False True\n");
    // Control: the default agent's SDK lists every tool.
    const full = makeHome();
    const all = full.run(['orchestrate', full.script('l.mjs', `import { comis_tools } from './comis_tools.js';\nconsole.log(comis_tools.describe().map((t) => t.name).join(','));`)]);
    expect(all.stdout).toBe('read,grep,ref_sql,ref_jsonpath,memory_search,memory_get,web_search,web_fetch,checkpoint,resume,write,message_send,message_reply,message_react\n');
  });
});

describe('autonomy.role: coordinator', () => {
  const WRITE = `import { comis_tools } from './comis_tools.js';\nconst w = await comis_tools.write({ path: 'x.md', content: 'y' });\nconsole.log(w.path);`;
  const FS_WRITE = `import { writeFileSync } from 'node:fs';\nconsole.log('REACHED');\ntry { writeFileSync('mutated.txt', 'x'); console.log('WROTE'); } catch (e) { console.log('REFUSED', e.code); }`;

  it('cannot call write even with autonomy.write: true: refused in pre-flight, denied at the socket, absent from its SDK', () => {
    const h = makeHome(COORDINATOR);
    const pre = h.run(['orchestrate', h.script('w.mjs', WRITE), '--agent', 'lead', '--json']);
    expect(pre.status).toBe(4);
    const err = parseJson(pre.stdout).error;
    expect(err).toMatchObject({ code: 'CAPABILITY_DENIED', details: { policyDenied: [{ tool: 'write', why: 'role_coordinator' }] } });
    expect(err.message).toContain('agents.lead.autonomy.role is coordinator');
    const dyn = h.run(['orchestrate', h.script('d.mjs', DYNAMIC('write', "{ path: 'x.md', content: 'y' }")), '--agent', 'lead', '--json']);
    const run = parseJson(dyn.stdout).result;
    expect(run.stdout).toMatch(/^REACHED\nDENIED policy_denied write is denied by the tool policy of agent "lead" \(role_coordinator: /);
    expect(run.toolCalls).toEqual([{ tool: 'write', capability: 'none', decision: 'deny', count: 1 }]);
    const sdk = h.run(['orchestrate', h.script('l.mjs', `import { comis_tools } from './comis_tools.js';\nconsole.log(comis_tools.describe().map((t) => t.name).join(','));`), '--agent', 'lead']);
    expect(sdk.stdout).toBe('read,grep,ref_sql,ref_jsonpath,memory_search,memory_get,web_search,web_fetch,checkpoint,resume\n');
    // Positive control: the same agent as a worker writes.
    const w = makeHome(WORKER);
    expect(w.run(['orchestrate', w.script('w.mjs', WRITE), '--agent', 'lead']).stdout).toBe('results/writes/x.md\n');
    expect(parseJson(w.run(['orchestrate', w.script('d.mjs', DYNAMIC('write', "{ path: 'x.md', content: 'y' }")), '--agent', 'lead', '--json']).stdout).result.stdout).toBe('REACHED\nALLOWED true\n');
  });

  it('its own scripts mutate nothing: the workspace is read-only in the jail, reads still work', () => {
    const h = makeHome(COORDINATOR);
    writeFileSync(join(h.workspace('lead'), 'notes.md'), 'hello\n');
    const res = h.run(['orchestrate', h.script('m.mjs', `${FS_WRITE}\nimport { comis_tools } from './comis_tools.js';\nconsole.log((await comis_tools.read({ path: 'notes.md' })).content);`), '--agent', 'lead']);
    expect(res.stderr).toMatch(SUCCESS_LINE);
    expect(res.stdout).toBe('REACHED\nREFUSED EROFS\nhello\n');
    expect(existsSync(join(h.workspace('lead'), 'mutated.txt'))).toBe(false);
    // Positive control: a worker's script writes its workspace.
    const w = makeHome(WORKER);
    expect(w.run(['orchestrate', w.script('m.mjs', FS_WRITE), '--agent', 'lead']).stdout).toBe('REACHED\nWROTE\n');
    expect(readFileSync(join(w.workspace('lead'), 'mutated.txt'), 'utf8')).toBe('x');
  });
});
