import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

import { comisBin, repoRoot } from './cli.js';

export interface ServeSession {
  client: Client;
  /** Everything the server wrote to stderr so far. */
  stderr: () => string;
  close: () => Promise<void>;
}

function env(home: string, extra: Record<string, string> = {}): Record<string, string> {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, COMIS_HOME: home, ...extra };
}

/** The SDK's own client, over the SDK's stdio transport, driving `bin/comis.js mcp serve` in a temp COMIS_HOME. */
export async function connectServe(home: string, args: string[] = [], extraEnv: Record<string, string> = {}): Promise<ServeSession> {
  const transport = new StdioClientTransport({ command: process.execPath, args: [comisBin, 'mcp', 'serve', ...args], env: env(home, extraEnv), cwd: repoRoot, stderr: 'pipe' });
  let stderr = '';
  transport.stderr?.on('data', (d: Buffer) => (stderr += d.toString('utf8')));
  const client = new Client({ name: 'comis-e2e', version: '0.0.0' });
  await client.connect(transport);
  return { client, stderr: () => stderr, close: () => client.close() };
}

/**
 * A stdio transport the test holds the process of: the same framing as the
 * SDK's (its ReadBuffer and serializer), plus `endInput()` to close the
 * server's stdin alone and `exited` to see how it ended. For the lifetime
 * tests, where the SDK transport's close() would SIGTERM a slow server.
 */
export class HeldStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  readonly child: ChildProcessWithoutNullStreams;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stdout = '';
  stderr = '';
  private readonly buffer = new ReadBuffer();

  constructor(home: string, args: string[] = []) {
    this.child = spawn(process.execPath, [comisBin, 'mcp', 'serve', ...args], { env: env(home), cwd: repoRoot, stdio: ['pipe', 'pipe', 'pipe'] });
    this.exited = new Promise((resolve) => this.child.once('exit', (code, signal) => resolve({ code, signal })));
    this.child.stderr.on('data', (d: Buffer) => (this.stderr += d.toString('utf8')));
    this.child.stdout.on('data', (d: Buffer) => {
      this.stdout += d.toString('utf8');
      this.buffer.append(d);
      for (let m = this.buffer.readMessage(); m !== null; m = this.buffer.readMessage()) this.onmessage?.(m);
    });
    this.child.once('close', () => this.onclose?.());
  }

  async start(): Promise<void> {}

  async send(message: JSONRPCMessage): Promise<void> {
    this.child.stdin.write(serializeMessage(message));
  }

  endInput(): void {
    this.child.stdin.end();
  }

  async close(): Promise<void> {
    this.child.stdin.end();
  }
}

/** Every live descendant of `pid` (by /proc parent links), with its command line. */
export function descendants(pid: number): { pid: number; cmdline: string }[] {
  const parent = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      parent.set(Number(name), Number(fields[1]));
    } catch {
      /* gone meanwhile */
    }
  }
  const out: { pid: number; cmdline: string }[] = [];
  const walk = (p: number): void => {
    for (const [child, ppid] of parent) {
      if (ppid !== p) continue;
      out.push({ pid: child, cmdline: cmdlineOf(child) });
      walk(child);
    }
  };
  walk(pid);
  return out;
}

function cmdlineOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
  } catch {
    return '';
  }
}

/** Whether `pid` still runs (a zombie counts as gone: it runs nothing). */
export function alive(pid: number): boolean {
  if (!existsSync(`/proc/${pid}`)) return false;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** Polls `check` until it holds (bounded: fails the test rather than hang). */
export async function until(check: () => boolean, what: string, limitMs = 45_000): Promise<void> {
  const end = Date.now() + limitMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
