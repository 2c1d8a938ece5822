/**
 * Attacks on the capability socket and the daemon-side tools, from inside a
 * real jail through `bin/comis.js`. Each case is an untrusted script and the
 * outcome we promise.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';

import { SUCCESS_LINE, parseJson } from '../helpers/cli.js';
import { makeHome } from '../helpers/orchestrate.js';
import { tempDir } from '../helpers/temp.js';

const RAW_CALL = `
import net from 'node:net';
export function rawCall(bearer, frame) {
  return new Promise((resolve) => {
    const s = net.createConnection(process.env.COMIS_ORCH_SOCKET);
    let buf = '';
    s.on('data', (d) => { buf += d; if (buf.includes('\\n')) { s.destroy(); resolve(JSON.parse(buf.split('\\n')[0])); } });
    s.on('error', (e) => resolve({ error: { code: 'socket_error', message: e.message } }));
    s.write((frame ?? JSON.stringify({ id: 1, bearer, method: 'tool.invoke', params: { tool: 'read', args: { path: 'x.txt' } } })) + '\\n');
  });
}`;

describe('capability gate under attack', () => {
  it("a bearer saved during a run is refused after it, and on another run's socket", () => {
    const h = makeHome();
    writeFileSync(join(h.workspace(), 'x.txt'), 'data\n');
    const saver = h.run([
      'orchestrate',
      h.script('save2.mjs', `${RAW_CALL}\nimport { writeFileSync } from 'node:fs';\nwriteFileSync('stolen.txt', process.env.COMIS_CAP_LEASE);\nconsole.log((await rawCall(process.env.COMIS_CAP_LEASE)).ok);`),
    ]);
    expect(saver.stdout).toBe('true\n');
    const reuse = h.run(['orchestrate', h.script('reuse.mjs', `${RAW_CALL}\nimport { readFileSync } from 'node:fs';\nconst r = await rawCall(readFileSync('stolen.txt', 'utf8'));\nconsole.log(r.ok, r.error && r.error.code);`)]);
    expect(reuse.stderr).toMatch(SUCCESS_LINE);
    expect(reuse.stdout).toBe('false unauthenticated\n');
  });

  it('a dynamically named call to a denied tool passes the pre-flight and is denied at the socket, and audited', () => {
    const h = makeHome();
    const res = h.run([
      'orchestrate',
      h.script(
        'dyn.mjs',
        `import { comis_tools } from './comis_tools.js';\nconst name = ['wr', 'ite'].join('');\ntry { await comis_tools[name]({ path: 'p', content: 'c' }); console.log('WROTE'); } catch (e) { console.log('denied', e.code); }`,
      ),
      '--json',
    ]);
    const body = parseJson(res.stdout);
    expect(body.result.stdout).toBe('denied surface_disabled\n');
    expect(body.result.toolCalls).toEqual([{ tool: 'write', capability: 'orch:write', decision: 'deny', count: 1 }]);
    const db = new Database(join(h.home, 'comis.db'), { readonly: true });
    expect(db.prepare('SELECT tool, decision, reason FROM audit_events WHERE lease_id = ?').all(body.result.leaseId)).toEqual([{ tool: 'write', decision: 'deny', reason: 'surface_disabled' }]);
    db.close();
  });

  it('control-plane names and made-up tools are denied, whatever the script tries', () => {
    const h = makeHome();
    const res = h.run([
      'orchestrate',
      h.script(
        'cp.mjs',
        `import { comis_tools } from './comis_tools.js';\nfor (const t of ['gateway', 'mcp_manage', 'mcp_login', 'tokens_manage', 'exec']) {\n  try { await comis_tools.invoke(t, {}); console.log(t, 'ALLOWED'); } catch (e) { console.log(t, e.code); }\n}`,
      ),
    ]);
    expect(res.stdout).toBe('gateway denied_by_origin\nmcp_manage denied_by_origin\nmcp_login denied_by_origin\ntokens_manage denied_by_origin\nexec unknown_tool\n');
  });

  it('a symlink planted in the workspace does not let read or grep escape', () => {
    const h = makeHome();
    const outside = tempDir('comis-outside-'); // beside the home, outside the workspace; removed after the test
    writeFileSync(join(outside, 'host-secret.txt'), 'HOST-SECRET-VALUE\n');
    const res = h.run([
      'orchestrate',
      h.script(
        'sym.mjs',
        `import { comis_tools } from './comis_tools.js';\nimport { symlinkSync } from 'node:fs';\nsymlinkSync(${JSON.stringify(join(outside, 'host-secret.txt'))}, 'a.txt');\nsymlinkSync('/etc/passwd', 'p.txt');\nsymlinkSync(${JSON.stringify(outside)}, 'dir');\nfor (const p of ['a.txt', 'p.txt', 'dir/host-secret.txt', '../x', '/etc/shadow']) {\n  try { const r = await comis_tools.read({ path: p }); console.log(p, 'READ', r.content); } catch (e) { console.log(p, e.code); }\n}\nconst g = await comis_tools.grep({ pattern: 'SECRET|root:' });\nconsole.log('grep', g.matches.length);`,
      ),
    ]);
    expect(res.stdout).not.toContain('HOST-SECRET-VALUE');
    expect(res.stdout).not.toContain('root:');
    expect(res.stdout).toBe('a.txt not_found\np.txt not_found\ndir/host-secret.txt not_found\n../x path_outside\n/etc/shadow path_outside\ngrep 0\n');
  });

  it('garbage, oversized and half-open frames from the jail do not crash or stall the runner', () => {
    const h = makeHome();
    writeFileSync(join(h.workspace(), 'x.txt'), 'still works\n');
    const res = h.run([
      'orchestrate',
      h.script(
        'junk.mjs',
        `import net from 'node:net';\nimport { comis_tools } from './comis_tools.js';\nconst p = process.env.COMIS_ORCH_SOCKET;\nconst hit = (data, end) => new Promise((r) => { const s = net.createConnection(p); s.on('error', () => r()); s.on('close', () => r()); s.on('connect', () => { s.write(data); if (end) s.end(); else setTimeout(() => s.destroy(), 200); }); });\nawait hit(Buffer.alloc(300000, 0xff));\nawait hit('{"id":1,"bearer":"x","method":"tool.invoke","params":' + '['.repeat(50000) + '\\n');\nawait hit('not json\\n'.repeat(100));\nawait hit('{"id":1,"method":"tool.invoke"', true);\nawait Promise.all(Array.from({ length: 40 }, () => hit('{', false)));\nawait new Promise((r) => setTimeout(r, 500));\nconst r = await comis_tools.read({ path: 'x.txt' });\nconsole.log(r.content);`,
      ),
    ]);
    expect(res.stderr).toMatch(SUCCESS_LINE);
    expect(res.stdout).toBe('still works\n');
  });

  it("the host config, the store and another agent's workspace are not visible in the jail", () => {
    const h = makeHome('agents:\n  default: {}\n  other: {}\n');
    writeFileSync(join(h.workspace('other'), 'private.txt'), 'OTHER-AGENT-PRIVATE\n');
    h.run(['orchestrate', h.script('warm.mjs', "console.log('x')")]);
    const probes = [join(h.home, 'config.yaml'), join(h.home, 'comis.db'), join(h.home, 'workspaces/other/private.txt'), '../other/private.txt', '/etc/shadow', '/root/.bashrc'];
    // Each probe prints its own line, READABLE or the errno; the listing of / comes last. A script that
    // throws before (or between) the probes misses lines, and the exact expectation below fails.
    const res = h.run([
      'orchestrate',
      h.script(
        'peek.mjs',
        `import { readFileSync, readdirSync } from 'node:fs';\nconst probes = ${JSON.stringify(probes)};\nfor (const [i, p] of probes.entries()) {\n  try { readFileSync(p); console.log('probe', i, 'READABLE'); } catch (e) { console.log('probe', i, e.code); }\n}\nconsole.log('root', readdirSync('/').sort().join(','));\nconsole.log('DONE');`,
      ),
    ]);
    expect(res.stderr).toMatch(SUCCESS_LINE);
    const lines = res.stdout.trim().split('\n');
    expect(lines).toHaveLength(probes.length + 2);
    probes.forEach((_, i) => expect(lines[i], probes[i]).toBe(`probe ${i} ENOENT`));
    expect(lines[probes.length]).toMatch(/^root .*\bworkspace\b/);
    expect(lines[probes.length]).not.toMatch(/\broot\b.*\broot\b/); // no /root in the jail
    expect(lines[probes.length + 1]).toBe('DONE');
    expect(res.stdout).not.toContain('READABLE');
    expect(res.stdout).not.toContain('OTHER-AGENT-PRIVATE');
    expect(existsSync(join(h.home, 'config.yaml'))).toBe(true);
    expect(readFileSync(join(h.home, 'config.yaml'), 'utf8')).toContain('other');
  });

  it('decoy secrets in the environment never reach the script', () => {
    const h = makeHome();
    const env = { DECOY_API_KEY: 'k-decoy-1', GITHUB_TOKEN: 't-decoy-2', AWS_SECRET_ACCESS_KEY: 's-decoy-3', DB_PASSWORD: 'p-decoy-4', MY_DSN: 'd-decoy-5', NPM_AUTH: 'a-decoy-6', PLAIN_SETTING: 'plain' };
    const res = h.run(
      [
        'orchestrate',
        h.script(
          'env.mjs',
          `import { readFileSync } from 'node:fs';\nconsole.log(JSON.stringify(process.env));\nconsole.log(readFileSync('/proc/1/environ', 'utf8').replace(/\\0/g, ' '));\nconsole.log(readFileSync('/proc/1/cmdline', 'utf8').replace(/\\0/g, ' '));`,
        ),
      ],
      { env },
    );
    expect(res.status).toBe(0);
    for (const v of Object.values(env)) expect(res.stdout).not.toContain(v);
    const seen = JSON.parse(res.stdout.split('\n')[0]!) as Record<string, string>;
    expect(Object.keys(seen).sort()).toEqual(expect.arrayContaining(['COMIS_CAP_LEASE', 'COMIS_ORCH_SOCKET', 'HOME', 'PATH']));
  });
});
