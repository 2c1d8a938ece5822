/**
 * The stdio transport of comis's MCP client: the SDK's `Transport` contract
 * over a server process comis starts and, above all, REAPS.
 *
 * Why not the SDK's StdioClientTransport: it spawns the server as a plain
 * child, so a server that ignores SIGTERM, forks a helper or setsid()s
 * outlives its run, and nothing at all is cleaned up when comis is SIGKILLed.
 * Here the server runs as
 *
 *   bwrap --unshare-pid --die-with-parent --dev-bind / / --proc /proc --chdir CWD -- COMMAND ARGS…
 *
 * in its own session (detached: own process group). It sees the host
 * filesystem as comis does (this is not a sandbox: the operator chose the
 * server), but it lives in a new pid namespace, so:
 *  - close(): stdin EOF, then SIGTERM to every process of the tree, then
 *    SIGKILL to bubblewrap, which takes the namespace's pid 1 with it; the
 *    kernel then kills every process left in the namespace, however it
 *    forked, setsid()ed or masked signals;
 *  - comis dying (even SIGKILL): bubblewrap gets its parent-death signal
 *    (--die-with-parent), the same teardown follows.
 * close() resolves only once every pid of the tree is gone.
 *
 * Without bubblewrap (macOS) the server runs in its own process group and
 * close() signals the group; that reaps a tree that stays in the group only.
 *
 * Bounds: a frame (one JSON-RPC line) over `maxFrameBytes`, or more than
 * `maxTotalBytes` from the server in all, closes the transport with an error:
 * comis never buffers an unbounded line. stderr is drained into a short tail
 * (diagnostics for `comis mcp list`), never passed to a script.
 */
import { spawn, type ChildProcess } from 'node:child_process';

import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

import { childPids, findHelper, readProcStat } from '../jail/host.js';

export interface StdioServerSpawn {
  command: string;
  args: readonly string[];
  env: Record<string, string>;
  cwd: string;
  maxFrameBytes: number;
  maxTotalBytes: number;
  /** Tests only: run without the pid namespace (to prove what it adds). */
  noPidNamespace?: boolean;
}

/** Grace between stdin EOF and SIGTERM, and between SIGTERM and SIGKILL. */
export const POLITE_EXIT_MS = 500;
export const TERM_GRACE_MS = 1_000;
const GONE_POLL_MS = 20;
const GONE_MAX_MS = 10_000;
const STDERR_TAIL_BYTES = 4096;

export class McpOutputTooLargeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'McpOutputTooLargeError';
  }
}

type Deserialize = (line: string) => JSONRPCMessage;

