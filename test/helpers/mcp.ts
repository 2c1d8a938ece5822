/** Real MCP servers for tests: the reference servers from npm and comis's own edge-case fixture. */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

import type { McpServerConfig } from '../../src/lib/config/mcp-schema.js';
import { repoRoot } from './cli.js';

export const EVERYTHING_ENTRY = join(repoRoot, 'node_modules/@modelcontextprotocol/server-everything/dist/index.js');
export const FILESYSTEM_ENTRY = join(repoRoot, 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js');
export const EDGE_ENTRY = join(repoRoot, 'test/fixtures/mcp/edge-server.mjs');

const timeouts = { startupTimeoutMs: 20_000, callTimeoutMs: 20_000 };

export function everythingServer(): McpServerConfig {
  return { command: process.execPath, args: [EVERYTHING_ENTRY, 'stdio'], ...timeouts };
}

export function filesystemServer(root: string): McpServerConfig {
  return { command: process.execPath, args: [FILESYSTEM_ENTRY, root], ...timeouts };
}

export function edgeServer(extra: Partial<McpServerConfig> = {}): McpServerConfig {
  return { command: process.execPath, args: [EDGE_ENTRY], ...timeouts, ...extra };
}

/** Whether a host pid is alive (not a zombie). */
export function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/** Host pids whose command line contains `marker` (a unique argument given to a fixture server). */
export function pidsWithMarker(marker: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').includes(marker) && alive(Number(name))) out.push(Number(name));
    } catch {
      /* gone */
    }
  }
  return out;
}

/** A config.yaml with the edge and everything servers, and agents with the given allowlists. */
export function mcpConfigYaml(agents: Record<string, readonly string[] | undefined>, options: { marker?: string; edgeEnv?: Record<string, string>; extraServers?: string } = {}): string {
  const edgeArgs = JSON.stringify([EDGE_ENTRY, ...(options.marker ? [options.marker] : [])]);
  const env = options.edgeEnv ? `\n      env: ${JSON.stringify(options.edgeEnv)}` : '';
  const lines = [
    'mcp:',
    '  servers:',
    '    everything:',
    `      command: ${JSON.stringify(process.execPath)}`,
    `      args: ${JSON.stringify([EVERYTHING_ENTRY, 'stdio'])}`,
    '      startupTimeoutMs: 30000',
    '    edge:',
    `      command: ${JSON.stringify(process.execPath)}`,
    `      args: ${edgeArgs}${env}`,
    '      startupTimeoutMs: 30000',
    '      callTimeoutMs: 20000',
    ...(options.extraServers ? [options.extraServers] : []),
    'agents:',
  ];
  for (const [id, allow] of Object.entries(agents)) {
    lines.push(`  ${id}:`);
    if (allow === undefined) lines.push('    autonomy: {}');
    else lines.push('    autonomy:', '      mcp:', `        allow: ${JSON.stringify(allow)}`);
  }
  return `${lines.join('\n')}\n`;
}

/** A jailed-script prelude: `mcpCall(server, tool, args)` over the raw capability socket. */
export const RAW_MCP = `
import net from 'node:net';
export function rawFrame(frame) {
  return new Promise((resolve) => {
    const s = net.createConnection(process.env.COMIS_ORCH_SOCKET);
    let buf = '';
    s.on('data', (d) => { buf += d; if (buf.includes('\\n')) { s.destroy(); resolve(JSON.parse(buf.split('\\n')[0])); } });
    s.on('error', (e) => resolve({ ok: false, error: { code: 'socket_error', message: e.message } }));
    s.write(JSON.stringify(frame) + '\\n');
  });
}
export function mcpCall(server, tool, args) {
  return rawFrame({ id: 1, bearer: process.env.COMIS_CAP_LEASE, method: 'mcp', params: { server, tool, args } });
}`;
