import { execFileSync, spawn } from 'node:child_process';
import { linkSync, mkdirSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import type { ToolContext } from '../../src/lib/tools/context.js';
import { globToRegExpSource, grepTool } from '../../src/lib/tools/grep.js';
import { readTool } from '../../src/lib/tools/read.js';
import { writeTool } from '../../src/lib/tools/write.js';
import { tempDir } from '../helpers/temp.js';

function context(): ToolContext & { outside: string } {
  const base = realpathSync(tempDir());
  const ws = join(base, 'ws');
  const writes = join(base, 'run', 'results', 'writes');
  const outside = join(base, 'outside');
  mkdirSync(ws);
  mkdirSync(writes, { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(outside, 'secret.txt'), 'TOP-SECRET-HOST-FILE\n');
  return { runId: 'r', agentId: 'a', workspaceReal: ws, jailWorkspace: '/workspace', writesDir: writes, maxReadBytes: 1024 * 1024, budget: { remainingBytes: 1000 }, outside };
}

describe('read', () => {
  it('reads a line slice of a workspace file', () => {
    const ctx = context();
    writeFileSync(join(ctx.workspaceReal, 'notes.md'), 'a\nb\nc\nd\n');
    expect(readTool(ctx, { path: 'notes.md', offset: 1, limit: 2 })).toEqual({ path: 'notes.md', content: 'b\nc', offset: 1, lines: 2, totalLines: 4, bytes: 8, truncated: true });
    expect(readTool(ctx, { path: '/workspace/notes.md' })).toMatchObject({ content: 'a\nb\nc\nd', truncated: false });
  });

  it('refuses .., absolute paths outside, and symlinks that lead outside', () => {
    const ctx = context();
    symlinkSync(join(ctx.outside, 'secret.txt'), join(ctx.workspaceReal, 'link.txt'));
    symlinkSync(ctx.outside, join(ctx.workspaceReal, 'dirlink'));
    expect(() => readTool(ctx, { path: '../outside/secret.txt' })).toThrow(expect.objectContaining({ code: 'path_outside' }));
    expect(() => readTool(ctx, { path: join(ctx.outside, 'secret.txt') })).toThrow(expect.objectContaining({ code: 'path_outside' }));
    expect(() => readTool(ctx, { path: '/etc/passwd' })).toThrow(expect.objectContaining({ code: 'path_outside' }));
    expect(() => readTool(ctx, { path: 'link.txt' })).toThrow(expect.objectContaining({ code: 'path_outside' }));
    expect(() => readTool(ctx, { path: 'dirlink/secret.txt' })).toThrow(expect.objectContaining({ code: 'path_outside' }));
  });

  it('does not hang on a FIFO and refuses non-files', () => {
    const ctx = context();
    execFileSync('mkfifo', [join(ctx.workspaceReal, 'fifo')]);
    mkdirSync(join(ctx.workspaceReal, 'dir'));
    expect(() => readTool(ctx, { path: 'fifo' })).toThrow(expect.objectContaining({ code: 'not_a_file' }));
    expect(() => readTool(ctx, { path: 'dir' })).toThrow(expect.objectContaining({ code: 'not_a_file' }));
    expect(() => readTool(ctx, { path: 'missing' })).toThrow(expect.objectContaining({ code: 'not_found' }));
  });

  it('never returns an outside file while a racer swaps a directory for a symlink', async () => {
    const ctx = context();
    const dir = join(ctx.workspaceReal, 'd');
    mkdirSync(dir);
    writeFileSync(join(dir, 'secret.txt'), 'inside\n');
    // A separate process flips d between a real directory and a symlink to the outside, as a jailed script would.
    const racer = spawn(process.execPath, ['-e', `
      const fs = require('fs');
      const ws = ${JSON.stringify(ctx.workspaceReal)}, out = ${JSON.stringify(ctx.outside)};
      const end = Date.now() + 3000;
      while (Date.now() < end) {
        try { fs.renameSync(ws + '/d', ws + '/d.real'); fs.symlinkSync(out, ws + '/d'); } catch {}
        try { fs.unlinkSync(ws + '/d'); fs.renameSync(ws + '/d.real', ws + '/d'); } catch {}
      }`]);
    let inside = 0;
    let refused = 0;
    const end = Date.now() + 2500;
    while (Date.now() < end) {
      try {
        const r = readTool(ctx, { path: 'd/secret.txt' }) as { content: string };
        expect(r.content).not.toContain('TOP-SECRET');
        inside++;
      } catch (err) {
        expect((err as { code: string }).code).toMatch(/path_outside|not_found/);
        refused++;
      }
      await new Promise((r) => setImmediate(r));
    }
    racer.kill();
    expect(inside + refused).toBeGreaterThan(50);
  });
});

describe('grep', () => {
  it('finds matches across files with a glob, in a stable order', async () => {
    const ctx = context();
    mkdirSync(join(ctx.workspaceReal, 'docs'));
    writeFileSync(join(ctx.workspaceReal, 'docs', 'a.md'), 'TODO one\nfine\n');
    writeFileSync(join(ctx.workspaceReal, 'b.txt'), 'todo two\n');
    writeFileSync(join(ctx.workspaceReal, 'c.md'), 'TODO three\n');
    const md = (await grepTool(ctx, { pattern: 'TODO', glob: '**/*.md' })) as { matches: unknown[] };
    expect(md.matches).toEqual([
      { path: 'c.md', line: 1, text: 'TODO three' },
      { path: 'docs/a.md', line: 1, text: 'TODO one' },
    ]);
    const ci = (await grepTool(ctx, { pattern: 'todo', ignoreCase: true, maxMatches: 2 })) as { matches: unknown[]; truncated: boolean };
    expect(ci.matches).toHaveLength(2);
    expect(ci.truncated).toBe(true);
    const lit = (await grepTool(ctx, { pattern: 'TODO.', literal: true })) as { matches: unknown[] };
    expect(lit.matches).toEqual([]);
  });

  it('does not follow symlinks out of the workspace', async () => {
    const ctx = context();
    symlinkSync(ctx.outside, join(ctx.workspaceReal, 'out'));
    symlinkSync(join(ctx.outside, 'secret.txt'), join(ctx.workspaceReal, 's.txt'));
    const res = (await grepTool(ctx, { pattern: 'SECRET' })) as { matches: unknown[] };
    expect(res.matches).toEqual([]);
    await expect(grepTool(ctx, { pattern: 'x', path: '../outside' })).rejects.toMatchObject({ code: 'path_outside' });
  });

  it('stops a catastrophic pattern at its deadline without blocking the runner', async () => {
    const ctx = context();
    writeFileSync(join(ctx.workspaceReal, 'evil.txt'), `${'a'.repeat(40)}!\n`);
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 20);
    await expect(grepTool(ctx, { pattern: '^(a+)+$' }, { timeoutMs: 500, maxFiles: 10, maxFileBytes: 1e6, maxTotalBytes: 1e6 })).rejects.toMatchObject({ code: 'timeout' });
    clearInterval(ticker);
    expect(ticks).toBeGreaterThan(5); // the event loop kept running
  });

  it('reports an invalid regex clearly', async () => {
    await expect(grepTool(context(), { pattern: '(' })).rejects.toMatchObject({ code: 'invalid_params' });
  });

  it('translates globs', () => {
    const re = new RegExp(globToRegExpSource('**/*.{md,txt}'));
    expect(re.test('a.md')).toBe(true);
    expect(re.test('x/y/z.txt')).toBe(true);
    expect(re.test('x/y/z.js')).toBe(false);
    expect(new RegExp(globToRegExpSource('*.md')).test('x/a.md')).toBe(false);
  });
});

describe('write', () => {
  it('writes under results/writes and counts against the run budget', () => {
    const ctx = context();
    expect(writeTool(ctx, { path: 'notes/out.md', content: 'hello' })).toEqual({ path: 'results/writes/notes/out.md', bytes: 5 });
    expect(readFileSync(join(ctx.writesDir, 'notes', 'out.md'), 'utf8')).toBe('hello');
    expect(ctx.budget.remainingBytes).toBe(995);
    expect(() => writeTool(ctx, { path: 'big', content: 'x'.repeat(2000) })).toThrow(expect.objectContaining({ code: 'quota_exceeded' }));
  });

  it('refuses .., absolute paths and the skills/config/memory subtrees', () => {
    const ctx = context();
    for (const path of ['../x', 'a/../../x', '/etc/x', '.', 'skills/evil/SKILL.md', '.learned-skills/x.md', 'memory/m.md', 'config/c.yaml', 'x/Skills/y']) {
      expect(() => writeTool(ctx, { path, content: 'x' }), path).toThrow();
    }
  });

  it('refuses to write through a hard link or symlink planted in the area', () => {
    const ctx = context();
    symlinkSync(join(ctx.outside, 'secret.txt'), join(ctx.writesDir, 'sym'));
    linkSync(join(ctx.outside, 'secret.txt'), join(ctx.writesDir, 'hard'));
    expect(() => writeTool(ctx, { path: 'sym', content: 'pwned' })).toThrow();
    expect(() => writeTool(ctx, { path: 'hard', content: 'pwned' })).toThrow(expect.objectContaining({ code: 'path_outside' }));
    expect(readFileSync(join(ctx.outside, 'secret.txt'), 'utf8')).toBe('TOP-SECRET-HOST-FILE\n');
  });
});
