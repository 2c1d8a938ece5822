/**
 * A listed plain tool of a stdio server is called on comis's own transport
 * (direct-call.ts), not through the SDK's `Client.callTool`: it gets the same
 * verdict the SDK path gives (equal results, errors with the same code and
 * message), including a timeout, an error reply and a crash. The SDK path is
 * what a manager takes before it listed the server's tools; a positive
 * control shows each path is the one taken.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterEach, describe, expect, it, vi } from 'vitest';

import { createMcpClients, type McpClients } from '../../src/lib/mcp/client-manager.js';
import { edgeServer } from '../helpers/mcp.js';
import { tempDir } from '../helpers/temp.js';

const open: McpClients[] = [];
/**
 * A bare JSON-RPC server (no SDK) for the replies the SDK's own server does
 * not send for a listed tool: an error response, a malformed result.
 */
const RAW_SERVER = `
const readline = require('node:readline');
const out = (m) => process.stdout.write(JSON.stringify(m) + '\\n');
readline.createInterface({ input: process.stdin }).on('line', (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined) return;
  if (m.method === 'initialize') return out({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: 'raw', version: '1' } } });
  if (m.method === 'tools/list') return out({ jsonrpc: '2.0', id: m.id, result: { tools: ['rpc_error', 'malformed', 'ok'].map((name) => ({ name, inputSchema: { type: 'object' } })) } });
  if (m.params.name === 'rpc_error') return out({ jsonrpc: '2.0', id: m.id, error: { code: -32602, message: 'bad arguments', data: { at: 'x' } } });
  if (m.params.name === 'malformed') return out({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text' }] } });
  out({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: 'ok' }] } });
});
`;

function clients(server: 'edge' | 'raw' = 'edge'): McpClients {
  const home = tempDir();
  const config = server === 'edge' ? edgeServer({ callTimeoutMs: 300 }) : { command: process.execPath, args: [join(home, 'raw.cjs')], startupTimeoutMs: 10_000, callTimeoutMs: 10_000 };
  if (server === 'raw') writeFileSync(join(home, 'raw.cjs'), RAW_SERVER);
  const c = createMcpClients({ servers: { edge: config }, home });
  open.push(c);
  return c;
}
afterEach(async () => {
  vi.restoreAllMocks();
  await Promise.all(open.splice(0).map((c) => c.closeAll()));
});

/** What a call gives: its result, or its error's code and message. */
async function verdict(c: McpClients, tool: string, args: Record<string, unknown>): Promise<unknown> {
  try {
    return { result: await c.callTool('edge', tool, args) };
  } catch (err) {
    const e = err as { code?: unknown; message?: unknown };
    return { error: { code: e.code, message: e.message } };
  }
}

const CALLS: [string, Record<string, unknown>][] = [
  ['ping', {}],
  ['echo', { message: 'hi "there"\n' }],
  ['echo', { message: 42 }],
  ['fail', {}],
  ['throw', {}],
  ['escape', {}],
  ['image', {}],
  ['hang', {}],
  ['ping', {}],
];

describe('direct tools/call: the SDK path, without its request machinery', () => {
  it('gives the verdicts of the SDK path, call by call', async () => {
    const request = vi.spyOn(Client.prototype, 'request');
    const sdk = clients();
    const viaSdk = [];
    for (const [tool, args] of CALLS) viaSdk.push(await verdict(sdk, tool, args));
    const sdkRequests = request.mock.calls.filter(([r]) => (r as { method: string }).method === 'tools/call').length;

    const direct = clients();
    await direct.listTools('edge');
    request.mockClear();
    const viaDirect = [];
    for (const [tool, args] of CALLS) viaDirect.push(await verdict(direct, tool, args));

    expect(viaDirect).toStrictEqual(viaSdk);
    // Positive controls: the first manager asked the SDK for every call, the second for none.
    expect(sdkRequests).toBe(CALLS.length);
    expect(request.mock.calls.filter(([r]) => (r as { method: string }).method === 'tools/call')).toHaveLength(0);
    expect(viaSdk).toContainEqual({ error: { code: 'mcp_timeout', message: expect.stringContaining('did not answer within 300 ms') } });
  });

  it('an error reply and a malformed result fail as on the SDK path', async () => {
    const calls: [string, Record<string, unknown>][] = [
      ['rpc_error', {}],
      ['malformed', {}],
      ['ok', {}],
    ];
    const sdk = clients('raw');
    const viaSdk = [];
    for (const [tool, args] of calls) viaSdk.push(await verdict(sdk, tool, args));
    const request = vi.spyOn(Client.prototype, 'request');
    const direct = clients('raw');
    await direct.listTools('edge');
    request.mockClear();
    const viaDirect = [];
    for (const [tool, args] of calls) viaDirect.push(await verdict(direct, tool, args));
    expect(viaDirect).toStrictEqual(viaSdk);
    expect(request).not.toHaveBeenCalled();
    expect(viaSdk[0]).toStrictEqual({ error: { code: 'mcp_error', message: 'mcp server "edge" answered an error: MCP error -32602: bad arguments' } });
    expect(viaSdk[1]).toMatchObject({ error: { code: 'mcp_error' } });
  });

  it('calls waiting together each time out on their own, the others answered meanwhile', async () => {
    const c = clients();
    await c.listTools('edge');
    const first = c.callTool('edge', 'hang', {});
    await new Promise((r) => setTimeout(r, 100));
    const [a, b, pong] = await Promise.allSettled([first, c.callTool('edge', 'hang', {}), c.callTool('edge', 'ping', {})]);
    expect(a).toMatchObject({ status: 'rejected', reason: { code: 'mcp_timeout' } });
    expect(b).toMatchObject({ status: 'rejected', reason: { code: 'mcp_timeout' } });
    expect(pong).toMatchObject({ status: 'fulfilled', value: { content: [{ type: 'text', text: 'pong' }] } });
    expect(await c.callTool('edge', 'ping', {})).toMatchObject({ content: [{ text: 'pong' }] });
  });

  it('a tool with an output schema still goes through the SDK (which checks its structured content)', async () => {
    const request = vi.spyOn(Client.prototype, 'request');
    const c = clients();
    await c.listTools('edge');
    request.mockClear();
    const r = (await c.callTool('edge', 'structured', {})) as { structuredContent: unknown };
    expect(r.structuredContent).toStrictEqual({
      items: [
        { id: 1, name: 'a' },
        { id: 2, name: 'b' },
      ],
    });
    expect(request.mock.calls.map(([q]) => (q as { method: string }).method)).toStrictEqual(['tools/call']);
  });

  it('a server that crashes mid-call fails the pending call, then every call with mcp_closed', async () => {
    const c = clients();
    await c.listTools('edge');
    await expect(c.callTool('edge', 'crash', {})).rejects.toMatchObject({ code: expect.stringMatching(/mcp_closed|mcp_error/) });
    await expect(c.callTool('edge', 'ping', {})).rejects.toMatchObject({ code: 'mcp_closed' });
  });
});
