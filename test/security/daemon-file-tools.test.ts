/**
 * Attacks on the daemon-side file tools (read, grep, write): the jail plants
 * links, FIFOs and unreadable files in its workspace and asks comis — which
 * may run as root — to act on them. The confinement module must make the
 * outside unreachable, not just unreported: nothing outside is opened, a
 * link out is answered exactly like a missing path, and the tools never read
 * what the jail uid itself cannot.
 *
 * Positive controls: each attack shows it reached its target (the link
 * really leads to the host, the FIFO writer really is blocked and is
 * released by an open, the jail itself is refused the unreadable file).
 */
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, symlinkSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import type { ToolContext } from '../../src/lib/tools/context.js';
import { grepTool } from '../../src/lib/tools/grep.js';
import { readTool } from '../../src/lib/tools/read.js';
import { writeTool } from '../../src/lib/tools/write.js';
import { parseJson } from '../helpers/cli.js';
import { makeHome } from '../helpers/orchestrate.js';
import { toolContext } from '../helpers/tool-context.js';

const isRoot = process.getuid?.() === 0;

const context = (): ToolContext & { outside: string } => toolContext(1024 * 1024);

/** A process blocked opening `fifo` for writing; `released()` tells whether its open returned. */
function blockedWriter(fifo: string): { released: () => boolean; marker: string; stop: () => void } {
  const marker = `${fifo}.released`;
  const child = spawn('sh', ['-c', `echo data > '${fifo}'; echo yes > '${marker}'`], { stdio: 'ignore' });
  return { released: () => existsSync(marker), marker, stop: () => child.kill('SIGKILL') };
}

const settle = (ms = 300): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function errorOf(run: () => unknown): Promise<string> {
  try {
    await run();
  } catch (err) {
    const e = err as { code: string; message: string };
    return JSON.stringify({ code: e.code, message: e.message });
  }
  return 'NO ERROR';
}

