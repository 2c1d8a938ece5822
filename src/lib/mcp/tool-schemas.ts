/**
 * The allowlisted tools of an agent with their input and output schemas, as
 * `comis sdk emit --mcp` types them: every allowlisted, configured server is
 * started once (the same client and reaper a run uses), asked for its tools,
 * and closed before this returns. Strings are sanitized like everything else a
 * server says; the schemas stay the servers' own shapes.
 */
import type { McpServerConfig } from '../config/mcp-schema.js';
import { redactSecrets } from '../redact/output-guard.js';
import { sanitizeUntrustedText, sanitizeUntrustedValue } from '../untrusted/envelope.js';
import { allowlistedServers, allowsTool, parseAllowlist } from './allowlist.js';

export interface AllowlistedToolSchema {
  server: string;
  tool: string;
  description?: string;
  inputSchema: unknown;
  outputSchema?: unknown;
}

export interface AllowlistedToolSchemas {
  tools: AllowlistedToolSchema[];
  /** Allowlisted servers that are not configured or could not be asked (code, sanitized reason). */
  unavailable: { server: string; code: string; reason: string }[];
}

export async function allowlistedToolSchemas(options: { servers: Readonly<Record<string, McpServerConfig>>; allow: readonly string[] | undefined; home: string }): Promise<AllowlistedToolSchemas> {
  const list = parseAllowlist(options.allow);
  const servers = allowlistedServers(list);
  const out: AllowlistedToolSchemas = { tools: [], unavailable: [] };
  if (servers.length === 0) return out;
  const { createMcpClients } = await import('./client-manager.js');
  const clients = createMcpClients({ servers: options.servers, home: options.home });
  try {
    const answers = await Promise.all(
      servers.map(async (server) => {
        try {
          return { server, tools: await clients.listTools(server) };
        } catch (err) {
          const e = err as { code?: unknown; message?: unknown };
          return { server, error: { code: typeof e.code === 'string' ? e.code : 'mcp_error', reason: redactSecrets(sanitizeUntrustedText(String(e.message ?? err))) } };
        }
      }),
    );
    for (const a of answers) {
      if (a.error) {
        out.unavailable.push({ server: a.server, ...a.error });
        continue;
      }
      for (const t of a.tools ?? []) {
        if (!allowsTool(list, a.server, t.name)) continue;
        const tool: AllowlistedToolSchema = { server: a.server, tool: t.name, inputSchema: sanitizeUntrustedValue(t.inputSchema ?? {}) };
        if (typeof t.description === 'string') tool.description = sanitizeUntrustedText(t.description);
        if (t.outputSchema !== undefined) tool.outputSchema = sanitizeUntrustedValue(t.outputSchema);
        out.tools.push(tool);
      }
    }
    return out;
  } finally {
    await clients.closeAll();
  }
}
