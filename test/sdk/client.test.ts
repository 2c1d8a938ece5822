/**
 * The emitted JS SDK as a jailed script runs it, against a canned capability
 * socket (a unix socket in a temp dir answering each frame as comis would):
 * inline data results carry the ResultRef methods over the payload as it
 * arrived while they serialise, enumerate and print as plain data; MCP tools
 * are reached through the inert proxy; replies find their calls whatever
 * their order; and the socket holds the process open exactly while a call is
 * in flight.
 */
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { emitSdk } from '../../src/lib/sdk/emit.js';
import { writeSdkFiles } from '../../src/lib/sdk/files.js';
import { tempDir } from '../helpers/temp.js';

interface Frame {
  id: number;
  bearer: string;
  method: string;
  params: { tool?: string; server?: string; args?: Record<string, unknown> };
}

const NOTES = 'first line\nTODO: ship it\nlast line\n';
const HITS = [
  { title: 'A', url: 'https://example.org/a', snippet: 'one' },
  { title: 'B', url: 'https://example.org/b', snippet: 'two' },
];

/** What comis answers: read and web_search as inline data, an McpResult for mcp; `slow` after 300 ms; a refusal for `refused`. */
function answer(frame: Frame): { result?: unknown; error?: { code: string; message: string }; delayMs: number } {
  if (frame.method === 'mcp') return { result: { type: 'McpResult', source: `mcp:${frame.params.server}.${frame.params.tool}`, isError: false, content: [], untrusted: true, text: 'pong' }, delayMs: 0 };
  if (frame.params.tool === 'web_search') return { result: HITS, delayMs: 0 };
  const path = String(frame.params.args?.path);
  if (path === 'refused') return { error: { code: 'not_found', message: 'no such file or directory: refused' }, delayMs: 0 };
  return { result: { path, content: path === 'notes.md' ? NOTES : path, offset: 0, lines: 3, totalLines: 3, bytes: NOTES.length, truncated: false }, delayMs: path === 'slow' ? 300 : 0 };
}

const servers: Server[] = [];
afterEach(() => {
  while (servers.length > 0) servers.pop()!.close();
});

