/**
 * RefStream (the ResultRef web_fetch writes while a body arrives) gives the
 * same handle and the same file as the one-shot materialize() path, however
 * the payload is cut into chunks: its handle is built from the preview's bytes
 * and the first line only (not the whole 64 KiB head), so the preview's UTF-8
 * cut, a first line longer than the head, a line without LF and broken UTF-8
 * right before the first LF are held to the whole-head result here. A create
 * that fails is an io_error that leaves no file and takes nothing from the
 * budget.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { ENTRY_COST_BYTES } from '../../src/lib/confine/index.js';
import { createResultStore, materialize, RefStream, type ResultKind } from '../../src/lib/resultref/materialize.js';
import { prng } from '../helpers/prng.js';
import { tempDir } from '../helpers/temp.js';

function store() {
  const dir = join(realpathSync(tempDir()), 'results');
  mkdirSync(dir);
  return createResultStore(dir, { budget: { remainingBytes: 64 * 1024 * 1024 } });
}

/** The handle (less its expiry) and the file's bytes (their hash: a deep compare of 100 KB is slow). */
function read(s: ReturnType<typeof store>, handle: { ref: string; expiresAt: number }) {
  const { expiresAt: _e, ...rest } = handle;
  return {
    handle: rest,
    sha256: createHash('sha256')
      .update(readFileSync(join(s.dir, '..', handle.ref)))
      .digest('hex'),
  };
}

async function streamed(payload: Buffer, kind: ResultKind, cuts: number[]) {
  const s = store();
  const out = new RefStream(s);
  let at = 0;
  for (const c of [...cuts.filter((c) => c > 0 && c < payload.length).sort((a, b) => a - b), payload.length]) {
    if (c > at) out.write(Buffer.from(payload.subarray(at, c)));
    at = c;
  }
  return { ...read(s, await out.commit(kind)), left: readdirSync(s.dir) };
}

function whole(payload: Buffer, kind: ResultKind) {
  const s = store();
  return {
    ...read(
      s,
      materialize(s, '', (write) => write(payload), kind),
    ),
    left: readdirSync(s.dir),
  };
}

const ODD = ['é', '€', '😀', '\u0301', ',', '"', '\n', '\r\n', 'a', ' ', '{"k":1}', 'untrusted'];

