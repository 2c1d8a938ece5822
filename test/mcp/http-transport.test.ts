/**
 * A Streamable HTTP MCP server on 127.0.0.1 (built with the official SDK in
 * the test): comis connects with `url`, sends `headers` and the secret
 * `headersFrom` header by reference, and bounds the response size.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';

import { createMcpClients } from '../../src/lib/mcp/client-manager.js';
import { redactSecrets } from '../../src/lib/redact/output-guard.js';
import { tempDir } from '../helpers/temp.js';

let http: Server;
let url: string;
const seen: { auth?: string | undefined; plain?: string | undefined }[] = [];

beforeAll(async () => {
  http = createServer((req, res) => {
    seen.push({ auth: req.headers.authorization, plain: req.headers['x-plain'] as string | undefined });
    const server = new McpServer({ name: 'http-fixture', version: '1.0.0' });
    server.registerTool('echo', { description: 'Echo.', inputSchema: { message: z.string() } }, async ({ message }) => ({ content: [{ type: 'text', text: `http: ${message}` }] }));
    server.registerTool('big', { description: 'Big.', inputSchema: {} }, async () => ({ content: [{ type: 'text', text: 'y'.repeat(3_000_000) }] }));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => void transport.close());
    void server.connect(transport).then(() => transport.handleRequest(req, res));
  });
  await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
});
afterAll(() => new Promise<void>((r) => http.close(() => r())));

describe('MCP over Streamable HTTP (127.0.0.1)', () => {
  it('url, headers and headersFrom: calls a tool, the secret header is sent and registered with the output guard', async () => {
    const c = createMcpClients({
      servers: { web: { url, headers: { 'X-Plain': 'p1' }, headersFrom: { Authorization: 'COMIS_TEST_HTTP_AUTH' }, startupTimeoutMs: 10_000, callTimeoutMs: 10_000 } },
      home: tempDir(),
      env: { COMIS_TEST_HTTP_AUTH: 'Bearer http-secret-123' },
    });
    try {
      const res = (await c.callTool('web', 'echo', { message: 'hi' })) as { content: { text: string }[] };
      expect(res.content[0]!.text).toBe('http: hi');
      expect(seen.at(-1)).toEqual({ auth: 'Bearer http-secret-123', plain: 'p1' });
      expect(redactSecrets('x Bearer http-secret-123 y')).not.toContain('http-secret-123');
    } finally {
      await c.closeAll();
    }
  });

  it('a response over the mcp_default bound is refused', async () => {
    const c = createMcpClients({ servers: { web: { url, startupTimeoutMs: 10_000, callTimeoutMs: 10_000 } }, home: tempDir() });
    try {
      await expect(c.callTool('web', 'big', {})).rejects.toMatchObject({ name: 'McpClientError' });
    } finally {
      await c.closeAll();
    }
  });
});
