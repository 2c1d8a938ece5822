/**
 * The runner's phases alone: the stdout collector (UTF-8 across chunk
 * boundaries, bytes counted against the cap) and the classifier.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { classifyRun } from '../../src/lib/orchestrate/phases/classify.js';
import { StdoutCollector, type RunVerdict } from '../../src/lib/orchestrate/phases/collect.js';
import { tempDir } from '../helpers/temp.js';

describe('the stdout collector', () => {
  it('decodes a character split across chunks and counts bytes, not characters', () => {
    const c = new StdoutCollector(1024);
    const euro = Buffer.from('a€b', 'utf8'); // € is 3 bytes
    expect(c.push(euro.subarray(0, 2))).toBe(true);
    expect(c.push(euro.subarray(2))).toBe(true);
    c.end();
    expect(c.bounded()).toEqual({ text: 'a€b', truncated: false });
    expect(c.bytes).toBe(5);
  });

  it('drops what passes the byte cap and keeps no trailing partial character', () => {
    const c = new StdoutCollector(4);
    expect(c.push(Buffer.from('abc'))).toBe(true);
    expect(c.push(Buffer.from('€'))).toBe(false);
    c.end();
    expect(c.bounded().text).toBe('abc');
    expect(c.bytes).toBe(6);
  });

  it('tees every byte to a 0600 file and keeps only head and tail in memory', () => {
    const file = join(tempDir(), 'out.txt');
    const c = new StdoutCollector(10 * 1024 * 1024);
    c.openTee(file);
    const line = 'x'.repeat(999) + '\n';
    for (let i = 0; i < 200; i++) c.push(Buffer.from(line));
    c.end();
    c.close();
    c.close(); // idempotent
    expect(readFileSync(file, 'utf8').length).toBe(200_000);
    const b = c.bounded();
    expect(b.truncated).toBe(true);
    expect(b.text).toMatch(/\[… \d+ characters of stdout omitted by comis …\]/);
    expect(b.text.length).toBeLessThan(31_000);
  });
});

describe('classify', () => {
  const limits = { workspaceMb: 1, workspaceInodes: 2 };
  it('keeps a class comis set itself (timeout) and takes the exit code', () => {
    const v: RunVerdict = { failureClass: 'timeout', exitCode: null, stderr: '' };
    classifyRun({ code: 137, signal: null, killedBy: 'kill', started: true }, 0, v, limits);
    expect(v).toMatchObject({ failureClass: 'timeout', exitCode: 137 });
  });
  it('a quota kill is a non-zero exit that says why; a clean exit has no class', () => {
    const v: RunVerdict = { exitCode: null, stderr: '' };
    classifyRun({ code: 137, signal: null, killedBy: 'quota', started: true }, 0, v, limits);
    expect(v.failureClass).toBe('nonzero_exit');
    expect(v.stderr).toContain('workspaceMb');
    const ok: RunVerdict = { exitCode: null, stderr: '' };
    classifyRun({ code: 0, signal: null, started: true }, 0, ok, limits);
    expect(ok).toEqual({ exitCode: 0, stderr: '' });
  });
  it('a signal death without a code reads as 128+n', () => {
    const v: RunVerdict = { exitCode: null, stderr: '' };
    classifyRun({ code: null, signal: 'SIGKILL', started: false }, 0, v, limits);
    expect(v.exitCode).toBe(137);
  });
});

describe('the durable frame limit', () => {
  it('is the checkpoint bound plus the envelope (phases/durable.ts keeps it as a literal so plain runs never load durable.ts)', async () => {
    const { DURABLE_FRAME_BYTES } = await import('../../src/lib/orchestrate/phases/durable.js');
    const { MAX_CHECKPOINT_BYTES } = await import('../../src/lib/orchestrate/durable.js');
    expect(DURABLE_FRAME_BYTES).toBe(MAX_CHECKPOINT_BYTES + 64 * 1024);
  });
});
