/**
 * The capability socket: the jail's only way out.
 *
 * One unix socket per run, mode 0600 in a 0700 directory, speaking
 * newline-delimited JSON (the frames and error codes are in protocol.ts): a request `{id, bearer, method, params}` gets one
 * reply `{id, ok: true, result}` or `{id, ok: false, error: {code, message}}`.
 * Several calls may be in flight on one connection; replies carry the id.
 *
 * Robustness contract: no input can crash or stall the runner. A frame over
 * the size limit gets an error reply and the connection is closed; malformed
 * JSON gets an error reply (and a closed connection after repeated abuse);
 * half-open and idle connections are closed after an idle timeout; the number
 * of connections and of calls in flight is bounded.
 *
 * Host memory stays flat whatever the jail sends: at most
 * `maxRunningPerSocket` calls run at once on a socket (one socket per run);
 * further requests wait, and while a connection has a request waiting its
 * reading is paused (the jail's writes then block in the kernel). Replies the
 * jail does not read are bounded too, over the whole socket: once the unsent
 * reply bytes of all its connections pass `maxPendingReplyBytes`, no request
 * is read and no waiting call starts until the jail drains them. So the
 * replies comis holds are at most that plus those of the calls already running
 * (`maxRunningPerSocket`), however many connections leave theirs unread (per
 * connection, 30 connections each holding one 8 MiB `ref_sql` reply kept
 * 216 MB).
 */
import { chmodSync, chownSync, mkdirSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';

import { CAP_SOCKET_ERRORS, CapCallError, type CapHandler, type CapReply, type CapRequest } from './protocol.js';

export interface CapSocketLimits {
  /** Largest request frame in bytes (default 64 KiB). */
  maxFrameBytes: number;
  /** Close a connection with no traffic and nothing in flight after this long (default 120 s). */
  idleTimeoutMs: number;
  /** Connections open at once (default 32). */
  maxConnections: number;
  /** Calls in flight (running or waiting) per connection; more get `busy` (default 128). */
  maxInFlight: number;
  /** Calls running at once on the whole socket, i.e. per run; more wait (default 8). */
  maxRunningPerSocket: number;
  /** Unsent reply bytes, over all connections, past which no request is read and no call starts (default 1 MiB). */
  maxPendingReplyBytes: number;
  /** Malformed frames tolerated per connection before it is closed (default 8). */
  maxBadFrames: number;
}

export const DEFAULT_CAP_SOCKET_LIMITS: CapSocketLimits = {
  maxFrameBytes: 64 * 1024,
  idleTimeoutMs: 120_000,
  maxConnections: 32,
  maxInFlight: 128,
  maxRunningPerSocket: 8,
  maxPendingReplyBytes: 1024 * 1024,
  maxBadFrames: 8,
};

export interface CapSocketStats {
  connections: number;
  requests: number;
  /** Most calls that ever ran at once on this socket. */
  peakRunning: number;
  /** Times a connection's reading was paused (a call waiting, or replies unread). */
  pauses: number;
  badFrames: number;
  oversizedFrames: number;
}

export interface CapSocket {
  readonly path: string;
  readonly stats: CapSocketStats;
  close(): Promise<void>;
}

export interface CapSocketOptions {
  /** Directory to create (0700) for the socket; must not exist or be empty. */
  dir: string;
  handler: CapHandler;
  limits?: Partial<CapSocketLimits>;
  /** Host uid allowed to connect (the socket is chowned to it, mode 0600); default: our own. */
  clientUid?: number;
}

export async function listenCapSocket(options: CapSocketOptions): Promise<CapSocket> {
  const limits = { ...DEFAULT_CAP_SOCKET_LIMITS, ...options.limits };
  mkdirSync(options.dir, { recursive: true, mode: 0o700 });
  chmodSync(options.dir, 0o700);
  const path = join(options.dir, 'cap.sock');
  const stats: CapSocketStats = { connections: 0, requests: 0, peakRunning: 0, pauses: 0, badFrames: 0, oversizedFrames: 0 };
  const open = new Set<Socket>();
  // Reply bytes written and not yet taken by the kernel, over every connection of the socket.
  const unsent = (): number => {
    let n = 0;
    for (const s of open) n += s.writableLength;
    return n;
  };
  const slots = new Slots(limits.maxRunningPerSocket, stats, () => unsent() <= limits.maxPendingReplyBytes);
  // Each connection's flow check: when one drains, every connection held by the socket-wide bound may read again.
  const flows = new Set<() => void>();
  const wake = (): void => {
    for (const flow of flows) flow();
    slots.kick();
  };
  const server: Server = createServer({ allowHalfOpen: true }, (socket) => {
    if (open.size >= limits.maxConnections) {
      socket.end(`${JSON.stringify({ id: null, ok: false, error: { code: CAP_SOCKET_ERRORS.busy, message: 'too many connections' } })}\n`);
      socket.destroy();
      return;
    }
    open.add(socket);
    stats.connections++;
    const flow = serveConnection(socket, options.handler, limits, stats, slots, unsent, wake);
    flows.add(flow);
    socket.on('close', () => {
      open.delete(socket);
      flows.delete(flow);
      // Its unsent replies are gone with it: connections and calls that waited on them may go on.
      wake();
    });
  });
  server.maxConnections = limits.maxConnections + 1;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    // The umask makes the socket 0600 from birth: no window where it is wider.
    const previous = process.umask(0o177);
    try {
      server.listen(path, () => resolve());
    } finally {
      process.umask(previous);
    }
  });
  chmodSync(path, 0o600);
  if (options.clientUid !== undefined && process.getuid?.() === 0 && options.clientUid !== 0) {
    chownSync(path, options.clientUid, options.clientUid);
  }
  let closed = false;
  return {
    path,
    stats,
    async close() {
      if (closed) return;
      closed = true;
      for (const s of open) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(options.dir, { recursive: true, force: true });
    },
  };
}

