import { statSync } from 'node:fs';
import { createConnection, type Socket } from 'node:net';
import { join } from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { CapCallError } from '../../src/lib/capsocket/protocol.js';
import { listenCapSocket, type CapSocket } from '../../src/lib/capsocket/server.js';
import { tempDir } from '../helpers/temp.js';

const sockets: CapSocket[] = [];
afterEach(async () => {
  while (sockets.length) await sockets.pop()!.close();
});

async function server(handler: (req: { method: string; params: unknown }) => Promise<unknown> = async (req) => ({ echo: req.params }), limits = {}): Promise<CapSocket> {
  const s = await listenCapSocket({ dir: join(tempDir(), 'sock'), handler, limits });
  sockets.push(s);
  return s;
}

function connect(path: string): Promise<{ sock: Socket; lines: string[]; closed: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const sock = createConnection(path);
    const lines: string[] = [];
    let buf = '';
    sock.setEncoding('utf8');
    sock.on('data', (d: string) => {
      buf += d;
      let i;
      while ((i = buf.indexOf('\n')) !== -1) {
        lines.push(buf.slice(0, i));
        buf = buf.slice(i + 1);
      }
    });
    const closed = new Promise<void>((r) => sock.on('close', () => r()));
    sock.on('error', () => undefined);
    sock.on('connect', () => resolve({ sock, lines, closed }));
    sock.on('error', reject);
  });
}

