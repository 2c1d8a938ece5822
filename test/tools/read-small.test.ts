import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { readTool, SYNC_READ_BYTES } from '../../src/lib/tools/read.js';
import { toolContext } from '../helpers/tool-context.js';

/** Lines [offset, offset+limit) the way text.split('\n') counts them (a final newline ends the last line). */
function expected(text: string, offset = 0, limit?: number): { content: string; lines: number; totalLines: number } {
  const all = text === '' ? [] : text.endsWith('\n') ? text.slice(0, -1).split('\n') : text.split('\n');
  const part = all.slice(offset, limit === undefined ? undefined : offset + limit);
  return { content: part.join('\n'), lines: part.length, totalLines: all.length };
}

// Files up to SYNC_READ_BYTES are read synchronously, bigger ones through the thread pool: both give the same answers.
describe('read: the small-file (synchronous) path and the large one agree', () => {
  for (const size of [0, 1, 7, SYNC_READ_BYTES - 1, SYNC_READ_BYTES, SYNC_READ_BYTES + 1, 3 * SYNC_READ_BYTES + 5]) {
    it(`a ${size}-byte file`, async () => {
      const ctx = toolContext(1 << 30);
      let text = '';
      for (let i = 0; text.length < size; i++) text += `line ${i} ${'x'.repeat(i % 37)}\n`;
      text = text.slice(0, size); // may end mid-line: the last line then has no newline
      writeFileSync(join(ctx.workspaceReal, 'f.txt'), text);
      for (const [offset, limit] of [
        [undefined, undefined],
        [0, 1],
        [3, 5],
        [100, 1000],
      ] as const) {
        const got = (await readTool(ctx, { path: 'f.txt', offset, limit })) as { content: string; lines: number; totalLines?: number; bytes: number };
        const want = expected(text, offset ?? 0, limit);
        expect({ content: got.content, lines: got.lines }, `${size} ${offset} ${limit}`).toEqual({ content: want.content, lines: want.lines });
        expect(got.totalLines).toBe(want.totalLines);
        expect(got.bytes).toBe(size);
      }
    });
  }
});

// A whole small file is decoded in one piece, a slice line by line: the same text either way, also
// around multi-byte characters and invalid UTF-8 cut by a newline, and the same read cap.
describe('read: a whole small file and its slice by lines agree', () => {
  const bytes = Buffer.concat([Buffer.from('é\r\n€ \u{1F600}\n'), Buffer.from([0xe2, 0x82, 0x0a, 0xff, 0x0a, 0xf0, 0x9f]), Buffer.from('\nend')]);
  it('on multi-byte and invalid UTF-8 around newlines', async () => {
    const ctx = toolContext(1 << 30);
    for (const text of [bytes, bytes.subarray(0, bytes.length - 3), Buffer.from('\n\n'), Buffer.from('x')]) {
      writeFileSync(join(ctx.workspaceReal, 'u.txt'), text);
      const whole = (await readTool(ctx, { path: 'u.txt' })) as { content: string; lines: number; totalLines: number };
      const sliced = (await readTool(ctx, { path: 'u.txt', offset: 0, limit: 1000 })) as { content: string; lines: number; totalLines: number };
      expect({ content: whole.content, lines: whole.lines, totalLines: whole.totalLines }).toEqual({ content: sliced.content, lines: sliced.lines, totalLines: sliced.totalLines });
    }
  });
  it('on the read cap: a last line without its newline counts one byte for it', async () => {
    const ctx = { ...toolContext(1 << 30), maxReadBytes: 8 };
    writeFileSync(join(ctx.workspaceReal, 'cap.txt'), '1234567\n');
    expect(await readTool(ctx, { path: 'cap.txt' })).toMatchObject({ content: '1234567', lines: 1 });
    writeFileSync(join(ctx.workspaceReal, 'cap.txt'), '12345678');
    await expect(readTool(ctx, { path: 'cap.txt' })).rejects.toMatchObject({ code: 'too_large' });
    await expect(readTool(ctx, { path: 'cap.txt', offset: 0, limit: 10 })).rejects.toMatchObject({ code: 'too_large' });
  });
});

describe('read: a small file costs one read syscall', () => {
  // /proc/thread-self/io counts this thread's read syscalls (syscr); the small path reads on this thread.
  const readSyscalls = (): number => Number(/syscr: (\d+)/.exec(readFileSync('/proc/thread-self/io', 'utf8'))![1]);
  it('a short read is taken as the end of the file (the old loop read again to be told so)', async () => {
    const ctx = toolContext(1 << 30);
    writeFileSync(join(ctx.workspaceReal, 'small.txt'), 'hello\nworld\n');
    await readTool(ctx, { path: 'small.txt' });
    const calls = 50;
    const before = readSyscalls();
    for (let i = 0; i < calls; i++) {
      const got = (await readTool(ctx, { path: 'small.txt' })) as { content: string; totalLines: number };
      expect(got).toMatchObject({ content: 'hello\nworld', totalLines: 2 });
    }
    // Each reading of /proc/thread-self/io is one more read syscall of its own (and may be two).
    expect(readSyscalls() - before).toBeLessThan(calls + 5);
  });
});

describe('read: a small read closes its descriptors before it answers', () => {
  const openFds = (): number => readdirSync('/proc/self/fd').length;
  it('no descriptor of a small read outlives its call, also when calls settle in one turn or are refused', async () => {
    const ctx = toolContext(1 << 30);
    writeFileSync(join(ctx.workspaceReal, 'small.txt'), 'hello\n');
    await readTool(ctx, { path: 'small.txt' });
    const base = openFds();
    // Calls settled in one turn (no macrotask between them), as a burst of frames on the socket is.
    for (let i = 0; i < 500; i++) {
      await readTool(ctx, { path: 'small.txt' });
      expect(openFds()).toBe(base); // the file and its O_PATH handle are both closed
    }
    // A refused read (a missing file) leaves nothing open either.
    await expect(readTool(ctx, { path: 'missing.txt' })).rejects.toThrow();
    expect(openFds()).toBe(base);
  });
});