export class ReapedStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  private child: ChildProcess | undefined;
  private exited: Promise<void> | undefined;
  private chunks: Buffer[] = [];
  private pendingBytes = 0;
  private totalBytes = 0;
  private closing: Promise<void> | undefined;
  private stderrTail = '';
  private namespaced = false;
  /** Host pids seen in the server's tree (with their start time), so close() can wait for each. */
  private readonly seen = new Map<number, string>();

  constructor(
    private readonly spec: StdioServerSpawn,
    private readonly deserialize: Deserialize,
  ) {}

  /** The pid comis holds (bubblewrap's, or the server's own without it). */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** The last bytes the server wrote to stderr (for diagnostics; may hold anything the server printed). */
  get stderr(): string {
    return this.stderrTail;
  }

  async start(): Promise<void> {
    if (this.child) throw new Error('ReapedStdioTransport already started');
    const bwrap = this.spec.noPidNamespace ? undefined : findHelper('bwrap');
    const [file, args] = bwrap ? [bwrap, ['--unshare-pid', '--die-with-parent', '--dev-bind', '/', '/', '--proc', '/proc', '--chdir', this.spec.cwd, '--', this.spec.command, ...this.spec.args]] : [this.spec.command, [...this.spec.args]];
    this.namespaced = bwrap !== undefined;
    const child = spawn(file, args, { env: this.spec.env, cwd: this.spec.cwd, stdio: ['pipe', 'pipe', 'pipe'], detached: true, shell: false });
    this.child = child;
    this.exited = new Promise((resolve) => {
      child.once('exit', () => resolve());
      child.once('error', () => resolve());
    });
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', (err) => reject(new Error(`cannot start the server: ${(err as NodeJS.ErrnoException).code ?? 'error'}`)));
    });
    child.stdin!.on('error', (err) => this.onerror?.(err));
    child.stdout!.on('data', (chunk: Buffer) => this.onData(chunk));
    child.stderr!.on('data', (chunk: Buffer) => {
      this.stderrTail = (this.stderrTail + chunk.toString('utf8')).slice(-STDERR_TAIL_BYTES);
    });
    void this.exited.then(() => {
      if (!this.closing) this.onerror?.(new Error('the server exited'));
      void this.close();
    });
  }

  private onData(chunk: Buffer): void {
    if (this.closing) return;
    this.totalBytes += chunk.length;
    if (this.totalBytes > this.spec.maxTotalBytes) {
      this.fail(new McpOutputTooLargeError(`the server sent more than ${this.spec.maxTotalBytes} bytes in this run`));
      return;
    }
    let start = 0;
    for (let nl = chunk.indexOf(0x0a); nl !== -1; nl = chunk.indexOf(0x0a, start)) {
      const piece = chunk.subarray(start, nl);
      start = nl + 1;
      if (this.pendingBytes + piece.length > this.spec.maxFrameBytes) {
        this.fail(new McpOutputTooLargeError(`the server sent a message over ${this.spec.maxFrameBytes} bytes`));
        return;
      }
      const line = (this.chunks.length > 0 ? Buffer.concat([...this.chunks, piece]) : piece).toString('utf8').replace(/\r$/, '');
      this.chunks = [];
      this.pendingBytes = 0;
      if (line.trim() === '') continue;
      let message: JSONRPCMessage;
      try {
        message = this.deserialize(line);
      } catch {
        // Servers that print logs to stdout are common; a line that is not JSON-RPC is skipped.
        continue;
      }
      this.onmessage?.(message);
      if (this.closing) return;
    }
    const rest = chunk.subarray(start);
    if (rest.length > 0) {
      if (this.pendingBytes + rest.length > this.spec.maxFrameBytes) {
        this.fail(new McpOutputTooLargeError(`the server sent a message over ${this.spec.maxFrameBytes} bytes`));
        return;
      }
      this.chunks.push(Buffer.from(rest));
      this.pendingBytes += rest.length;
    }
  }

  private fail(err: Error): void {
    this.chunks = [];
    this.pendingBytes = 0;
    this.onerror?.(err);
    void this.close();
  }

  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.child?.stdin;
    if (!stdin || this.closing || stdin.destroyed) return Promise.reject(new Error('the server is not running'));
    return new Promise((resolve) => {
      if (stdin.write(`${JSON.stringify(message)}\n`)) resolve();
      else stdin.once('drain', resolve);
    });
  }

  /** Ends the server and every process of its tree; resolves once all are gone. Idempotent. */
  close(): Promise<void> {
    this.closing ??= this.reap().finally(() => this.onclose?.());
    return this.closing;
  }

  private async reap(): Promise<void> {
    const child = this.child;
    if (!child || child.pid === undefined) return;
    const top = child.pid;
    this.remember(top);
    child.stdin?.end();
    if (!(await within(this.exited!, POLITE_EXIT_MS))) {
      // SIGTERM to the whole tree (the server and whatever it forked), deepest first.
      this.remember(top);
      // With bubblewrap, not bubblewrap itself: it would take the namespace down at once, giving the server no grace.
      for (const pid of [...this.seen.keys()].reverse()) if (pid !== top) signal(pid, 'SIGTERM');
      if (!this.namespaced) signalGroup(top, 'SIGTERM', child);
      if (!(await within(this.exited!, TERM_GRACE_MS)) || this.liveTree().length > 0) {
        this.remember(top);
        signalGroup(top, 'SIGKILL', child);
        for (const pid of this.seen.keys()) signal(pid, 'SIGKILL');
      }
    }
    child.stdout?.destroy();
    child.stderr?.destroy();
    // bubblewrap gone means its namespace is being torn down: wait until every pid seen is gone.
    const until = Date.now() + GONE_MAX_MS;
    while (Date.now() < until) {
      const left = this.liveTree();
      if (left.length === 0) break;
      for (const pid of left) signal(pid, 'SIGKILL');
      await delay(GONE_POLL_MS);
    }
  }

  /** Records the tree under `pid` as it is now. */
  private remember(pid: number): void {
    const walk = (p: number, depth: number): void => {
      const st = readProcStat(p);
      if (!st || st.state === 'Z') return;
      if (!this.seen.has(p)) this.seen.set(p, st.startTime);
      if (depth < 32) for (const c of childPids(p)) walk(c, depth + 1);
    };
    walk(pid, 0);
  }

  /** Pids of the tree still alive (same start time: never a reused pid). */
  private liveTree(): number[] {
    const out: number[] = [];
    for (const [pid, startTime] of this.seen) {
      const st = readProcStat(pid);
      if (st && st.startTime === startTime && st.state !== 'Z') out.push(pid);
    }
    return out;
  }

  /** Every pid of the server's tree now (for tests and `comis mcp list`). */
  treePids(): number[] {
    if (this.child?.pid !== undefined) this.remember(this.child.pid);
    return this.liveTree();
  }
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    /* gone */
  }
}

/** The server leads its own process group (detached): signal the group, then the process itself. */
function signalGroup(pid: number, sig: NodeJS.Signals, child: ChildProcess): void {
  try {
    process.kill(-pid, sig);
  } catch {
    /* no such group any more */
  }
  try {
    child.kill(sig);
  } catch {
    /* gone */
  }
}

function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

async function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<false>((r) => {
    timer = setTimeout(() => r(false), ms);
  });
  try {
    return await Promise.race([p.then(() => true as const), t]);
  } finally {
    clearTimeout(timer);
  }
}