async function until(cond: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met');
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Waits until `count()` is above 0 and stays put between two checks, then 200 ms more: the server worked as far as it will. */
async function settled(count: () => number): Promise<void> {
  let last = -1;
  await until(() => {
    const now = count();
    const still = now === last;
    last = now;
    return still && now > 0;
  });
  await new Promise((r) => setTimeout(r, 200));
}

describe('capability socket', () => {
  it('is a 0600 socket in a 0700 directory', async () => {
    const s = await server();
    expect(statSync(s.path).mode & 0o777).toBe(0o600);
    expect(statSync(join(s.path, '..')).mode & 0o777).toBe(0o700);
  });

  it('answers a result JSON cannot hold with an internal error, and goes on serving', async () => {
    const s = await server(async (req) =>
      req.method === 'big'
        ? { n: 1n }
        : req.method === 'cycle'
          ? (() => {
              const o: Record<string, unknown> = {};
              o.self = o;
              return o;
            })()
          : { ok: req.method },
    );
    const c = await connect(s.path);
    c.sock.write('{"id":1,"method":"big"}\n');
    c.sock.write('{"id":2,"method":"cycle"}\n');
    await until(() => c.lines.length === 2);
    c.sock.write('{"id":3,"method":"fine"}\n');
    await until(() => c.lines.length === 3);
    const replies = c.lines.map((l) => JSON.parse(l) as { id: number });
    const byId = new Map(replies.map((r) => [r.id, r]));
    for (const id of [1, 2]) expect(byId.get(id)).toEqual({ id, ok: false, error: { code: 'internal', message: 'the tool failed daemon-side: its result is not JSON' } });
    expect(byId.get(3)).toEqual({ id: 3, ok: true, result: { ok: 'fine' } });
    c.sock.destroy();
  });

  it('answers each request by id, with several in flight on one connection', async () => {
    const s = await server(async (req) => {
      const p = req.params as { delay: number; n: number };
      await new Promise((r) => setTimeout(r, p.delay));
      return { n: p.n };
    });
    const c = await connect(s.path);
    c.sock.write(`${JSON.stringify({ id: 1, method: 'm', params: { delay: 60, n: 1 } })}\n${JSON.stringify({ id: 2, method: 'm', params: { delay: 0, n: 2 } })}\n`);
    await until(() => c.lines.length === 2);
    expect(c.lines.map((l) => JSON.parse(l))).toEqual([
      { id: 2, ok: true, result: { n: 2 } },
      { id: 1, ok: true, result: { n: 1 } },
    ]);
    c.sock.destroy();
  });

  it('maps handler errors to error replies without leaking internals', async () => {
    const s = await server(async (req) => {
      if (req.method === 'a') throw new CapCallError('capability_denied', 'needs orch:web');
      throw new Error('/secret/host/path exploded');
    });
    const c = await connect(s.path);
    c.sock.write('{"id":1,"method":"a"}\n{"id":2,"method":"b"}\n');
    await until(() => c.lines.length === 2);
    const replies = c.lines.map((l) => JSON.parse(l));
    expect(replies).toContainEqual({ id: 1, ok: false, error: { code: 'capability_denied', message: 'needs orch:web' } });
    expect(replies).toContainEqual({ id: 2, ok: false, error: { code: 'internal', message: 'the tool failed daemon-side' } });
    c.sock.destroy();
  });

  it('answers garbage with errors and closes after repeated abuse, and keeps serving others', async () => {
    const s = await server(undefined, { maxBadFrames: 3 });
    const c = await connect(s.path);
    c.sock.write('not json\n[1,2]\n{"id":{"x":1},"method":"m"}\n{"id":9,"method":"m"}\n');
    await c.closed;
    expect(c.lines.slice(0, 3).map((l) => JSON.parse(l).error.code)).toEqual(['bad_frame', 'bad_frame', 'bad_request']);
    expect(s.stats.badFrames).toBe(3);
    const ok = await connect(s.path);
    ok.sock.write('{"id":1,"method":"m","params":7}\n');
    await until(() => ok.lines.length === 1);
    expect(JSON.parse(ok.lines[0]!)).toEqual({ id: 1, ok: true, result: { echo: 7 } });
    ok.sock.destroy();
  });

  it('refuses an oversized frame, with or without a newline, and closes the connection', async () => {
    const s = await server(undefined, { maxFrameBytes: 1024 });
    const a = await connect(s.path);
    a.sock.write(`{"id":1,"method":"m","params":"${'x'.repeat(5000)}"}\n`);
    await a.closed;
    expect(JSON.parse(a.lines[0]!).error.code).toBe('frame_too_large');
    const b = await connect(s.path);
    for (let i = 0; i < 10; i++) b.sock.write('y'.repeat(200));
    await b.closed;
    expect(JSON.parse(b.lines[0]!).error.code).toBe('frame_too_large');
    expect(s.stats.oversizedFrames).toBe(2);
  });

  it('a frame split across many writes is reassembled', async () => {
    const s = await server();
    const c = await connect(s.path);
    const frame = `${JSON.stringify({ id: 'abc', method: 'm', params: { s: 'é'.repeat(3000) } })}\n`;
    const bytes = Buffer.from(frame);
    for (let i = 0; i < bytes.length; i += 7) c.sock.write(bytes.subarray(i, i + 7));
    await until(() => c.lines.length === 1);
    expect(JSON.parse(c.lines[0]!).result.echo.s).toHaveLength(3000);
    c.sock.destroy();
  });

  it('a half-open client still gets its replies; an idle one is closed', async () => {
    const s = await server(
      async () => {
        await new Promise((r) => setTimeout(r, 50));
        return 'done';
      },
      { idleTimeoutMs: 200 },
    );
    const half = await connect(s.path);
    half.sock.end('{"id":1,"method":"m"}\n');
    await half.closed;
    expect(JSON.parse(half.lines[0]!)).toEqual({ id: 1, ok: true, result: 'done' });
    const idle = await connect(s.path);
    idle.sock.write('{"id":1,"me');
    await idle.closed;
  });

  it('bounds connections and calls in flight', async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    const s = await server(
      async () => {
        await gate;
        return 1;
      },
      { maxInFlight: 2, maxConnections: 2 },
    );
    const c = await connect(s.path);
    c.sock.write('{"id":1,"method":"m"}\n{"id":2,"method":"m"}\n{"id":3,"method":"m"}\n');
    await until(() => c.lines.length === 1);
    expect(JSON.parse(c.lines[0]!)).toMatchObject({ id: 3, ok: false, error: { code: 'busy' } });
    const c2 = await connect(s.path);
    const c3 = await connect(s.path);
    await c3.closed;
    expect(JSON.parse(c3.lines[0]!).error.code).toBe('busy');
    release();
    await until(() => c.lines.length === 3);
    c.sock.destroy();
    c2.sock.destroy();
  });

  it('survives a flood of random bytes from many clients', async () => {
    const s = await server();
    const clients = await Promise.all(Array.from({ length: 8 }, () => connect(s.path)));
    for (const c of clients) {
      const junk = Buffer.alloc(200_000);
      for (let i = 0; i < junk.length; i++) junk[i] = (i * 7919) % 256;
      c.sock.write(junk);
    }
    await Promise.all(clients.map((c) => c.closed));
    const ok = await connect(s.path);
    ok.sock.write('{"id":1,"method":"m","params":1}\n');
    await until(() => ok.lines.length === 1);
    expect(JSON.parse(ok.lines[0]!).ok).toBe(true);
    ok.sock.destroy();
  });

  it('runs at most maxRunningPerSocket calls at once across connections; the rest wait and all complete', async () => {
    let running = 0;
    let peak = 0;
    const s = await server(
      async () => {
        running++;
        peak = Math.max(peak, running);
        await new Promise((r) => setTimeout(r, 5));
        running--;
        return 'ok';
      },
      { maxRunningPerSocket: 3 },
    );
    const a = await connect(s.path);
    const b = await connect(s.path);
    const frames = (n: number): string => Array.from({ length: n }, (_, i) => `{"id":${i},"method":"m"}\n`).join('');
    a.sock.write(frames(60));
    b.sock.write(frames(60));
    await until(() => a.lines.length === 60 && b.lines.length === 60);
    expect(peak).toBe(3);
    expect(s.stats.peakRunning).toBe(3);
    expect(s.stats.pauses).toBeGreaterThan(0);
    expect(a.lines.every((l) => JSON.parse(l).ok === true)).toBe(true);
    a.sock.destroy();
    b.sock.destroy();
  });

  it('stops reading requests from a client that does not read its replies, and resumes when it does', async () => {
    let calls = 0;
    const reply = 'r'.repeat(64 * 1024);
    const s = await server(async () => {
      calls++;
      return reply;
    });
    const c = await connect(s.path);
    c.sock.pause(); // the jail that never reads
    const total = 400;
    c.sock.write(Array.from({ length: total }, (_, i) => `{"id":${i},"method":"m"}\n`).join(''));
    // Let the server work as far as it will.
    await settled(() => calls);
    // 1 MiB of unsent replies is 16 of these, plus what the kernel buffers: far below all 400 (25 MiB).
    expect(calls).toBeLessThan(100);
    expect(s.stats.pauses).toBeGreaterThan(0);
    c.sock.resume();
    await until(() => c.lines.length === total, 20_000);
    expect(calls).toBe(total);
    c.sock.destroy();
  });

  it('unread replies are bounded over the whole socket: many connections that never read hold back the calls of all of them', async () => {
    let calls = 0;
    // Each reply is far more than the kernel takes into a unix socket's buffer: most of it stays in comis.
    const reply = 'r'.repeat(2 * 1024 * 1024);
    const s = await server(
      async () => {
        calls++;
        return reply;
      },
      { maxRunningPerSocket: 2 },
    );
    const clients = await Promise.all(Array.from({ length: 12 }, () => connect(s.path)));
    for (const c of clients) {
      c.sock.pause(); // jails that never read
      c.sock.write('{"id":1,"method":"m"}\n');
    }
    await settled(() => calls);
    // Per connection (the bound before), each ran its one call: 12 replies, 24 MiB held. Now the
    // calls that started before any reply was pending ran, and nothing after.
    expect(calls).toBeLessThanOrEqual(2);
    // Control: once they read, every call runs and every reply arrives whole.
    for (const c of clients) c.sock.resume();
    await until(() => clients.every((c) => c.lines.length === 1), 20_000);
    expect(calls).toBe(12);
    expect(clients.every((c) => JSON.parse(c.lines[0]!).result === reply)).toBe(true);
    for (const c of clients) c.sock.destroy();
  });

  it('a half-closed client gets replies to every frame it sent, also those held back while calls waited', async () => {
    const s = await server(
      async (req) => {
        await new Promise((r) => setTimeout(r, 2));
        return req.method;
      },
      { maxRunningPerSocket: 2 },
    );
    const c = await connect(s.path);
    c.sock.end(Array.from({ length: 30 }, (_, i) => `{"id":${i},"method":"m${i}"}\n`).join(''));
    await c.closed;
    expect(c.lines.map((l) => JSON.parse(l).result)).toEqual(Array.from({ length: 30 }, (_, i) => `m${i}`));
  });
});
