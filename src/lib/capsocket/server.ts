/**
 * The capability socket: the jail's only way out.
 *
 * One unix socket per run, mode 0600 in a 0700 directory, speaking
 * newline-delimited JSON: a request `{id, bearer, method, params}` gets one
 * reply `{id, ok: true, result}` or `{id, ok: false, error: {code, message}}`.
 * Several calls may be in flight on one connection; replies carry the id.
 *
 * Robustness contract: no input can crash or stall the runner. A frame over
 * the size limit gets an error reply and the connection is closed; malformed
 * JSON gets an error reply (and a closed connection after repeated abuse);
 * half-open and idle connections are closed after an idle timeout; the number
 * of connections and of calls in flight is bounded.
 */
import { chmodSync, chownSync, mkdirSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';

export interface CapRequest {
  id: string | number;
  method: string;
  params: unknown;
  bearer: unknown;
}

export interface CapErrorBody {
  code: string;
  message: string;
}

/** Thrown by a handler to send a specific error code back to the script. */
export class CapCallError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'CapCallError';
  }
}

export type CapHandler = (request: CapRequest) => Promise<unknown>;

export interface CapSocketLimits {
  /** Largest request frame in bytes (default 64 KiB). */
  maxFrameBytes: number;
  /** Close a connection with no traffic and nothing in flight after this long (default 120 s). */
  idleTimeoutMs: number;
  /** Connections open at once (default 32). */
  maxConnections: number;
  /** Calls in flight per connection (default 128). */
  maxInFlight: number;
  /** Malformed frames tolerated per connection before it is closed (default 8). */
  maxBadFrames: number;
}

export const DEFAULT_CAP_SOCKET_LIMITS: CapSocketLimits = {
  maxFrameBytes: 64 * 1024,
  idleTimeoutMs: 120_000,
  maxConnections: 32,
  maxInFlight: 128,
  maxBadFrames: 8,
};

export interface CapSocketStats {
  connections: number;
  requests: number;
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
  const stats: CapSocketStats = { connections: 0, requests: 0, badFrames: 0, oversizedFrames: 0 };
  const open = new Set<Socket>();
  const server: Server = createServer({ allowHalfOpen: true }, (socket) => {
    if (open.size >= limits.maxConnections) {
      socket.end(`${JSON.stringify({ id: null, ok: false, error: { code: 'busy', message: 'too many connections' } })}\n`);
      socket.destroy();
      return;
    }
    open.add(socket);
    stats.connections++;
    socket.on('close', () => open.delete(socket));
    serveConnection(socket, options.handler, limits, stats);
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

function serveConnection(socket: Socket, handler: CapHandler, limits: CapSocketLimits, stats: CapSocketStats): void {
  let chunks: Buffer[] = [];
  let buffered = 0;
  let inFlight = 0;
  let badFrames = 0;
  let alive = true;

  const send = (body: unknown): void => {
    if (!alive || socket.destroyed) return;
    socket.write(`${JSON.stringify(body)}\n`);
  };
  const fail = (id: unknown, code: string, message: string): void => send({ id: id ?? null, ok: false, error: { code, message } });
  const kill = (): void => {
    alive = false;
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
  socket.on('end', () => {
    // A half-closed client still gets the replies to what it sent, then the connection ends.
    if (inFlight === 0) finish();
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
      fail(null, 'bad_frame', 'malformed frame: expected one JSON object per line');
      if (++badFrames >= limits.maxBadFrames) kill();
      return;
    }
    const id = request.id;
    if ((typeof id !== 'string' && typeof id !== 'number') || (typeof id === 'string' && id.length > 64)) {
      stats.badFrames++;
      fail(null, 'bad_request', 'request needs an id (number or short string)');
      if (++badFrames >= limits.maxBadFrames) kill();
      return;
    }
    if (typeof request.method !== 'string' || request.method.length > 64) {
      fail(id, 'bad_request', 'request needs a method');
      return;
    }
    if (inFlight >= limits.maxInFlight) {
      fail(id, 'busy', `more than ${limits.maxInFlight} calls in flight on one connection`);
      return;
    }
    inFlight++;
    stats.requests++;
    handler({ id, method: request.method, params: request.params, bearer: request.bearer })
      .then(
        (result) => send({ id, ok: true, result: result ?? null }),
        (err: unknown) => {
          if (err instanceof CapCallError) fail(id, err.code, err.message);
          else fail(id, 'internal', 'the tool failed daemon-side');
        },
      )
      .finally(() => {
        inFlight--;
        if (inFlight === 0 && socket.readableEnded) finish();
      });
  };

  socket.on('data', (data: Buffer) => {
    let start = 0;
    let newline = data.indexOf(0x0a, start);
    while (newline !== -1) {
      const piece = data.subarray(start, newline);
      if (buffered + piece.length > limits.maxFrameBytes) return oversized();
      const frame = buffered === 0 ? piece : Buffer.concat([...chunks, piece]);
      chunks = [];
      buffered = 0;
      onFrame(frame);
      if (!alive) return;
      start = newline + 1;
      newline = data.indexOf(0x0a, start);
    }
    const rest = data.subarray(start);
    if (rest.length > 0) {
      if (buffered + rest.length > limits.maxFrameBytes) return oversized();
      chunks.push(Buffer.from(rest));
      buffered += rest.length;
    }
  });

  function oversized(): void {
    stats.oversizedFrames++;
    fail(null, 'frame_too_large', `request frame over ${limits.maxFrameBytes} bytes`);
    socket.end();
    alive = false;
    setTimeout(() => socket.destroy(), 50).unref();
  }
}
