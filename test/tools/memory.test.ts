/**
 * memory_search / memory_get daemon-side, on real temp trees and a real
 * SQLite store (FTS5): ranking, line numbers, incremental refresh by mtime,
 * the per-call bounds, deletion, and confinement basics (the attack battery
 * is test/security/memory-confinement.test.ts).
 */
import { mkdirSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { openMemoryIndex } from '../../src/lib/orchestrate/memory-index.js';
import { openStore } from '../../src/lib/store/store.js';
import { chunkMarkdown, ftsQuery, queryTerms } from '../../src/lib/tools/memory-chunks.js';
import { MEMORY_BOUNDS, memoryGetTool, memorySearchTool } from '../../src/lib/tools/memory.js';
import { tempDir } from '../helpers/temp.js';
import { toolContext } from '../helpers/tool-context.js';

function setup(): { ctx: ReturnType<typeof toolContext>; home: string; mem: string } {
  const ctx = toolContext(64 * 1024 * 1024);
  const mem = join(ctx.workspaceReal, 'memory');
  mkdirSync(mem);
  return { ctx, home: tempDir('comis-home-'), mem };
}

/** The store's memory index, as orchestrate gives it to the tool. */
const indexAt = (home: string) => () => openMemoryIndex(home);

type Result = { matches: { path: string; line: number; snippet: string; score: number }[]; indexed: number; pending: number };

describe('memory_search', () => {
  it('ranks chunks by BM25 and points at the best line; stems (runbooks finds runbook)', async () => {
    const { ctx, home, mem } = setup();
    mkdirSync(join(mem, 'ops'));
    writeFileSync(join(mem, 'ops', 'deploy.md'), '# Deploy\n\nintro line\n\nThe deployment runbook lives here.\nStep one: page the on-call.\n');
    writeFileSync(join(mem, 'notes.md'), '# Notes\n\nA runbook is mentioned once.\n');
    writeFileSync(join(mem, 'other.txt'), 'deployment runbook, but not Markdown\n');
    const r = (await memorySearchTool(ctx, indexAt(home), { query: 'deployment runbooks' })) as Result;
    expect(r.indexed).toBe(2);
    expect(r.pending).toBe(0);
    expect(r.matches.map((m) => [m.path, m.line, m.snippet])).toEqual([
      ['memory/ops/deploy.md', 5, 'The deployment runbook lives here.'],
      ['memory/notes.md', 3, 'A runbook is mentioned once.'],
    ]);
    expect(r.matches[0]!.score).toBeGreaterThan(r.matches[1]!.score);
  });

  it('refreshes incrementally by mtime: unchanged files are not re-read, a changed one is, a removed one is forgotten', async () => {
    const { ctx, home, mem } = setup();
    writeFileSync(join(mem, 'a.md'), 'alpha apples\n');
    writeFileSync(join(mem, 'b.md'), 'beta bananas\n');
    expect(((await memorySearchTool(ctx, indexAt(home), { query: 'apples' })) as Result).indexed).toBe(2);
    const again = (await memorySearchTool(ctx, indexAt(home), { query: 'apples' })) as Result;
    expect(again.indexed).toBe(0);
    expect(again.matches).toHaveLength(1);
    writeFileSync(join(mem, 'a.md'), 'alpha cherries\n');
    utimesSync(join(mem, 'a.md'), new Date(), new Date(Date.now() + 5000));
    const changed = (await memorySearchTool(ctx, indexAt(home), { query: 'apples cherries' })) as Result;
    expect(changed.indexed).toBe(1);
    expect(changed.matches.map((m) => m.snippet)).toEqual(['alpha cherries']);
    rmSync(join(mem, 'b.md'));
    expect(((await memorySearchTool(ctx, indexAt(home), { query: 'bananas' })) as Result).matches).toEqual([]);
    const s = openStore({ home });
    try {
      expect(s.db.prepare('SELECT path FROM memory_files').all()).toEqual([{ path: 'memory/a.md' }]);
      // Contentless: the store holds the index and byte ranges, never the note text.
      expect(JSON.stringify(s.db.prepare('SELECT * FROM memory_fts').all())).not.toContain('cherries');
      expect(JSON.stringify(s.db.prepare('SELECT * FROM memory_chunks').all())).not.toContain('cherries');
    } finally {
      s.close();
    }
  });

  it(`indexes at most ${MEMORY_BOUNDS.filesPerCall} files per call and reports the rest as pending`, async () => {
    const { ctx, home, mem } = setup();
    const n = MEMORY_BOUNDS.filesPerCall + 6;
    for (let i = 0; i < n; i++) writeFileSync(join(mem, `n${String(i).padStart(3, '0')}.md`), `note ${i} zebra\n`);
    const first = (await memorySearchTool(ctx, indexAt(home), { query: 'zebra', limit: 50 })) as Result;
    expect([first.indexed, first.pending]).toEqual([MEMORY_BOUNDS.filesPerCall, 6]);
    expect(first.matches).toHaveLength(50);
    const second = (await memorySearchTool(ctx, indexAt(home), { query: 'zebra' })) as Result;
    expect([second.indexed, second.pending]).toEqual([6, 0]);
  });

  it('a file over 1 MiB is indexed by its head (whole lines), and the call stays bounded', async () => {
    const { ctx, home, mem } = setup();
    const line = `${'filler '.repeat(20)}\n`;
    writeFileSync(join(mem, 'big.md'), `${'early marker\n'}${line.repeat(Math.ceil((2 * MEMORY_BOUNDS.fileBytes) / line.length))}late marker\n`);
    const r = (await memorySearchTool(ctx, indexAt(home), { query: 'marker' })) as Result;
    expect(r.matches.map((m) => m.snippet)).toEqual(['early marker']);
  });

  it('skips links: a symlinked file or directory under memory/ is neither indexed nor followed', async () => {
    const { ctx, home, mem } = setup();
    writeFileSync(join(ctx.outside, 'leak.md'), 'outsider secret words\n');
    symlinkSync(join(ctx.outside, 'leak.md'), join(mem, 'leak.md'));
    symlinkSync(ctx.outside, join(mem, 'dir'));
    writeFileSync(join(mem, 'own.md'), 'own secret words\n');
    const r = (await memorySearchTool(ctx, indexAt(home), { query: 'outsider secret' })) as Result;
    expect(r.matches.map((m) => m.path)).toEqual(['memory/own.md']);
  });

  it('no memory/ directory: no matches, no error; a query with no words is refused', async () => {
    const ctx = toolContext(1024 * 1024);
    const home = tempDir('comis-home-');
    expect(await memorySearchTool(ctx, indexAt(home), { query: 'x' })).toEqual({ matches: [], indexed: 0, pending: 0 });
    await expect(memorySearchTool(ctx, indexAt(home), { query: '*** ???' })).rejects.toMatchObject({ code: 'invalid_params' });
  });

  it('FTS5 syntax in a query is plain words: no column filter, NEAR or prefix', () => {
    expect(queryTerms('text:secret NEAR(a b) run*  Runbook')).toEqual(['text', 'secret', 'near', 'a', 'b', 'run', 'runbook']);
    expect(ftsQuery(['a', 'b'])).toBe('"a" OR "b"');
  });

  it('chunks follow headings and paragraphs, with exact byte ranges and 1-based lines', () => {
    const text = Buffer.from('# A\none\n\n# B\ntwo\nthree\n');
    const chunks = chunkMarkdown(text);
    expect(chunks.map((c) => [c.line, c.text])).toEqual([
      [1, '# A\none\n\n'],
      [4, '# B\ntwo\nthree\n'],
    ]);
    for (const c of chunks) expect(text.subarray(c.byteStart, c.byteStart + c.byteLen).toString()).toBe(c.text);
  });
});

describe('memory_get', () => {
  it('reads a Markdown file under memory/ like read, and nothing else', async () => {
    const { ctx, mem } = setup();
    writeFileSync(join(mem, 'a.md'), 'line 1\nline 2\n');
    writeFileSync(join(ctx.workspaceReal, 'top.md'), 'not memory\n');
    writeFileSync(join(mem, 'x.txt'), 'not markdown\n');
    expect(await memoryGetTool(ctx, { path: 'memory/a.md' })).toMatchObject({ path: 'memory/a.md', content: 'line 1\nline 2', totalLines: 2 });
    expect(await memoryGetTool(ctx, { path: '/workspace/memory/a.md' })).toMatchObject({ path: 'memory/a.md' });
    await expect(memoryGetTool(ctx, { path: 'top.md' })).rejects.toMatchObject({ code: 'path_outside' });
    await expect(memoryGetTool(ctx, { path: 'memory/../top.md' })).rejects.toMatchObject({ code: 'path_outside' });
    await expect(memoryGetTool(ctx, { path: 'memory/x.txt' })).rejects.toMatchObject({ code: 'invalid_path' });
    symlinkSync(join(ctx.outside, 'secret.txt'), join(mem, 'link.md'));
    await expect(memoryGetTool(ctx, { path: 'memory/link.md' })).rejects.toMatchObject({ code: 'not_found' });
  });
});
