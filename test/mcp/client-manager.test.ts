/**
 * comis's MCP client against real servers over stdio: the reference
 * `server-everything` and `server-filesystem`, and the edge-case fixture.
 * Servers start on first use, stay for the run, and closeAll() reaps their
 * whole process tree, even when it ignores SIGTERM.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { createMcpClients, type McpClients } from '../../src/lib/mcp/client-manager.js';
import { alive, edgeServer, everythingServer, filesystemServer } from '../helpers/mcp.js';
import { tempDir } from '../helpers/temp.js';

const open: McpClients[] = [];
function clients(servers: Parameters<typeof createMcpClients>[0]['servers'], extra: Partial<Parameters<typeof createMcpClients>[0]> = {}): McpClients {
  const c = createMcpClients({ servers, home: tempDir(), ...extra });
  open.push(c);
  return c;
}
afterEach(async () => {
  await Promise.all(open.splice(0).map((c) => c.closeAll()));
});

describe('MCP client manager (real servers over stdio)', () => {
  it('server-everything: lists its tools and echoes', async () => {
    const c = clients({ everything: everythingServer() });
    const tools = await c.listTools('everything');
    expect(tools.map((t) => t.name)).toContain('echo');
    const res = (await c.callTool('everything', 'echo', { message: 'hi' })) as { content: { type: string; text: string }[] };
    expect(res.content[0]).toEqual({ type: 'text', text: 'Echo: hi' });
  });

  it('server-filesystem: reads a file of its allowed directory', async () => {
    const root = tempDir();
    writeFileSync(join(root, 'a.txt'), 'hello fs\n');
    const c = clients({ fs: filesystemServer(root) });
    expect((await c.listTools('fs')).map((t) => t.name)).toContain('read_text_file');
    const res = (await c.callTool('fs', 'read_text_file', { path: join(root, 'a.txt') })) as { content: { text: string }[] };
    expect(res.content[0]!.text).toContain('hello fs');
  });

  it('the server gets no environment of comis beyond PATH/HOME/LANG, plus env and envFrom', async () => {
    const c = clients({ edge: edgeServer({ env: { PLAIN: 'visible' }, envFrom: { API_TOKEN: 'COMIS_TEST_MCP_TOKEN' } }) }, { env: { ...process.env, COMIS_TEST_MCP_TOKEN: 'tok-abcdefgh', SECRET_OF_COMIS: 'nope' } });
    const get = async (name: string) => ((await c.callTool('edge', 'env', { name })) as { content: { text: string }[] }).content[0]!.text;
    expect(await get('PLAIN')).toBe('visible');
    expect(await get('API_TOKEN')).toBe('tok-abcdefgh');
    expect(await get('SECRET_OF_COMIS')).toBe('(unset)');
  });

  it('an envFrom naming an unset variable fails the start naming the key, not a value', async () => {
    const c = clients({ edge: edgeServer({ envFrom: { API_TOKEN: 'COMIS_TEST_UNSET_VAR' } }) }, { env: {} });
    await expect(c.listTools('edge')).rejects.toMatchObject({ code: 'mcp_start_failed', message: expect.stringContaining('mcp.servers.edge.envFrom.API_TOKEN names the environment variable COMIS_TEST_UNSET_VAR') });
  });

  it('a call past callTimeoutMs fails with mcp_timeout; the server stays for the next call', async () => {
    const c = clients({ edge: edgeServer({ callTimeoutMs: 300 }) });
    await expect(c.callTool('edge', 'hang', {})).rejects.toMatchObject({ code: 'mcp_timeout' });
    expect(((await c.callTool('edge', 'ping', {})) as { content: { text: string }[] }).content[0]!.text).toBe('pong');
  });

  it('a server that crashes mid-call fails that call and is not restarted in the run', async () => {
    const c = clients({ edge: edgeServer() });
    await c.listTools('edge');
    await expect(c.callTool('edge', 'crash', {})).rejects.toMatchObject({ code: expect.stringMatching(/mcp_closed|mcp_error/) });
    await expect(c.callTool('edge', 'ping', {})).rejects.toMatchObject({ code: 'mcp_closed' });
  });

  it('a stdout flood with no newline is cut at the frame bound and the server stopped', async () => {
    const c = clients({ edge: edgeServer() });
    await c.listTools('edge');
    const pids = c.serverPids('edge');
    expect(pids.length).toBeGreaterThan(0);
    await expect(c.callTool('edge', 'flood', {})).rejects.toMatchObject({ code: expect.stringMatching(/mcp_output_too_large|mcp_closed/) });
    await expect(c.callTool('edge', 'ping', {})).rejects.toMatchObject({ code: 'mcp_output_too_large' });
    await c.closeAll();
    expect(pids.filter(alive)).toEqual([]);
  });

  it('a 20 MB result is refused (output bound), never buffered whole', async () => {
    const c = clients({ edge: edgeServer() });
    await expect(c.callTool('edge', 'big', { mb: 20 })).rejects.toMatchObject({ code: expect.stringMatching(/mcp_output_too_large|mcp_closed/) });
  });

  it('closeAll reaps the whole tree: a server ignoring SIGTERM and stdin EOF, a child ignoring SIGTERM, a setsid child', async () => {
    const c = clients({ edge: edgeServer({ env: { EDGE_IGNORE_TERM: '1' } }) });
    await c.callTool('edge', 'fork_stubborn', {});
    const pids = c.serverPids('edge');
    // bubblewrap, its pid 1, the server, its two children
    expect(pids.length).toBeGreaterThanOrEqual(4);
    expect(pids.every(alive)).toBe(true);
    await c.closeAll();
    expect(pids.filter(alive)).toEqual([]);
  });

  it("positive control: the SDK's own stdio transport leaves the SIGTERM-ignoring children behind (what the reaper adds)", async () => {
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
    const cfg = edgeServer();
    const client = new Client({ name: 't', version: '0' });
    await client.connect(new StdioClientTransport({ command: cfg.command!, args: cfg.args!, stderr: 'ignore' }));
    const res = (await client.callTool({ name: 'fork_stubborn', arguments: {} })) as { content: { text: string }[] };
    const { child, session } = JSON.parse(res.content[0]!.text) as { child: number; session: number };
    await client.close();
    await new Promise((r) => setTimeout(r, 500));
    try {
      expect(alive(child) && alive(session)).toBe(true);
    } finally {
      for (const pid of [child, session])
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          /* gone */
        }
    }
  });

  it('cwd: the server runs in the configured directory (default $COMIS_HOME)', async () => {
    const dir = tempDir();
    const home = tempDir();
    const c = createMcpClients({ servers: { a: edgeServer({ cwd: dir }), b: edgeServer() }, home });
    open.push(c);
    const cwdOf = async (s: string) => ((await c.callTool(s, 'cwd', {})) as { content: { text: string }[] }).content[0]!.text;
    expect(await cwdOf('a')).toBe(dir);
    expect(await cwdOf('b')).toBe(home);
  });

  it('startupTimeoutMs: an unknown server is mcp_unavailable; a program that never answers initialize fails its start', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'x'));
    const c = clients({ notmcp: { command: '/bin/cat', args: [], startupTimeoutMs: 500, callTimeoutMs: 1000 } });
    await expect(c.listTools('nope')).rejects.toMatchObject({ code: 'mcp_unavailable' });
    await expect(c.listTools('notmcp')).rejects.toMatchObject({ code: expect.stringMatching(/mcp_timeout|mcp_start_failed/) });
  });
});
