/**
 * No MCP server process outlives its run: after a normal end, after a
 * timeout, and after SIGKILL of comis itself, with a server that ignores
 * SIGTERM and stdin EOF and forks children that ignore SIGTERM (one in its
 * own session). And the jailed script cannot reach a server directly: not
 * its process (stdio), not its HTTP port. Each with a positive control.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';

import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { comisBin, parseJson, repoRoot } from '../helpers/cli.js';
import { EDGE_ENTRY, mcpConfigYaml, pidsWithMarker, RAW_MCP } from '../helpers/mcp.js';
import { makeHome, type Home } from '../helpers/orchestrate.js';

const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor<T>(what: string, probe: () => T | undefined, ms = 30_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await delay(50);
  }
}

function startComis(h: Home, args: string[]): { child: ChildProcess; done: Promise<{ code: number | null; stdout: string }> } {
  const child = spawn(process.execPath, [comisBin, ...args], { cwd: repoRoot, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: h.home, COMIS_HOME: h.home }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.resume();
  const done = new Promise<{ code: number | null; stdout: string }>((r) => child.on('exit', (code) => r({ code, stdout })));
  return { child, done };
}

function killAll(pids: number[]): void {
  for (const p of pids)
    try {
      process.kill(p, 'SIGKILL');
    } catch {
      /* gone */
    }
}

const FORK = `${RAW_MCP}\nconst r = await mcpCall('edge', 'fork_stubborn', {});\nconsole.log(r.ok ? 'forked' : r.error.code);`;