/** The socket-wide bound on running calls: a FIFO of waiting starts, which also wait while `clear()` is false (replies unread). */
class Slots {
  private running = 0;
  private readonly waiting: (() => void)[] = [];
  constructor(
    private readonly max: number,
    private readonly stats: CapSocketStats,
    private readonly clear: () => boolean,
  ) {}
  /** Starts waiting calls while there is room (a slot freed, or unread replies drained). */
  kick(): void {
    while (this.waiting.length > 0 && this.running < this.max && this.clear()) this.waiting.shift()!();
  }
  /** Runs `start` now or when a slot frees; `start` must call the release it gets exactly once. */
  take(start: (release: () => void) => void): void {
    const go = (): void => {
      this.running++;
      this.stats.peakRunning = Math.max(this.stats.peakRunning, this.running);
      let done = false;
      start(() => {
        if (done) return;
        done = true;
        this.running--;
        this.kick();
      });
    };
    if (this.waiting.length === 0 && this.running < this.max && this.clear()) go();
    else this.waiting.push(go);
  }
}

/** Serves one connection; returns its flow check (pause or resume reading), for the socket's wake-ups. */
function serveConnection(socket: Socket, handler: CapHandler, limits: CapSocketLimits, stats: CapSocketStats, slots: Slots, unsent: () => number, wake: () => void): () => void {
  let inFlight = 0;
  let waiting = 0;
  let badFrames = 0;
  let alive = true;
  let paused = false;
  // Bytes received and not parsed yet. While the connection holds (a call waits for a slot, or replies
  // are unread) frames stay here unparsed and the socket is paused, so this is at most one read's worth.
  let input: Buffer = Buffer.alloc(0);

  // Read only while nothing of ours waits for a slot and the jail keeps up with its replies (on every connection).
  const holding = (): boolean => waiting > 0 || unsent() > limits.maxPendingReplyBytes;
  const flow = (): void => {
    if (!alive || socket.destroyed) return;
    const hold = holding();
    if (hold && !paused) {
      paused = true;
      stats.pauses++;
      socket.pause();
    } else if (!hold && paused) {
      paused = false;
      socket.resume();
      pump(); // frames that arrived before the pause
    }
  };
  socket.on('drain', wake);

  // Replies settled in the same tick (calls in flight together) leave in one write: the socket is
  // corked on the first and uncorked once the tick's other callbacks ran. The reply to the only call
  // in flight on the connection (a sequential script's every call) has nothing to wait for: `alone`
  // writes it at once, with no cork, tick or buffered write on its way.
  let corked = false;
  const uncork = (): void => {
    corked = false;
    if (!socket.destroyed) socket.uncork();
    flow();
  };
  const send = (body: CapReply, alone = false): void => {
    if (!alive || socket.destroyed) return;
    let line: string;
    try {
      line = `${JSON.stringify(body)}\n`;
    } catch {
      // A result JSON cannot hold (a BigInt, a cycle): the call fails, the connection and comis go on.
      line = `${JSON.stringify({ id: body.id, ok: false, error: { code: CAP_SOCKET_ERRORS.internal, message: 'the tool failed daemon-side: its result is not JSON' } })}\n`;
    }
    if (!corked && !alone) {
      corked = true;
      socket.cork();
      process.nextTick(uncork);
    }
    socket.write(line);
    flow();
  };
  const fail = (id: string | number | null, code: string, message: string): void => send({ id, ok: false, error: { code, message } });
  const kill = (): void => {
    alive = false;
    if (corked) {
      // The error reply just written must leave before the connection is torn down.
      corked = false;
      socket.uncork();
    }
    socket.destroy();
  };

  socket.setTimeout(limits.idleTimeoutMs, () => {
    if (inFlight === 0) kill();
  });
  socket.on('error', () => kill());
  const finish = (): void => {
    alive = false;
    socket.end();
  };
  // A half-closed client still gets the replies to everything it sent (also frames held unparsed), then the connection ends.
  const settledAfterEnd = (): boolean => socket.readableEnded && inFlight === 0 && input.indexOf(0x0a) === -1;
  socket.on('end', () => {
    if (settledAfterEnd()) finish();
  });

  const onFrame = (frame: Buffer): void => {
    if (frame.length === 0 || (frame.length === 1 && frame[0] === 0x0d)) return;
    let request: Partial<CapRequest>;
    try {
      const parsed: unknown = JSON.parse(frame.toString('utf8'));
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object');
      request = parsed as Partial<CapRequest>;
    } catch {
      stats.badFrames++;
      fail(null, CAP_SOCKET_ERRORS.badFrame, 'malformed frame: expected one JSON object per line');
      if (++badFrames >= limits.maxBadFrames) kill();
      return;
    }
    const id = request.id;
    if ((typeof id !== 'string' && typeof id !== 'number') || (typeof id === 'string' && id.length > 64)) {
      stats.badFrames++;
      fail(null, CAP_SOCKET_ERRORS.badRequest, 'request needs an id (number or short string)');
      if (++badFrames >= limits.maxBadFrames) kill();
      return;
    }
    if (typeof request.method !== 'string' || request.method.length > 64) {
      fail(id, CAP_SOCKET_ERRORS.badRequest, 'request needs a method');
      return;
    }
    if (inFlight >= limits.maxInFlight) {
      fail(id, CAP_SOCKET_ERRORS.busy, `more than ${limits.maxInFlight} calls in flight on one connection`);
      return;
    }
    inFlight++;
    waiting++;
    stats.requests++;
    const call: CapRequest = { id, method: request.method, params: request.params, bearer: request.bearer };
    slots.take((release) => {
      waiting--;
      void answer(call, release);
    });
    flow();
  };

  /** Runs one call and sends its reply; `release` frees its socket-wide slot, whatever happens. */
  async function answer(call: CapRequest, release: () => void): Promise<void> {
    try {
      // The connection died while this call waited: nobody will read the reply.
      if (!alive || socket.destroyed) return;
      let reply: CapReply;
      try {
        reply = { id: call.id, ok: true, result: (await handler(call)) ?? null };
      } catch (err) {
        reply = { id: call.id, ok: false, error: err instanceof CapCallError ? { code: err.code, message: err.message } : { code: CAP_SOCKET_ERRORS.internal, message: 'the tool failed daemon-side' } };
      }
      send(reply, inFlight === 1);
    } finally {
      release();
      inFlight--;
      flow();
      if (alive && settledAfterEnd()) finish();
    }
  }

  let pumping = false;
  function pump(): void {
    if (pumping) return;
    pumping = true;
    try {
      while (alive && !holding()) {
        const newline = input.indexOf(0x0a);
        if (newline === -1) {
          if (input.length > limits.maxFrameBytes) return oversized();
          break;
        }
        if (newline > limits.maxFrameBytes) return oversized();
        const frame = input.subarray(0, newline);
        input = input.subarray(newline + 1);
        onFrame(frame);
      }
      if (input.length === 0) input = Buffer.alloc(0); // drop the reference to the last read's buffer
    } finally {
      pumping = false;
    }
    flow();
    if (alive && settledAfterEnd()) finish();
  }
  socket.on('data', (data: Buffer) => {
    input = input.length === 0 ? data : Buffer.concat([input, data]);
    pump();
  });

  function oversized(): void {
    stats.oversizedFrames++;
    fail(null, CAP_SOCKET_ERRORS.frameTooLarge, `request frame over ${limits.maxFrameBytes} bytes`);
    socket.end();
    alive = false;
    setTimeout(() => socket.destroy(), 50).unref();
  }
  return flow;
}
