import { execFileSync, spawn } from 'node:child_process';
import { linkSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { CapCallError } from '../../src/lib/capsocket/protocol.js';
import type { ToolContext } from '../../src/lib/tools/context.js';
import { globToRegExpSource, grepTool, grepWorkerPeak, MAX_GREP_WORKERS } from '../../src/lib/tools/grep.js';
import { readTool } from '../../src/lib/tools/read.js';
import { writeTool } from '../../src/lib/tools/write.js';
import { splitConfined } from '../../src/lib/confine/index.js';
import { toolContext } from '../helpers/tool-context.js';

const context = (): ToolContext & { outside: string } => toolContext(1000);

describe('read', () => {
  it('reads a line slice of a workspace file', async () => {
    const ctx = context();
    writeFileSync(join(ctx.workspaceReal, 'notes.md'), 'a\nb\nc\nd\n');
    expect(await readTool(ctx, { path: 'notes.md', offset: 1, limit: 2 })).toEqual({ path: 'notes.md', content: 'b\nc', offset: 1, lines: 2, totalLines: 4, bytes: 8, truncated: true });
    expect(await readTool(ctx, { path: '/workspace/notes.md' })).toMatchObject({ content: 'a\nb\nc\nd', truncated: false, totalLines: 4 });
    expect(await readTool(ctx, { path: 'notes.md', offset: 3 })).toMatchObject({ content: 'd', lines: 1, truncated: false });
    expect(await readTool(ctx, { path: 'notes.md', offset: 9 })).toMatchObject({ content: '', lines: 0, totalLines: 4, truncated: false });
  });

  it('counts lines like split("\\n") does: no final newline, empty lines, empty file', async () => {
    const ctx = context();
    const cases: [string, number][] = [
      ['', 0],
      ['x', 1],
      ['x\n', 1],
      ['\n', 1],
      ['a\n\nb', 3],
      ['a\n\n', 2],
    ];
    for (const [text, total] of cases) {
      writeFileSync(join(ctx.workspaceReal, 'f'), text);
      const r = (await readTool(ctx, { path: 'f' })) as { content: string; totalLines: number };
      expect(r.totalLines, JSON.stringify(text)).toBe(total);
      expect(r.content, JSON.stringify(text)).toBe(text.endsWith('\n') ? text.slice(0, -1) : text);
    }
  });

  it('stops reading a big file once it has its lines, across chunk boundaries', async () => {
    const ctx = context();
    ctx.maxReadBytes = 8 * 1024 * 1024;
    // 3 MiB of 100-byte lines: over the 1 MiB bound, so totalLines is not counted.
    const line = (i: number): string => `${String(i).padStart(8, '0')}${'x'.repeat(91)}`;
    writeFileSync(join(ctx.workspaceReal, 'big.txt'), Array.from({ length: 30_000 }, (_, i) => line(i)).join('\n') + '\n');
    const r = (await readTool(ctx, { path: 'big.txt', offset: 655, limit: 3 })) as Record<string, unknown>;
    expect(r).toEqual({ path: 'big.txt', content: [line(655), line(656), line(657)].join('\n'), offset: 655, lines: 3, bytes: 3_000_000, truncated: true });
    const last = (await readTool(ctx, { path: 'big.txt', offset: 29_999, limit: 5 })) as Record<string, unknown>;
    expect(last).toMatchObject({ content: line(29_999), lines: 1, truncated: false, totalLines: 30_000 });
  });

  it('limit 1 of an 8 MiB file reads one chunk, and 120 of them leave the event loop running', async () => {
    const ctx = context();
    ctx.maxReadBytes = 8 * 1024 * 1024;
    writeFileSync(join(ctx.workspaceReal, 'big.txt'), Buffer.alloc(8 * 1024 * 1024, 'abcdefghijklmnopqrstuvwxyz0123456789\n'));
    // Bytes this process read through syscalls: the kernel's count, not a timer.
    const rchar = (): number => Number(/^rchar: (\d+)$/m.exec(readFileSync('/proc/self/io', 'utf8'))![1]);
    let turns = 0;
    let spinning = true;
    const spin = (): void => {
      turns++;
      if (spinning) setImmediate(spin);
    };
    setImmediate(spin);
    const before = rchar();
    const all = await Promise.all(Array.from({ length: 120 }, () => readTool(ctx, { path: 'big.txt', limit: 1 }) as Promise<{ content: string; truncated: boolean }>));
    const read = rchar() - before;
    spinning = false;
    // Positive control: each call really answered from the big file.
    for (const r of all) expect(r).toMatchObject({ content: 'abcdefghijklmnopqrstuvwxyz0123456789', truncated: true });
    // 120 x 64 KiB is 7.5 MiB; reading the files whole would be 960 MiB.
    expect(read).toBeLessThan(120 * 1024 * 1024);
    // The loop got turns while the reads were in flight (a synchronous read would leave it none).
    expect(turns).toBeGreaterThan(1);
  });

  it('refuses .. and absolute paths outside; a symlink is answered like a missing path', async () => {
    const ctx = context();
    symlinkSync(join(ctx.outside, 'secret.txt'), join(ctx.workspaceReal, 'link.txt'));
    symlinkSync(ctx.outside, join(ctx.workspaceReal, 'dirlink'));
    writeFileSync(join(ctx.workspaceReal, 'inside.txt'), 'in\n');
    symlinkSync('inside.txt', join(ctx.workspaceReal, 'inlink.txt'));
    await expect(readTool(ctx, { path: '../outside/secret.txt' })).rejects.toMatchObject({ code: 'path_outside' });
    await expect(readTool(ctx, { path: join(ctx.outside, 'secret.txt') })).rejects.toMatchObject({ code: 'path_outside' });
    await expect(readTool(ctx, { path: '/etc/passwd' })).rejects.toMatchObject({ code: 'path_outside' });
    await expect(readTool(ctx, { path: 'link.txt' })).rejects.toMatchObject({ code: 'not_found', message: 'no such file or directory: link.txt' });
    await expect(readTool(ctx, { path: 'dirlink/secret.txt' })).rejects.toMatchObject({ code: 'not_found', message: 'no such file or directory: dirlink' });
    // Even a link that stays inside is not followed: one rule, no oracle.
    await expect(readTool(ctx, { path: 'inlink.txt' })).rejects.toMatchObject({ code: 'not_found' });
    await expect(readTool(ctx, { path: 'inside.txt/x' })).rejects.toMatchObject({ code: 'not_found', message: 'no such file or directory: inside.txt/x' });
  });

  it('does not hang on a FIFO and refuses non-files', async () => {
    const ctx = context();
    execFileSync('mkfifo', [join(ctx.workspaceReal, 'fifo')]);
    mkdirSync(join(ctx.workspaceReal, 'dir'));
    await expect(readTool(ctx, { path: 'fifo' })).rejects.toMatchObject({ code: 'not_a_file' });
    await expect(readTool(ctx, { path: 'dir' })).rejects.toMatchObject({ code: 'not_a_file' });
    await expect(readTool(ctx, { path: 'missing' })).rejects.toMatchObject({ code: 'not_found' });
  });

  it('never returns an outside file while a racer swaps a directory for a symlink', async () => {
    const ctx = context();
    const dir = join(ctx.workspaceReal, 'd');
    mkdirSync(dir);
    writeFileSync(join(dir, 'secret.txt'), 'inside\n');
    // A separate process flips d between a real directory and a symlink to the outside, as a jailed script would.
    const racer = spawn(process.execPath, [
      '-e',
      `
      const fs = require('fs');
      const ws = ${JSON.stringify(ctx.workspaceReal)}, out = ${JSON.stringify(ctx.outside)};
      const end = Date.now() + 3000;
      while (Date.now() < end) {
        try { fs.renameSync(ws + '/d', ws + '/d.real'); fs.symlinkSync(out, ws + '/d'); } catch {}
        try { fs.unlinkSync(ws + '/d'); fs.renameSync(ws + '/d.real', ws + '/d'); } catch {}
      }`,
    ]);
    let inside = 0;
    let refused = 0;
    const end = Date.now() + 2500;
    while (Date.now() < end) {
      try {
        const r = (await readTool(ctx, { path: 'd/secret.txt' })) as { content: string };
        expect(r.content).not.toContain('TOP-SECRET');
        inside++;
      } catch (err) {
        expect((err as { code: string }).code).toBe('not_found');
        refused++;
      }
      await new Promise((r) => setImmediate(r));
    }
    racer.kill();
    expect(inside + refused).toBeGreaterThan(50);
  });
});

describe('confine: script paths to components', () => {
  it('is lexical: jail-absolute paths, "." and inner ".." fold; escapes, NUL and depth are refused', () => {
    expect(splitConfined('a/./b//c', '/workspace')).toEqual(['a', 'b', 'c']);
    expect(splitConfined('/workspace/a/b', '/workspace')).toEqual(['a', 'b']);
    expect(splitConfined('/workspace', '/workspace')).toEqual([]);
    expect(splitConfined('a/b/../c', '/workspace')).toEqual(['a', 'c']);
    expect(() => splitConfined('/workspace/../etc', '/workspace')).toThrow(expect.objectContaining({ code: 'path_outside' }));
    expect(() => splitConfined('/workspacex/a', '/workspace')).toThrow(expect.objectContaining({ code: 'path_outside' }));
    expect(() => splitConfined('a/../../b', '/workspace')).toThrow(expect.objectContaining({ code: 'path_outside' }));
    expect(() => splitConfined('a\0b', '/workspace')).toThrow(expect.objectContaining({ code: 'invalid_path' }));
    expect(() => splitConfined(Array.from({ length: 33 }, () => 'd').join('/'), '/workspace')).toThrow(expect.objectContaining({ code: 'too_deep' }));
    expect(splitConfined(Array.from({ length: 32 }, () => 'd').join('/'), '/workspace')).toHaveLength(32);
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
    await expect(grepTool(ctx, { pattern: 'x', path: 'out' })).rejects.toMatchObject({ code: 'not_found', message: 'no such file or directory: out' });
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

  it('runs at most MAX_GREP_WORKERS workers at once, however many greps are asked for together', async () => {
    const ctx = context();
    for (let i = 0; i < 20; i++) writeFileSync(join(ctx.workspaceReal, `f${i}.txt`), `needle ${i}\n`.repeat(200));
    const all = await Promise.all(Array.from({ length: 12 }, () => grepTool(ctx, { pattern: 'needle' }) as Promise<{ matches: unknown[] }>));
    // Positive control: every grep really searched.
    for (const r of all) expect(r.matches).toHaveLength(500);
    expect(grepWorkerPeak()).toBe(MAX_GREP_WORKERS);
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

  const globMatches = (glob: string, path: string): boolean => new RegExp(globToRegExpSource(glob)).test(path);

  it('globs keep their earlier meaning: * and ? stay in one segment and match dot files, **/ spans zero or more', () => {
    expect(globMatches('*', '.hidden')).toBe(true);
    expect(globMatches('**/*.md', '.git/notes.md')).toBe(true);
    expect(globMatches('docs/**/*.md', 'docs/a.md')).toBe(true);
    expect(globMatches('docs/**/*.md', 'docs/x/y/a.md')).toBe(true);
    expect(globMatches('a?c', 'abc')).toBe(true);
    expect(globMatches('a?c', 'a/c')).toBe(false);
    expect(globMatches('a*c', 'ab/c')).toBe(false);
    expect(globMatches('a.md', 'axmd')).toBe(false);
    // Characters that mean something to a regex or an extglob stay literal.
    for (const name of ['a(b', 'a)b', 'file (1).md', 'a+b.md', 'a|b.md', 'a$b.md', 'a^b.md', '!x.md']) expect(globMatches(name, name)).toBe(true);
    expect(globMatches('file (1).md', 'file 1.md')).toBe(false);
  });

  it('globs have [...] classes: sets, ranges, negation and POSIX classes, never across a /', () => {
    expect(globMatches('*.[jt]s', 'x.ts')).toBe(true);
    expect(globMatches('*.[jt]s', 'x.js')).toBe(true);
    expect(globMatches('*.[jt]s', 'x.cs')).toBe(false);
    expect(globMatches('[a-c]/x', 'b/x')).toBe(true);
    expect(globMatches('[a-c]/x', 'd/x')).toBe(false);
    expect(globMatches('[!ab].md', 'c.md')).toBe(true);
    expect(globMatches('[!ab].md', 'a.md')).toBe(false);
    expect(globMatches('[^ab].md', 'b.md')).toBe(false);
    expect(globMatches('[!a]', '/')).toBe(false);
    expect(globMatches('[[:digit:]].md', '7.md')).toBe(true);
    expect(globMatches('[[:digit:]].md', 'x.md')).toBe(false);
  });

  it('globs have nested braces and empty alternatives', () => {
    const re = '**/*.{m{d,dx},txt}';
    expect(globMatches(re, 'a/b.md')).toBe(true);
    expect(globMatches(re, 'a/b.mdx')).toBe(true);
    expect(globMatches(re, 'b.txt')).toBe(true);
    expect(globMatches(re, 'a/b.m')).toBe(false);
    expect(globMatches(re, 'a/b.mdxx')).toBe(false);
    expect(globMatches('{src,test/{unit,e2e}}/*.ts', 'test/e2e/a.ts')).toBe(true);
    expect(globMatches('{src,test/{unit,e2e}}/*.ts', 'test/other/a.ts')).toBe(false);
    expect(globMatches('a{,.b}', 'a')).toBe(true);
    expect(globMatches('a{,.b}', 'a.b')).toBe(true);
  });

  it('refuses an unbalanced glob clearly', async () => {
    for (const glob of ['{a,b', '*.[jt', 'a]b']) {
      expect(() => globToRegExpSource(glob), glob).toThrow(CapCallError);
      expect(() => globToRegExpSource(glob), glob).toThrow(/invalid glob/);
    }
    await expect(grepTool(context(), { pattern: 'x', glob: '{a,b' })).rejects.toMatchObject({ code: 'invalid_params' });
  });

  it('greps only the files a class glob selects', async () => {
    const ctx = context();
    for (const name of ['a.ts', 'b.js', 'c.cs']) writeFileSync(join(ctx.workspaceReal, name), `TODO ${name}\n`);
    const found = (await grepTool(ctx, { pattern: 'TODO', glob: '*.[jt]s' })) as { matches: { path: string }[] };
    expect(found.matches.map((m) => m.path).sort()).toEqual(['a.ts', 'b.js']);
  });
});

describe('write', () => {
  it('writes under results/writes and counts against the run budget', () => {
    const ctx = context();
    ctx.budget.remainingBytes = 10_000;
    // Two new entries (notes/ and out.md) at one block each, plus the content.
    expect(writeTool(ctx, { path: 'notes/out.md', content: 'hello' })).toEqual({ path: 'results/writes/notes/out.md', bytes: 5 });
    expect(readFileSync(join(ctx.writesDir, 'notes', 'out.md'), 'utf8')).toBe('hello');
    expect(ctx.budget.remainingBytes).toBe(10_000 - 5 - 2 * 4096);
    // Overwriting creates no entry: only the content is charged.
    expect(writeTool(ctx, { path: 'notes/out.md', content: 'hi' })).toEqual({ path: 'results/writes/notes/out.md', bytes: 2 });
    expect(readFileSync(join(ctx.writesDir, 'notes', 'out.md'), 'utf8')).toBe('hi');
    expect(ctx.budget.remainingBytes).toBe(10_000 - 7 - 2 * 4096);
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