describe('daemon-side file tools under attack', () => {
  it('a link to / is no oracle: an existing host file, a missing one and a root-only directory get byte-identical replies', () => {
    const h = makeHome();
    const raw = `
import net from 'node:net';
import { symlinkSync } from 'node:fs';
symlinkSync('/', 'lnk');
console.log('PLANTED');
const s = net.createConnection(process.env.COMIS_ORCH_SOCKET);
let buf = '';
const paths = ['lnk/etc/passwd', 'lnk/nonexistent-${Date.now()}', 'lnk/root', 'lnk/etc/shadow', 'lnk/proc/self/environ'];
s.on('connect', () => { for (const p of paths) s.write(JSON.stringify({ id: 1, bearer: process.env.COMIS_CAP_LEASE, method: 'tool.invoke', params: { tool: 'read', args: { path: p } } }) + '\\n'); });
s.on('data', (d) => { buf += d; const lines = buf.split('\\n').filter(Boolean); if (lines.length === paths.length) { for (const l of lines) console.log(l); s.destroy(); } });`;
    const res = h.run(['orchestrate', h.script('oracle.mjs', raw)]);
    const lines = res.stdout.trim().split('\n');
    // Positive control: the script planted the link, and on the host it really leads to / where the targets differ.
    expect(lines[0]).toBe('PLANTED');
    expect(readlinkSync(join(h.workspace(), 'lnk'))).toBe('/');
    expect(existsSync('/etc/passwd')).toBe(true);
    expect(existsSync('/root')).toBe(true);
    const replies = lines.slice(1);
    expect(replies).toHaveLength(5);
    expect(new Set(replies).size).toBe(1);
    expect(JSON.parse(replies[0]!)).toEqual({ id: 1, ok: false, error: { code: 'not_found', message: 'no such file or directory: lnk' } });
  });

  it('a host FIFO reached through a link is never opened: its blocked writer stays blocked', async () => {
    const ctx = context();
    const fifo = join(ctx.outside, 'fifo');
    execFileSync('mkfifo', [fifo]);
    symlinkSync('/', join(ctx.workspaceReal, 'lnk'));
    const writer = blockedWriter(fifo);
    try {
      await settle();
      expect(writer.released()).toBe(false);
      for (const path of [`lnk${fifo}`, `lnk${ctx.outside}`]) {
        expect(await errorOf(() => readTool(ctx, { path }))).toBe(JSON.stringify({ code: 'not_found', message: 'no such file or directory: lnk' }));
      }
      expect(await errorOf(() => grepTool(ctx, { pattern: 'data', path: `lnk${ctx.outside}` }))).toBe(JSON.stringify({ code: 'not_found', message: 'no such file or directory: lnk' }));
      await settle();
      expect(writer.released()).toBe(false);
      // Positive control: one real non-blocking open of the FIFO (what the old code did) releases the writer.
      const { openSync, closeSync, constants } = await import('node:fs');
      const fd = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
      await settle();
      closeSync(fd);
      for (let i = 0; i < 50 && !writer.released(); i++) await settle(50);
      expect(writer.released()).toBe(true);
    } finally {
      writer.stop();
    }
  });

  it('grep through a link walks nothing outside, at the top or deep in the tree', async () => {
    const ctx = context();
    mkdirSync(join(ctx.workspaceReal, 'sub', 'deeper'), { recursive: true });
    writeFileSync(join(ctx.workspaceReal, 'sub', 'inside.txt'), 'TOP-SECRET-looking but inside\n');
    symlinkSync(ctx.outside, join(ctx.workspaceReal, 'out'));
    symlinkSync('/', join(ctx.workspaceReal, 'sub', 'deeper', 'root'));
    const fifo = join(ctx.outside, 'fifo');
    execFileSync('mkfifo', [fifo]);
    const writer = blockedWriter(fifo);
    try {
      const all = (await grepTool(ctx, { pattern: 'TOP-SECRET' })) as { matches: { path: string }[] };
      // Positive control: the same pattern finds the inside file, and finds the outside one when that is the root.
      expect(all.matches.map((m) => m.path)).toEqual(['sub/inside.txt']);
      const control = (await grepTool({ ...ctx, workspaceReal: ctx.outside }, { pattern: 'TOP-SECRET', path: 'secret.txt' })) as { matches: unknown[] };
      expect(control.matches).toHaveLength(1);
      for (const path of ['out', `sub/deeper/root${ctx.outside}`, `out/secret.txt`]) {
        await expect(grepTool(ctx, { pattern: 'x', path })).rejects.toMatchObject({ code: 'not_found' });
      }
      await settle();
      expect(writer.released()).toBe(false);
    } finally {
      writer.stop();
    }
  });

  // As root the run holds both: a root-owned 0600 file and a 0700 directory, which the jail uid cannot read or
  // search while comis (root) still measures them for the workspace quota. Unprivileged the jail uid is comis's
  // own, so a directory the jail cannot search is one comis cannot measure either, and the quota watchdog kills
  // a run whose workspace holds one (run-data.test.ts "bytes in a chmod-000 directory still count"). The run
  // there holds only the 0000 file (a file's mode does not stop its lstat); the directory half is the next test.
  it('the tools never read what the jail uid cannot: a root-only file, a directory it cannot search (unprivileged: the file only, in a run)', () => {
    const h = makeHome();
    const ws = h.workspace();
    writeFileSync(join(ws, 'secret.txt'), 'ROOT-ONLY-CONTENT\n');
    mkdirSync(join(ws, 'locked'));
    writeFileSync(join(ws, 'locked', 'inner.txt'), 'LOCKED-CONTENT\n');
    // As root: owned by root, 0600/0700, the jail uid is someone else. Unprivileged: our own file at 0000,
    // which the kernel refuses to us (and so to the jail) — the same promise, checked the same way.
    chmodSync(join(ws, 'secret.txt'), isRoot ? 0o600 : 0o000);
    if (isRoot) chmodSync(join(ws, 'locked'), 0o700);
    const script = `import { comis_tools } from './comis_tools.js';
import { readFileSync } from 'node:fs';
for (const p of ['secret.txt', 'locked/inner.txt']) {
  try { readFileSync(p); console.log('jail', p, 'READ'); } catch (e) { console.log('jail', p, e.code); }
}
for (const p of ['secret.txt', 'locked/inner.txt', 'locked/missing.txt']) {
  try { const r = await comis_tools.read({ path: p }); console.log('tool', p, 'READ', r.content.trim()); } catch (e) { console.log('tool', p, e.code, e.message); }
}
const g = await comis_tools.grep({ pattern: 'ROOT-ONLY|LOCKED' });
console.log('grep', g.matches.length);`;
    const res = h.run(['orchestrate', h.script('perm.mjs', script)]);
    chmodSync(join(ws, 'locked'), 0o700);
    // The run ended by itself (not, e.g., by the quota watchdog), so every line below was reached.
    expect(res.stderr).not.toContain('the run was killed');
    expect(res.status).toBe(0);
    expect(res.stdout).not.toContain('ROOT-ONLY-CONTENT');
    expect(res.stdout).toBe(
      (isRoot
        ? [
            // Positive control: the jail itself is refused both.
            'jail secret.txt EACCES',
            'jail locked/inner.txt EACCES',
            'tool secret.txt permission_denied permission denied: secret.txt',
            // Under a directory the jail cannot search, an existing and a missing name answer alike.
            'tool locked/inner.txt permission_denied permission denied: locked',
            'tool locked/missing.txt permission_denied permission denied: locked',
            'grep 0',
            '',
          ]
        : [
            // Positive control: the jail itself is refused the file, and reads the open directory.
            'jail secret.txt EACCES',
            'jail locked/inner.txt READ',
            'tool secret.txt permission_denied permission denied: secret.txt',
            'tool locked/inner.txt READ LOCKED-CONTENT',
            'tool locked/missing.txt not_found no such file or directory: locked/missing.txt',
            'grep 1',
            '',
          ]
      ).join('\n'),
    );
  });

  // The directory half unprivileged: the same tools, in-process with the jail identity being our own (as it is
  // in an unprivileged run), on a 0000 directory. Positive control: the kernel refuses that uid the same file.
  it.runIf(!isRoot)('unprivileged: the tools never search a directory the jail uid cannot (in-process: a run would be killed by the quota, which cannot measure it either)', async () => {
    const ctx = context();
    mkdirSync(join(ctx.workspaceReal, 'locked'));
    writeFileSync(join(ctx.workspaceReal, 'locked', 'inner.txt'), 'LOCKED-CONTENT\n');
    // Control before locking: the tools read it, so the refusal below is the mode's doing.
    expect(await readTool(ctx, { path: 'locked/inner.txt' })).toMatchObject({ content: expect.stringContaining('LOCKED-CONTENT') });
    chmodSync(join(ctx.workspaceReal, 'locked'), 0o000);
    try {
      expect(() => readFileSync(join(ctx.workspaceReal, 'locked', 'inner.txt'))).toThrow(expect.objectContaining({ code: 'EACCES' }));
      expect(await errorOf(() => readTool(ctx, { path: 'locked/inner.txt' }))).toBe(JSON.stringify({ code: 'permission_denied', message: 'permission denied: locked' }));
      // An existing and a missing name answer alike.
      expect(await errorOf(() => readTool(ctx, { path: 'locked/missing.txt' }))).toBe(JSON.stringify({ code: 'permission_denied', message: 'permission denied: locked' }));
      const g = (await grepTool(ctx, { pattern: 'LOCKED' })) as { matches: unknown[] };
      expect(g.matches).toHaveLength(0);
    } finally {
      chmodSync(join(ctx.workspaceReal, 'locked'), 0o700);
    }
  });

  it('write refuses ".." and links before creating anything, and never writes outside results/writes', () => {
    const ctx = context();
    const results = join(ctx.writesDir, '..');
    symlinkSync(ctx.outside, join(ctx.writesDir, 'lnk'));
    symlinkSync(join(ctx.outside, 'secret.txt'), join(ctx.writesDir, 'filelink'));
    writeFileSync(join(ctx.writesDir, 'plain'), 'x');
    const budget = ctx.budget.remainingBytes;
    const attempts: [string, string][] = [
      ['../escape.txt', 'path_outside'],
      ['a/../../escape.txt', 'path_outside'],
      ['a/b/../../../escape.txt', 'path_outside'],
      ['new/../../escape.txt', 'path_outside'],
      ['lnk/pwned.txt', 'not_found'],
      ['lnk/deep/pwned.txt', 'not_found'],
      ['plain/under/file.txt', 'path_outside'],
      ['filelink', 'not_found'],
    ];
    for (const [path, code] of attempts) {
      expect(() => writeTool(ctx, { path, content: 'pwned' }), path).toThrow(expect.objectContaining({ code }));
    }
    // Nothing was created anywhere: not beside writes/, not through the link, not the first directories of a refused path.
    expect(readdirSync(results).sort()).toEqual(['writes']);
    expect(readdirSync(ctx.outside)).toEqual(['secret.txt']);
    expect(readdirSync(ctx.writesDir).sort()).toEqual(['filelink', 'lnk', 'plain']);
    // Refused before anything was charged, too.
    expect(ctx.budget.remainingBytes).toBe(budget);
    expect(readFileSync(join(ctx.outside, 'secret.txt'), 'utf8')).toBe('TOP-SECRET-HOST-FILE\n');
    // Positive control: a plain write in the same area works.
    expect(writeTool(ctx, { path: 'ok/file.txt', content: 'fine' })).toEqual({ path: 'results/writes/ok/file.txt', bytes: 4 });
  });

  it('empty writes cannot mint directories: depth is capped and every entry is charged to the budget', () => {
    const ctx = context();
    const deep = `${Array.from({ length: 500 }, (_, i) => `d${i}`).join('/')}/f`;
    expect(() => writeTool(ctx, { path: deep, content: '' })).toThrow(expect.objectContaining({ code: 'too_deep' }));
    expect(readdirSync(ctx.writesDir)).toEqual([]);
    // 31 directories + 1 file per write, distinct each time, with no content at all.
    let written = 0;
    let refused: unknown;
    for (let i = 0; i < 1000 && !refused; i++) {
      try {
        writeTool(ctx, { path: `${Array.from({ length: 31 }, (_, j) => `w${i}-${j}`).join('/')}/empty`, content: '' });
        written++;
      } catch (err) {
        refused = err;
      }
    }
    // Positive control: the writes did create directory chains until the 1 MiB budget ran out.
    expect(written).toBeGreaterThan(0);
    expect(refused).toMatchObject({ code: 'quota_exceeded' });
    const count = (dir: string): number => readdirSync(dir, { withFileTypes: true }).reduce((n, e) => n + 1 + (e.isDirectory() ? count(join(dir, e.name)) : 0), 0);
    expect(count(ctx.writesDir)).toBeLessThanOrEqual((1024 * 1024) / 4096);
  });

  it('reads of limit 1 on an 8 MiB file, 360 pipelined on three connections, cannot starve the deadline', () => {
    const h = makeHome();
    const big = Buffer.alloc(8 * 1024 * 1024, 'abcdefghijklmnopqrstuvwxyz0123456789\n');
    writeFileSync(join(h.workspace(), 'big.txt'), big);
    // Three connections of 120 pipelined reads each, then a steady trickle: far more work than the deadline allows.
    const script = `import net from 'node:net';
const frame = (id, args) => JSON.stringify({ id, bearer: process.env.COMIS_CAP_LEASE, method: 'tool.invoke', params: { tool: 'read', args } }) + '\\n';
const conns = [0, 1, 2].map(() => net.createConnection(process.env.COMIS_ORCH_SOCKET));
let connected = 0;
for (const s of conns) {
  s.on('data', () => undefined);
  s.on('error', () => undefined);
  s.on('connect', () => {
    for (let i = 0; i < 120; i++) s.write(frame(i, i % 2 ? { path: 'big.txt', limit: 1 } : { path: 'big.txt', offset: 100000, limit: 1 }));
    if (++connected === conns.length) console.log('SENT');
  });
}
setInterval(() => conns[0].write(frame('x', { path: 'big.txt', limit: 1 })), 5);`;
    const res = h.run(['orchestrate', h.script('starve.mjs', script), '--timeout-ms', '2000', '--json']);
    const body = parseJson(res.stdout);
    // Positive control: the script sent its flood (its stdout shows it) before the deadline.
    expect(body.result.stdout).toContain('SENT');
    expect(body.result.failureClass).toBe('timeout');
    // A loose bound on purpose: 10x the timeout is what "the deadline held" means here (the old code took ~18x).
    expect(body.result.durationMs).toBeLessThan(20_000);
  });
});