/** A canned capability socket; `reverse` answers each chunk's frames last first. */
async function cannedSocket(dir: string, reverse = false): Promise<{ path: string; frames: Frame[] }> {
  const path = join(dir, 'cap.sock');
  const frames: Frame[] = [];
  const server = createServer((socket) => {
    socket.setEncoding('utf8');
    let buffered = '';
    socket.on('data', (chunk: string) => {
      buffered += chunk;
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      const batch = lines.map((line) => JSON.parse(line) as Frame);
      frames.push(...batch);
      for (const frame of reverse ? batch.reverse() : batch) {
        const { result, error, delayMs } = answer(frame);
        const reply = JSON.stringify(error ? { id: frame.id, ok: false, error } : { id: frame.id, ok: true, result }) + '\n';
        if (delayMs > 0) setTimeout(() => socket.write(reply), delayMs);
        else socket.write(reply);
      }
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(path, resolve));
  return { path, frames };
}

/** Runs `body` (an async function body with comis_tools and util in scope) in a child node; its JSON output. */
async function runScript(body: string, options: { reverse?: boolean } = {}): Promise<{ out: unknown; frames: Frame[] }> {
  const dir = tempDir();
  writeSdkFiles(dir, emitSdk('js'));
  const { path, frames } = await cannedSocket(dir, options.reverse);
  const source = `const { comis_tools } = require(${JSON.stringify(join(dir, 'comis_tools.js'))});\nconst util = require('node:util');\n(async () => {\n${body}\n})();\n`;
  const child = spawn(process.execPath, ['-e', source], { env: { PATH: process.env.PATH, COMIS_ORCH_SOCKET: path, COMIS_CAP_LEASE: 'lease-for-test', COMIS_WORKSPACE: dir }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  // The child must exit on its own: the socket must not hold it once the calls are answered.
  const held = setTimeout(() => child.kill(), 10_000);
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  clearTimeout(held);
  expect(stderr).toBe('');
  expect(code).toBe(0);
  return { out: JSON.parse(stdout) as unknown, frames };
}

describe('the JS SDK on a capability socket', () => {
  it('an inline object result: methods over the payload as it arrived, plain data to JSON, keys, for..in and console.log', async () => {
    const { out } = await runScript(`
const r = await comis_tools.read({ path: 'notes.md' });
const json = JSON.stringify(r);
r.content = 'changed after arrival';
const forIn = [];
for (const k in r) forIn.push(k);
const code = (p) => p.then(() => 'NO ERROR', (e) => e.code ?? e.name);
process.stdout.write(JSON.stringify({
  json,
  keys: Object.keys(r),
  forIn,
  inspect: util.inspect(r, { breakLength: Infinity }),
  methods: ['read', 'grep', 'jq', 'sql', 'jsonpath'].map((k) => typeof r[k]),
  read: await r.read(1, 1),
  all: await r.read(),
  grep: await r.grep('TODO'),
  sql: await code(r.sql('SELECT 1')),
  jsonpath: await code(r.jsonpath('$')),
  detached: await code(r.read.call({})),
}));`);
    expect(out).toEqual({
      json: JSON.stringify({ path: 'notes.md', content: NOTES, offset: 0, lines: 3, totalLines: 3, bytes: NOTES.length, truncated: false }),
      keys: ['path', 'content', 'offset', 'lines', 'totalLines', 'bytes', 'truncated'],
      forIn: ['path', 'content', 'offset', 'lines', 'totalLines', 'bytes', 'truncated'],
      inspect: `{ path: 'notes.md', content: 'changed after arrival', offset: 0, lines: 3, totalLines: 3, bytes: ${NOTES.length}, truncated: false }`,
      methods: ['function', 'function', 'function', 'function', 'function'],
      read: 'TODO: ship it',
      all: NOTES.slice(0, -1),
      grep: [{ line: 2, text: 'TODO: ship it' }],
      sql: 'inline_result',
      jsonpath: 'inline_result',
      detached: 'TypeError',
    });
  });

  it('an inline array result stays an array; its methods answer over the array as it arrived', async () => {
    const { out } = await runScript(`
const hits = await comis_tools.web_search({ query: 'q' });
hits.push({ url: 'added after arrival' });
process.stdout.write(JSON.stringify({
  isArray: Array.isArray(hits),
  instance: hits instanceof Array,
  urls: hits.map((h) => h.url),
  spread: [...hits].length,
  keys: Object.keys(hits),
  inspect: util.inspect(hits.slice(0, 1), { breakLength: Infinity }),
  jq: await hits.jq('[.[].url]'),
  read: JSON.parse(await hits.read()).length,
}));`);
    expect(out).toEqual({
      isArray: true,
      instance: true,
      urls: ['https://example.org/a', 'https://example.org/b', 'added after arrival'],
      spread: 3,
      keys: ['0', '1', '2'],
      inspect: "[ { title: 'A', url: 'https://example.org/a', snippet: 'one' } ]",
      jq: ['https://example.org/a', 'https://example.org/b'],
      read: 2,
    });
  });

  it('MCP tools through the proxy: one function per tool, the frame names server and tool, the result is passed through', async () => {
    const { out, frames } = await runScript(`
const edge = comis_tools.mcp.edge;
const r = await edge.ping({});
process.stdout.write(JSON.stringify({
  same: edge.ping === comis_tools.mcp.edge.ping,
  other: edge.ping === edge.pong,
  inert: ['then', 'constructor', '__proto__', 'toJSON'].map((k) => typeof edge[k]),
  plain: Object.getPrototypeOf(r) === Object.prototype,
  r,
}));`);
    expect(out).toEqual({
      same: true,
      other: false,
      inert: ['undefined', 'undefined', 'undefined', 'undefined'],
      plain: true,
      r: { type: 'McpResult', source: 'mcp:edge.ping', isError: false, content: [], untrusted: true, text: 'pong' },
    });
    expect(frames.map((f) => [f.method, f.params, f.bearer])).toEqual([['mcp', { server: 'edge', tool: 'ping', args: {} }, 'lease-for-test']]);
  });

  it("a refused call rejects with the reply's code, message and tool, with no stack frames (the socket's own would tell the script nothing)", async () => {
    const { out } = await runScript(`
Error.stackTraceLimit = 7;
const err = await comis_tools.read({ path: 'refused' }).then(() => undefined, (e) => e);
process.stdout.write(JSON.stringify({
  name: err.name,
  code: err.code,
  message: err.message,
  tool: err.tool,
  stack: err.stack,
  limit: Error.stackTraceLimit,
  after: (await comis_tools.read({ path: 'first' })).content,
}));`);
    expect(out).toEqual({ name: 'ComisToolError', code: 'not_found', message: 'no such file or directory: refused', tool: 'read', stack: 'ComisToolError: no such file or directory: refused', limit: 7, after: 'first' });
  });

  it('calls in flight together, answered in reverse order, each get their own reply; a lone slow call holds the process open', async () => {
    const { out, frames } = await runScript(
      `
const lone = await comis_tools.read({ path: 'first' });
const batch = await Promise.all(Array.from({ length: 20 }, (_, i) => comis_tools.read({ path: 'p' + i })));
const slow = await comis_tools.read({ path: 'slow' });
process.stdout.write(JSON.stringify({ lone: lone.content, batch: batch.map((r) => r.content), slow: slow.content }));`,
      { reverse: true },
    );
    expect(out).toEqual({ lone: 'first', batch: Array.from({ length: 20 }, (_, i) => `p${i}`), slow: 'slow' });
    expect(frames.map((f) => f.id)).toEqual(Array.from({ length: 22 }, (_, i) => i + 1));
  });
});
