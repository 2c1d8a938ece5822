/**
 * What `comis mcp list` reports: every configured MCP server, whether it
 * starts, its tools, and which of them an agent's allowlist opens, so an
 * operator sees exactly what a script of that agent could reach.
 *
 * Each server is started (or connected) once, through the same client and
 * reaper a run uses, and closed before this returns. Nothing secret is
 * reported: env/header values never appear (only their names), a URL
 * without its credentials or query, and every string passes the output guard.
 */
import type { McpServerConfig } from '../config/mcp-schema.js';
import { redactSecrets } from '../redact/output-guard.js';
import { sanitizeUntrustedText } from '../untrusted/envelope.js';
import { allowsTool, parseAllowlist } from './allowlist.js';

export interface McpToolReport {
  name: string;
  description?: string;
  /** Whether the agent's autonomy.mcp.allow opens this tool. */
  allowlisted: boolean;
}

export interface McpServerReport {
  name: string;
  transport: 'stdio' | 'http';
  /** The command and arguments, or the URL's origin and path (no credentials, no query). */
  target: string;
  /** Names only (values are never shown). */
  envNames: string[];
  starts: boolean;
  error?: { code: string; message: string };
  tools: McpToolReport[];
  /** Whether the allowlist names the server at all. */
  allowlisted: boolean;
}

export interface McpListReport {
  agentId: string;
  allow: string[];
  servers: McpServerReport[];
  /** Allowlist entries that name no configured server. */
  unknownAllowEntries: string[];
}

function targetOf(c: McpServerConfig): string {
  if (c.url !== undefined) {
    try {
      const u = new URL(c.url);
      return `${u.protocol}//${u.host}${u.pathname}`;
    } catch {
      return '(invalid url)';
    }
  }
  return redactSecrets([c.command ?? '', ...(c.args ?? [])].join(' '));
}

export async function inspectMcpServers(options: { servers: Readonly<Record<string, McpServerConfig>>; allow: readonly string[] | undefined; agentId: string; home: string }): Promise<McpListReport> {
  const allow = [...(options.allow ?? [])];
  const list = parseAllowlist(allow);
  const names = Object.keys(options.servers).sort();
  const { createMcpClients } = await import('./client-manager.js');
  const clients = createMcpClients({ servers: options.servers, home: options.home });
  try {
    const servers = await Promise.all(
      names.map(async (name): Promise<McpServerReport> => {
        const c = options.servers[name]!;
        const report: McpServerReport = {
          name,
          transport: c.url !== undefined ? 'http' : 'stdio',
          target: targetOf(c),
          envNames: [...Object.keys(c.env ?? {}), ...Object.keys(c.envFrom ?? {}), ...Object.keys(c.headers ?? {}), ...Object.keys(c.headersFrom ?? {})].sort(),
          starts: false,
          tools: [],
          allowlisted: list.entries.has(name),
        };
        try {
          const tools = await clients.listTools(name);
          report.starts = true;
          report.tools = tools
            .map((t) => {
              const d = typeof t.description === 'string' ? redactSecrets(sanitizeUntrustedText(t.description)).replace(/\s+/g, ' ').trim() : '';
              const tool: McpToolReport = { name: redactSecrets(sanitizeUntrustedText(t.name)).slice(0, 128), allowlisted: allowsTool(list, name, t.name) };
              if (d) tool.description = d.length > 200 ? `${d.slice(0, 200)}…` : d;
              return tool;
            })
            .sort((a, b) => a.name.localeCompare(b.name));
        } catch (err) {
          const e = err as { code?: unknown; message?: unknown };
          report.error = { code: typeof e.code === 'string' ? e.code : 'mcp_error', message: redactSecrets(sanitizeUntrustedText(String(e.message ?? err))) };
        }
        return report;
      }),
    );
    const unknownAllowEntries = allow.filter((e) => !Object.hasOwn(options.servers, e.split('.', 1)[0]!));
    return { agentId: options.agentId, allow, servers, unknownAllowEntries };
  } finally {
    await clients.closeAll();
  }
}