describe('no MCP server process outlives its run', () => {
  it('after a normal run: the stubborn tree existed during the run and is gone after it', async () => {
    const marker = `m-${randomBytes(6).toString('hex')}`;
    const h = makeHome(mcpConfigYaml({ default: ['edge'] }, { marker, edgeEnv: { EDGE_IGNORE_TERM: '1' } }));
    const run = startComis(h, ['orchestrate', h.script('fork.mjs', `${FORK}\nawait new Promise((r) => setTimeout(r, 3000));`), '--json']);
    // Positive control: bubblewrap, the server and its two children carry the marker while the run lasts.
    const during = await waitFor('the server tree', () => {
      const p = pidsWithMarker(marker);
      return p.length >= 4 ? p : undefined;
    });
    const { code, stdout } = await run.done;
    try {
      expect(code).toBe(0);
      expect(parseJson(stdout).result.stdout).toBe('forked\n');
      expect(pidsWithMarker(marker)).toEqual([]);
    } finally {
      killAll(during);
    }
  });

  it('after a timeout', async () => {
    const marker = `m-${randomBytes(6).toString('hex')}`;
    const h = makeHome(mcpConfigYaml({ default: ['edge'] }, { marker, edgeEnv: { EDGE_IGNORE_TERM: '1' } }));
    const run = startComis(h, ['orchestrate', h.script('hang.mjs', `${FORK}\nawait new Promise(() => setInterval(() => {}, 1000));`), '--timeout-ms', '5000', '--json']);
    const during = await waitFor('the server tree', () => {
      const p = pidsWithMarker(marker);
      return p.length >= 4 ? p : undefined;
    });
    const { stdout } = await run.done;
    try {
      expect(parseJson(stdout).error?.code ?? parseJson(stdout).result?.failureClass).toMatch(/timeout|RUN_FAILED/);
      expect(pidsWithMarker(marker)).toEqual([]);
    } finally {
      killAll(during);
    }
  });

  it('after SIGKILL of comis (bubblewrap dies with its parent, the pid namespace with it)', async () => {
    const marker = `m-${randomBytes(6).toString('hex')}`;
    const h = makeHome(mcpConfigYaml({ default: ['edge'] }, { marker, edgeEnv: { EDGE_IGNORE_TERM: '1' } }));
    const run = startComis(h, ['orchestrate', h.script('hang.mjs', `${FORK}\nawait new Promise(() => setInterval(() => {}, 1000));`), '--json']);
    const during = await waitFor('the server tree', () => {
      const p = pidsWithMarker(marker);
      return p.length >= 4 ? p : undefined;
    });
    run.child.kill('SIGKILL');
    await run.done;
    try {
      await waitFor('the tree to die', () => (pidsWithMarker(marker).length === 0 ? true : undefined), 15_000);
    } finally {
      killAll(during);
    }
  });

  it("positive control: a client on the SDK's own stdio transport, SIGKILLed, leaves the stubborn tree behind", async () => {
    const marker = `m-${randomBytes(6).toString('hex')}`;
    const client = `import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
const c = new Client({ name: 'x', version: '0' });
await c.connect(new StdioClientTransport({ command: process.execPath, args: [${JSON.stringify(EDGE_ENTRY)}, ${JSON.stringify(marker)}], env: { PATH: process.env.PATH, EDGE_IGNORE_TERM: '1' }, stderr: 'ignore' }));
await c.callTool({ name: 'fork_stubborn', arguments: {} });
console.log('ready');
setInterval(() => {}, 1000);`;
    const child = spawn(process.execPath, ['--input-type=module', '-e', client], { cwd: repoRoot, stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((r) => child.stdout!.on('data', (d: Buffer) => d.toString().includes('ready') && r()));
    const during = pidsWithMarker(marker);
    expect(during.length).toBeGreaterThanOrEqual(3);
    child.kill('SIGKILL');
    await delay(1000);
    const left = pidsWithMarker(marker);
    killAll(left);
    expect(left.length).toBeGreaterThanOrEqual(2);
  });
});

describe('the jail cannot reach an MCP server directly', () => {
  let http: Server;
  let port: number;
  beforeAll(async () => {
    http = createServer((req, res) => {
      const server = new McpServer({ name: 'http-fixture', version: '1.0.0' });
      server.registerTool('ping', { description: 'Ping.', inputSchema: {} }, async () => ({ content: [{ type: 'text', text: 'pong over http' }] }));
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      res.on('close', () => void transport.close());
      void server.connect(transport).then(() => transport.handleRequest(req, res));
    });
    await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
    port = (http.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((r) => http.close(() => r())));

  it('its HTTP port is cut from the jail; the same server answers through the socket gate', async () => {
    const extra = `    web:\n      url: "http://127.0.0.1:${port}/mcp"`;
    const h = makeHome(mcpConfigYaml({ default: ['web'] }, { extraServers: extra }));
    const script = `${RAW_MCP}\nconst direct = await new Promise((r) => { const s = net.connect(${port}, '127.0.0.1'); s.on('connect', () => { s.destroy(); r('CONNECTED'); }); s.on('error', (e) => r(e.code)); });\nconsole.log('direct', direct);\nconst g = await mcpCall('web', 'ping', {});\nconsole.log('gate', g.ok && g.result.text.includes('pong over http'));`;
    // Not h.run: the HTTP server lives in this process, whose event loop must keep running.
    const { stdout } = await startComis(h, ['orchestrate', h.script('http.mjs', script), '--json']).done;
    const body = parseJson(stdout);
    const out = `${body.result?.stdout ?? ''}${body.result?.stderrTail ?? ''}${body.error?.message ?? ''}`;
    expect(out).toMatch(/^direct (ECONNREFUSED|ENETUNREACH|EACCES|EPERM)\n/);
    expect(out).toContain('gate true');
    // Positive control: from the host the port is open.
    await new Promise<void>((resolve, reject) => {
      const s = connect(port, '127.0.0.1', () => {
        s.destroy();
        resolve();
      });
      s.on('error', reject);
    });
  });

  it('its stdio server process is invisible to the jail (own pid namespace); the host sees it', async () => {
    const marker = `m-${randomBytes(6).toString('hex')}`;
    const h = makeHome(mcpConfigYaml({ default: ['edge'] }, { marker }));
    const script = `${RAW_MCP}\nimport { readdirSync, readFileSync } from 'node:fs';\nawait mcpCall('edge', 'ping', {});\nconst mine = readdirSync('/proc').includes(String(process.pid));\nconst seen = readdirSync('/proc').filter((p) => /^\\d+$/.test(p)).filter((p) => { try { return readFileSync('/proc/' + p + '/cmdline', 'utf8').includes(${JSON.stringify(marker)}); } catch { return false; } });\nconsole.log('self', mine, 'server', seen.length);\nawait new Promise((r) => setTimeout(r, 2500));`;
    const run = startComis(h, ['orchestrate', h.script('stdio.mjs', script), '--json']);
    // Positive control: the host sees the server while the script looks for it.
    const hostSees = await waitFor('the server on the host', () => (pidsWithMarker(marker).length > 0 ? true : undefined));
    const { stdout } = await run.done;
    expect(hostSees).toBe(true);
    expect(parseJson(stdout).result.stdout).toBe('self true server 0\n');
  });
});
