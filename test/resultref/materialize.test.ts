import { readdirSync, readFileSync, realpathSync, writeFileSync, mkdirSync, openSync, closeSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { createResultStore, detectKind, estimateSavings, liveRef, materializeFd, materializeFdAsync, maybeMaterializeValue, previewOf } from '../../src/lib/resultref/materialize.js';
import { readTool } from '../../src/lib/tools/read.js';
import { grepTool } from '../../src/lib/tools/grep.js';
import { tempDir } from '../helpers/temp.js';

function store(opts: { maxFileBytes?: number; remaining?: number; ttlMs?: number } = {}) {
  const dir = join(realpathSync(tempDir()), 'results');
  mkdirSync(dir);
  return createResultStore(dir, { budget: { remainingBytes: opts.remaining ?? 64 * 1024 * 1024 }, maxFileBytes: opts.maxFileBytes, ttlMs: opts.ttlMs });
}

describe('ResultRef materialization', () => {
  it('keeps small values inline and materializes big ones with kind, rows, schema and a bounded preview', () => {
    const s = store();
    expect(maybeMaterializeValue(s, { a: 1 }, () => ({ text: 'small', nameHint: '' }))).toEqual({ a: 1 });
    const jsonl = Array.from({ length: 2000 }, (_, i) => JSON.stringify({ id: i, price: i % 1000, name: `n${i}` })).join('\n') + '\n';
    const ref = maybeMaterializeValue(s, null, () => ({ text: jsonl, nameHint: 'x' })) as unknown as Record<string, unknown>;
    expect(ref).toMatchObject({ type: 'ResultRef', ref: 'results/ref-1.jsonl', kind: 'jsonl', bytes: Buffer.byteLength(jsonl), rows: 2000, schema: ['id', 'price', 'name'] });
    expect(Buffer.byteLength(ref.preview as string)).toBeLessThanOrEqual(2048);
    expect(readFileSync(join(s.dir, 'ref-1.jsonl'), 'utf8')).toBe(jsonl);
    expect(s.materialized).toEqual({ count: 1, bytes: Buffer.byteLength(jsonl) });
  });

  it('refuses a result over the per-file cap or the run budget, leaving no partial file', () => {
    const s = store({ maxFileBytes: 20_000 });
    expect(() => maybeMaterializeValue(s, null, () => ({ text: 'x'.repeat(30_000), nameHint: '' }))).toThrow(expect.objectContaining({ code: 'result_too_large' }));
    const t = store({ remaining: 18_000 });
    expect(() => maybeMaterializeValue(t, null, () => ({ text: 'y'.repeat(19_000), nameHint: '' }))).toThrow(/remaining results budget/);
    expect(readdirSync(s.dir)).toEqual([]);
    expect(readdirSync(t.dir)).toEqual([]);
    expect(s.materialized.count + t.materialized.count).toBe(0);
  });

  it('expires refs after the TTL and refuses unknown ones', async () => {
    const s = store({ ttlMs: 30 });
    const ref = maybeMaterializeValue(s, null, () => ({ text: 'z'.repeat(16_000), nameHint: '' })) as { ref: string };
    expect(liveRef(s, ref.ref).ref).toBe(ref.ref);
    await new Promise((r) => setTimeout(r, 40));
    expect(() => liveRef(s, ref.ref)).toThrow(expect.objectContaining({ code: 'ref_expired' }));
    expect(() => liveRef(s, '../etc/passwd')).toThrow(expect.objectContaining({ code: 'unknown_ref' }));
  });

  it('streams a file descriptor in chunks', () => {
    const s = store();
    const src = join(tempDir(), 'big.csv');
    writeFileSync(src, 'id,price\n' + Array.from({ length: 50_000 }, (_, i) => `${i},${i % 100}`).join('\n') + '\n');
    const fd = openSync(src, 'r');
    const ref = materializeFd(s, fd, 'big.csv');
    closeSync(fd);
    expect(ref).toMatchObject({ kind: 'csv', rows: 50_000, schema: ['id', 'price'] });
  });

  it('copies a file asynchronously; refuses one over the caps before copying, and concurrent copies cannot overrun the budget', async () => {
    const src = join(tempDir(), 'data.txt');
    writeFileSync(src, 'line\n'.repeat(20_000)); // 100,000 bytes
    const fd = openSync(src, 'r');
    try {
      const s = store({ remaining: 1_000_000 });
      expect(await materializeFdAsync(s, fd, 100_000, 'data.txt')).toMatchObject({ type: 'ResultRef', kind: 'text', bytes: 100_000 });
      // The payload and one entry are charged.
      expect(s.budget.remainingBytes).toBe(1_000_000 - 100_000 - 4096);
      const small = store({ remaining: 250_000 });
      const results = await Promise.allSettled([0, 1, 2].map(() => materializeFdAsync(small, fd, 100_000, 'data.txt')));
      expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'fulfilled', 'rejected']);
      expect(small.budget.remainingBytes).toBeGreaterThanOrEqual(0);
      const tiny = store({ remaining: 50_000 });
      await expect(materializeFdAsync(tiny, fd, 100_000, 'data.txt')).rejects.toMatchObject({ code: 'result_too_large' });
      expect(readdirSync(tiny.dir)).toEqual([]);
      expect(tiny.budget.remainingBytes).toBe(50_000);
    } finally {
      closeSync(fd);
    }
  });

  it('detects kinds and cuts previews on a UTF-8 boundary', () => {
    expect(detectKind('{"a":1}\n{"a":2}\n')).toBe('jsonl');
    expect(detectKind('{\n  "a": 1\n}')).toBe('json');
    expect(detectKind('[1,2,3]')).toBe('json');
    expect(detectKind('a,b,c\n1,2,3\n4,5,6\n')).toBe('csv');
    expect(detectKind('hello world\nplain text')).toBe('text');
    // Starting with a bracket is not enough: log lines and templated text are text.
    expect(detectKind('[INFO] server started\n[WARN] disk at 91%\n')).toBe('text');
    expect(detectKind('[2026-12-01 10:00:00] boot\n')).toBe('text');
    expect(detectKind('{user} logged in\n{user} logged out\n')).toBe('text');
    expect(detectKind('[1, 2] trailing words')).toBe('text');
    // A head cut anywhere inside a document is still JSON; several lines of documents are JSONL.
    expect(detectKind('[{"name": "a\\"b", "n": -1.5e3, "ok": true, "x": nu')).toBe('json');
    expect(detectKind('{"a": [1, {"b": null}], "c": "\\u00e9')).toBe('json');
    expect(detectKind('[1,2]\n[3,4]\n')).toBe('jsonl');
    expect(detectKind('{"a":1}\n{"a":')).toBe('jsonl');
    expect(detectKind('{"a" 1}')).toBe('text');
    const p = previewOf(Buffer.from('é'.repeat(2000)), 2047);
    expect(p).toBe('é'.repeat(1023));
  });

  it('estimates savings as (materialized bytes - stdout chars) / 4, clamped at 0', () => {
    expect(estimateSavings(0, 10)).toBeUndefined();
    expect(estimateSavings(122_880, 50)).toEqual({ estSavedTokens: 30_707, savedRatio: 1 });
    expect(estimateSavings(100, 1000)).toEqual({ estSavedTokens: 0, savedRatio: 0 });
  });

  it('read and grep return ResultRefs over the threshold', async () => {
    const ws = realpathSync(tempDir());
    writeFileSync(join(ws, 'data.jsonl'), Array.from({ length: 1000 }, (_, i) => JSON.stringify({ id: i, note: 'TODO item' })).join('\n') + '\n');
    const s = store();
    const ctx = { runId: 'r', agentId: 'a', workspaceReal: ws, jail: { uid: process.getuid!(), gid: process.getgid!() }, jailWorkspace: '/workspace', writesDir: join(ws, 'w'), maxReadBytes: 1 << 20, budget: s.budget, results: s };
    expect(await readTool(ctx, { path: 'data.jsonl' })).toMatchObject({ type: 'ResultRef', kind: 'jsonl', rows: 1000 });
    expect(await readTool(ctx, { path: 'data.jsonl', limit: 2 })).toMatchObject({ lines: 2 });
    expect(await grepTool(ctx, { pattern: 'TODO', maxMatches: 5000 })).toMatchObject({ type: 'ResultRef', kind: 'jsonl', rows: 1000 });
  });
});
