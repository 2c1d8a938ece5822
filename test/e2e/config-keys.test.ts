/**
 * Config keys take effect: each test sets keys in config.yaml and shows, through
 * bin/comis.js, that the run behaves as docs/config.md says (the KEY_PROOFS
 * table of test/config/key-proofs.test.ts points here).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { SUCCESS_LINE, parseJson } from '../helpers/cli.js';
import { makeHome } from '../helpers/orchestrate.js';
import { tempDir } from '../helpers/temp.js';

const root = process.getuid?.() === 0;

describe('config keys take effect', () => {
  it('defaultAgent and workspace: the default agent is the configured one, and scripts run in its workspace', () => {
    const ws = tempDir('comis-ws-');
    writeFileSync(join(ws, 'where.txt'), 'custom workspace\n');
    const h = makeHome(`defaultAgent: ops\nagents:\n  ops:\n    workspace: ${ws}\n  other: {}\n`);
    const res = h.run(['orchestrate', h.script('w.mjs', `import { comis_tools } from './comis_tools.js';\nconsole.log((await comis_tools.read({ path: 'where.txt' })).content);`), '--json']);
    expect(parseJson(res.stdout).result).toMatchObject({ agentId: 'ops', stdout: 'custom workspace\n' });
  });

  it('timeoutMs and stdoutCapBytes: the configured limits end the run with their failure class', () => {
    const h = makeHome('agents:\n  default:\n    autonomy:\n      limits:\n        timeoutMs: 500\n        stdoutCapBytes: 2048\n');
    const slow = parseJson(h.run(['orchestrate', h.script('s.mjs', "console.log('REACHED'); setTimeout(() => console.log('late'), 20000);"), '--json']).stdout).result;
    expect(slow).toMatchObject({ outcome: 'failure', failureClass: 'timeout', timeoutMs: 500 });
    expect(slow.stdout).toBe('REACHED\n');
    const flood = parseJson(h.run(['orchestrate', h.script('f.mjs', "process.stdout.write('x'.repeat(1000)); process.stdout.write('y'.repeat(9000));"), '--json']).stdout).result;
    expect(flood).toMatchObject({ outcome: 'failure', failureClass: 'stdout_cap' });
    // Control: the same flood under the default cap succeeds.
    const d = makeHome();
    expect(parseJson(d.run(['orchestrate', d.script('f.mjs', "process.stdout.write('x'.repeat(10000));"), '--json']).stdout).result.outcome).toBe('success');
  });

  it('memoryMb, fileSizeMb, tmpSizeMb and maxProcesses: the jail has the configured bounds', () => {
    const h = makeHome('agents:\n  default:\n    autonomy:\n      limits:\n        memoryMb: 700\n        fileSizeMb: 3\n        tmpSizeMb: 5\n        maxProcesses: 17\n');
    const code = `import os, resource\nst = os.statvfs('/tmp')\nprint(resource.getrlimit(resource.RLIMIT_AS)[0] // 1048576, resource.getrlimit(resource.RLIMIT_FSIZE)[0] // 1048576, st.f_blocks * st.f_frsize // 1048576, resource.getrlimit(resource.RLIMIT_NPROC)[0])\n`;
    const res = h.run(['orchestrate', h.script('l.py', code)]);
    expect(res.stderr).toMatch(SUCCESS_LINE);
    const [as, fsize, tmp, nproc] = res.stdout.trim().split(' ').map(Number);
    expect([as, fsize, tmp]).toEqual([700, 3, 5]);
    // As root the jail's uid runs nothing else, so the count is exact; unprivileged it is added to what the uid already runs.
    if (root) expect(nproc).toBe(17);
    else expect(nproc).toBeGreaterThanOrEqual(17);
  });

  it('tmpInodes: /tmp and /dev/shm hold the configured number of inodes, the default 16384 without it', () => {
    const code = `import os\nprint(os.statvfs('/tmp').f_files, os.statvfs('/dev/shm').f_files)\n`;
    const h = makeHome('agents:\n  default:\n    autonomy:\n      limits:\n        tmpInodes: 777\n');
    const res = h.run(['orchestrate', h.script('i.py', code)]);
    expect(res.stderr).toMatch(SUCCESS_LINE);
    expect(res.stdout.trim()).toBe('777 777');
    const d = makeHome();
    expect(d.run(['orchestrate', d.script('i.py', code)]).stdout.trim()).toBe('16384 16384');
  });

  it('resultFileMb and resultRunMb: a ResultRef over the per-file cap and writes over the run budget are tool errors', () => {
    const h = makeHome('agents:\n  default:\n    autonomy:\n      write: true\n      limits:\n        resultFileMb: 1\n        resultRunMb: 2\n');
    const ws = h.workspace();
    mkdirSync(join(ws, 'd'), { recursive: true });
    writeFileSync(join(ws, 'd', 'big.txt'), 'row\n'.repeat(400_000)); // 1.6 MB
    writeFileSync(join(ws, 'd', 'ok.txt'), 'row\n'.repeat(100_000)); // 0.4 MB
    const script = `import { comis_tools } from './comis_tools.js';
const out = [];
try { await comis_tools.read({ path: 'd/big.txt' }); out.push('big read'); } catch (e) { out.push('big refused ' + /per-file cap/.test(e.message)); }
const ok = await comis_tools.read({ path: 'd/ok.txt' }); out.push('ok ' + ok.type);
// Frames are at most 64 KiB, so 1.8 MB goes in 30 writes of 60 kB.
let failed = '';
for (let i = 0; i < 30 && !failed; i++) { try { await comis_tools.write({ path: 'w' + i + '.txt', content: 'z'.repeat(60000) }); } catch (e) { failed = e.code; } }
out.push(failed ? 'write refused ' + failed : 'write ok');
console.log(out.join(', '));`;
    const res = h.run(['orchestrate', h.script('r.mjs', script)]);
    expect(res.stderr).toMatch(SUCCESS_LINE);
    expect(res.stdout).toBe('big refused true, ok ResultRef, write refused quota_exceeded\n');
    // Control: with the defaults, both the big read and the write go through.
    const d = makeHome('agents:\n  default:\n    autonomy:\n      write: true\n');
    mkdirSync(join(d.workspace(), 'd'), { recursive: true });
    writeFileSync(join(d.workspace(), 'd', 'big.txt'), 'row\n'.repeat(400_000));
    writeFileSync(join(d.workspace(), 'd', 'ok.txt'), 'row\n'.repeat(100_000));
    expect(d.run(['orchestrate', d.script('r.mjs', script)]).stdout).toBe('big read, ok ResultRef, write ok\n');
  });
});