describe('RefStream', () => {
  it("gives materialize()'s handle and bytes for any chunking: preview cut, first line, schema, rows", async () => {
    const rand = prng(0x5a7e);
    const payloads: [Buffer, ResultKind][] = [];
    for (const kind of ['csv', 'jsonl', 'text', 'json'] as const) {
      // A multibyte character across the preview's 2048-byte cut, at each of its bytes.
      for (let shift = 0; shift < 4; shift++) payloads.push([Buffer.from(`${'h,'.repeat(20)}\n${'x'.repeat(2046 - 41 + shift)}😀${'y,z\n'.repeat(5000)}`), kind]);
      // A first line longer than the 64 KiB head; none at all; broken UTF-8 right before the first LF.
      payloads.push([Buffer.from(`${'c,'.repeat(40_000)}\n1,2\n`), kind]);
      payloads.push([Buffer.from('q'.repeat(70_000)), kind]);
      payloads.push([Buffer.concat([Buffer.from('a,b,\xe2'.slice(0, 4)), Buffer.from([0xe2, 0x82, 0x0a]), Buffer.from('1,2,3\n'.repeat(4000))]), kind]);
      payloads.push([Buffer.from(`{"id":1,"name":"x"}\n${'{"id":2}\n'.repeat(3000)}`), kind]);
      for (let i = 0; i < 6; i++) {
        let text = '';
        while (text.length < 3000 + Math.floor(rand() * 80_000)) text += ODD[Math.floor(rand() * ODD.length)]!;
        payloads.push([Buffer.from(text), kind]);
      }
    }
    for (const [payload, kind] of payloads) {
      const want = whole(payload, kind);
      for (const cuts of [[], [1], [2047, 2048, 2049], [65_535, 65_536], Array.from({ length: 12 }, () => Math.floor(rand() * payload.length))]) {
        expect(await streamed(payload, kind, cuts), `${kind} ${payload.subarray(0, 40).toString('hex')} cuts ${cuts.join(',')}`).toEqual(want);
      }
    }
  });

  it('a batch written in place as it fills (writeQueued) never overtakes a queued pool write or truncation: the file holds exactly what was queued', async () => {
    const rand = prng(0x0dde);
    const bytes = (n: number): Buffer => Buffer.from(Array.from({ length: n }, () => 0x41 + Math.floor(rand() * 26)));
    const head = bytes(300_000);
    // Streamed as web_fetch does, writeQueued after each chunk: one batch over the in-place size.
    const s1 = store();
    const a = new RefStream(s1);
    const text = bytes(700_000);
    for (let off = 0; off < text.length; off += 65_536) {
      a.write(text.subarray(off, off + 65_536));
      a.writeQueued();
    }
    expect(readFileSync(join(s1.dir, '..', (await a.commit('text')).ref)).equals(text)).toBe(true);
    // A reset while bytes were on disk queues a truncation: a batch filled right after it must not be
    // written before it (the truncation would empty the file the batch went into).
    const s2 = store();
    const b = new RefStream(s2);
    b.write(bytes(100_000));
    b.writeQueued();
    b.write(head);
    b.writeQueued();
    b.reset();
    const after = bytes(280_000);
    b.write(after);
    b.writeQueued();
    expect(readFileSync(join(s2.dir, '..', (await b.commit('text')).ref)).equals(after)).toBe(true);
    // Past the 4 MiB pool batch a pool write is in flight: the next filled batch waits for it.
    const s3 = store();
    const c = new RefStream(s3);
    const big = bytes(4 * 1024 * 1024 + 300_000);
    c.write(big.subarray(0, 4 * 1024 * 1024));
    c.write(big.subarray(4 * 1024 * 1024));
    c.writeQueued();
    expect(readFileSync(join(s3.dir, '..', (await c.commit('text')).ref)).equals(big)).toBe(true);
  });

  it('a create that fails is an io_error: no file, nothing taken from the budget', () => {
    const s = store();
    rmSync(s.dir, { recursive: true });
    const before = s.budget.remainingBytes;
    expect(() => new RefStream(s)).toThrow(expect.objectContaining({ code: 'io_error' }));
    expect(s.budget.remainingBytes).toBe(before);
    // The directory is there but the temp name is taken (O_EXCL): also refused, nothing replaced.
    mkdirSync(s.dir);
    mkdirSync(join(s.dir, `.ref-${s.nextId}.partial`));
    expect(() => new RefStream(s)).toThrow(expect.objectContaining({ code: 'io_error' }));
    expect(s.budget.remainingBytes).toBe(before);
    expect(readdirSync(s.dir)).toEqual([`.ref-${s.nextId - 1}.partial`]);
  });

  it("a store given the run's end keeps one spare file after a ref is made: the next ref takes it (same bytes, handle, budget), an abort deletes it, and the end leaves only refs", async () => {
    const dir = join(realpathSync(tempDir()), 'results');
    mkdirSync(dir);
    const ended = new AbortController();
    const s = createResultStore(dir, { budget: { remainingBytes: 64 * 1024 * 1024 }, ended: ended.signal });
    const settle = () => new Promise((r) => setImmediate(r));
    const payload = Buffer.from('id,v\n1,a\n2,b\n'.repeat(2000));
    const first = new RefStream(s);
    first.write(payload);
    const h1 = await first.commit('csv');
    await settle();
    // The spare: empty, the ref files' mode, not a ref (no handle, not counted).
    const spare = readdirSync(dir).filter((f) => f.startsWith('.spare-'));
    expect(spare).toHaveLength(1);
    expect(statSync(join(dir, spare[0]!)).size).toBe(0);
    expect(statSync(join(dir, spare[0]!)).mode & 0o777).toBe(0o644);
    expect(s.materialized.count).toBe(1);
    const before = s.budget.remainingBytes;
    const second = new RefStream(s);
    second.write(payload);
    const h2 = await second.commit('csv');
    // Taken and renamed into place: the same handle (but its name) and bytes as a ref created on the spot.
    expect(h2.ref).toBe('results/ref-2.csv');
    expect({ ...h2, ref: '', expiresAt: 0 }).toEqual({ ...h1, ref: '', expiresAt: 0 });
    expect(readFileSync(join(dir, 'ref-2.csv')).equals(payload)).toBe(true);
    expect(before - s.budget.remainingBytes).toBe(h2.bytes + ENTRY_COST_BYTES);
    expect(readdirSync(dir)).not.toContain(spare[0]);
    expect(readdirSync(dir).filter((f) => f.endsWith('.partial'))).toEqual([]);
    await settle();
    // An aborted ref that took a spare leaves nothing of it, and gives its reservation back.
    const taken = readdirSync(dir).filter((f) => f.startsWith('.spare-'));
    expect(taken).toHaveLength(1);
    const budget = s.budget.remainingBytes;
    const third = new RefStream(s);
    third.write(payload);
    expect(s.budget.remainingBytes).toBe(budget - payload.length - ENTRY_COST_BYTES);
    await third.abort();
    expect(s.budget.remainingBytes).toBe(budget);
    expect(readdirSync(dir)).not.toContain(taken[0]);
    expect(readdirSync(dir).filter((f) => f.startsWith('.ref-'))).toEqual([]);
    await settle();
    expect(readdirSync(dir).filter((f) => f.startsWith('.spare-'))).toHaveLength(1);
    ended.abort();
    await settle();
    expect(readdirSync(dir).sort()).toEqual(['ref-1.csv', 'ref-2.csv']);
  });

  it('a store without an end never makes a spare', async () => {
    const s = store();
    const out = new RefStream(s);
    out.write(Buffer.from('x'.repeat(20_000)));
    await out.commit('text');
    await new Promise((r) => setImmediate(r));
    expect(readdirSync(s.dir)).toEqual(['ref-1.txt']);
  });
});
