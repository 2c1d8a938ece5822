/**
 * A streamed CSV's ResultRef is written in place while the body arrives
 * (RefStream.writeQueued) and its last batch at commit: a write that fails
 * at either point is the call's io_error. Nothing is lost silently: no ref is
 * answered, no file (temp or final) is left and the budget is given back.
 */
import { mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it, vi } from 'vitest';

import { createResultStore } from '../../src/lib/resultref/materialize.js';
import { finishPage } from '../../src/lib/tools/web-fetch.js';
import { extractChunks } from '../../src/lib/web/extract.js';
import { PageSink } from '../../src/lib/web/page-sink.js';
import { tempDir } from '../helpers/temp.js';

const disk = vi.hoisted(() => ({ full: false, writes: 0 }));
vi.mock('node:fs', async (importOriginal) => {
  const fs = await importOriginal<typeof import('node:fs')>();
  return {
    ...fs,
    writevSync: (...args: Parameters<typeof fs.writevSync>) => {
      disk.writes++;
      if (disk.full) throw Object.assign(new Error('no space left on device'), { code: 'ENOSPC' });
      return fs.writevSync(...args);
    },
  };
});

const URL0 = 'http://127.0.0.1:1/data.csv';

async function streamCsv(bytes: number) {
  const dir = join(tempDir(), 'results');
  mkdirSync(dir, { recursive: true });
  const results = createResultStore(dir, { budget: { remainingBytes: 64 * 1024 * 1024 } });
  const before = results.budget.remainingBytes;
  const body = Buffer.from('1,item,note\n'.repeat(Math.ceil(bytes / 12)).slice(0, bytes));
  const sink = new PageSink(results, 50_000);
  const push = sink.open('text/csv');
  disk.writes = 0;
  for (let off = 0; off < body.length; off += 65_536) push(body.subarray(off, off + 65_536));
  const inPlace = disk.writes;
  const page = { url: URL0, finalUrl: URL0, status: 200, contentType: 'text/csv', bytes: body.length, truncated: false };
  try {
    await finishPage(results, sink, page, 50_000, extractChunks).catch(async (err: unknown) => {
      await sink.abort();
      throw err;
    });
    return { inPlace, error: undefined, left: readdirSync(dir), budget: results.budget.remainingBytes, before };
  } catch (err) {
    return { inPlace, error: err as { code: string; message: string }, left: readdirSync(dir), budget: results.budget.remainingBytes, before };
  }
}

describe('a streamed ResultRef whose write fails', () => {
  it('control: the same bodies stream into their refs', async () => {
    disk.full = false;
    for (const size of [600_000, 100_000]) expect(await streamCsv(size)).toMatchObject({ error: undefined, left: [expect.stringMatching(/^ref-\d+\.csv$/)] });
  });

  it('a batch written in place while the body arrives, or the last one at commit: io_error, no file left, the budget given back', async () => {
    disk.full = true;
    try {
      // 600 KB: batches are written in place while the body arrives; 100 KB: only at commit.
      for (const [size, inPlace] of [
        [600_000, true],
        [100_000, false],
      ] as const) {
        const r = await streamCsv(size);
        expect(r.inPlace > 0, `${size} bytes`).toBe(inPlace);
        expect(r.error, `${size} bytes`).toMatchObject({ code: 'io_error', message: expect.stringContaining('ENOSPC') });
        expect(r.left).toEqual([]);
        expect(r.budget).toBe(r.before);
      }
    } finally {
      disk.full = false;
    }
  });
});
