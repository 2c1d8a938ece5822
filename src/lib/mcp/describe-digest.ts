/**
 * `comis_tools.describe()` is synchronous (seed 000: `const tools =
 * comis_tools.describe();`), yet the MCP tools it lists live in servers that
 * only comis can ask. So the runner asks before the jail starts, and only
 * when it must: pre-flight saw `describe(` in the script and the agent's
 * `autonomy.mcp.allow` opens at least one server (and the lease holds
 * `orch:mcp`, and no tool policy dropped `mcp`). The answer (the same
 * sanitized catalog `comis_tools.mcp.describe()` returns over the socket) is
 * written as a JSON file into the run's read-only SDK directory, and the
 * runtimes' describe() read it from there ({@link MCP_DIGEST_ENV}).
 *
 * The servers are the run's own clients: one started here serves the
 * script's calls afterwards (nothing is started twice). A server that fails
 * to start, or does not list its tools in time, is an `unavailable` entry
 * with its reason; it never fails the run.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

import type { McpServerConfig } from '../config/mcp-schema.js';
import { allowlistedServers } from './allowlist.js';
import { mcpCatalog, type McpCatalogEntry, type McpGateSurface } from './gate.js';

/** The digest's file name in the run's SDK directory, and the variable that tells the runtimes where it is. */
export const MCP_DIGEST_FILE = 'mcp-tools.json';
const MCP_DIGEST_ENV = 'COMIS_MCP_TOOLS';
/** What a server may take beyond its startupTimeoutMs to list its tools before the run starts without them. */
export const MCP_DIGEST_LIST_GRACE_MS = 5_000;
/** Largest digest written (bytes); past it, later tools keep their names and lose their schemas. */
export const MCP_DIGEST_MAX_BYTES = 2_000_000;

/** One describe() entry of an MCP tool (or of a server that could not be asked), as the runtimes list it. */
export type McpDescribeEntry = { name: string; capability: 'orch:mcp'; summary: string; untrusted: true } & (
  { server: string; tool: string; call: string; description?: string; inputSchema: unknown } | { server: string; unavailable: true; error: string; reason: string }
);

/** Matches `describe(` however it is reached (comis_tools.describe(, a destructured describe(, mcp.describe(). */
const CALLS_DESCRIBE = /\bdescribe\s*\(/;

/** Whether pre-flight asks the servers before the run: the script calls describe( and the agent may reach an MCP server. */
export function wantsMcpDigest(code: string, surface: McpGateSurface, mcpHeld: boolean): boolean {
  return mcpHeld && surface.allow.entries.size > 0 && CALLS_DESCRIBE.test(code);
}

function firstLine(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  const line = text.trim().split('\n', 1)[0]!.trim();
  if (line === '') return undefined;
  return line.length > 200 ? `${line.slice(0, 200)}…` : line;
}

/** The catalog as describe() entries. Pure. */
export function describeEntries(catalog: readonly McpCatalogEntry[]): McpDescribeEntry[] {
  return catalog.map((e) =>
    'unavailable' in e
      ? { name: `mcp.${e.server}`, capability: 'orch:mcp', summary: `unavailable: ${e.reason}`, server: e.server, unavailable: true, error: e.error, reason: e.reason, untrusted: true }
      : {
          name: `mcp.${e.server}.${e.tool}`,
          capability: 'orch:mcp',
          summary: firstLine(e.description) ?? `Tool ${e.tool} of MCP server ${e.server}.`,
          server: e.server,
          tool: e.tool,
          call: e.call,
          ...(e.description !== undefined ? { description: e.description } : {}),
          inputSchema: e.inputSchema,
          untrusted: true,
        },
  );
}

/** The digest's JSON, bounded: past {@link MCP_DIGEST_MAX_BYTES} a tool keeps its entry and loses its schema (`{}`). */
export function digestJson(entries: McpDescribeEntry[]): string {
  let size = 2;
  const kept = entries.map((e) => {
    const text = JSON.stringify(e);
    if (size + text.length + 1 <= MCP_DIGEST_MAX_BYTES || !('inputSchema' in e)) {
      size += text.length + 1;
      return e;
    }
    const slim = { ...e, inputSchema: {}, schemaOmitted: true };
    size += JSON.stringify(slim).length + 1;
    return slim;
  });
  return JSON.stringify(kept);
}

export interface McpDigestOptions {
  surface: McpGateSurface;
  servers: Readonly<Record<string, McpServerConfig>> | undefined;
  /** Host directory the jail sees at `jailDir` (the run's SDK directory), and the file mode there. */
  dir: string;
  mode: number;
  jailDir: string;
  /** No server is waited for longer than this (the run's timeout). */
  maxWaitMs: number;
  /** The run's cancel: aborted, nothing more is waited for (the run then ends as it would have). */
  signal?: AbortSignal | undefined;
}

/**
 * Asks every allowlisted server for its tools (concurrently, each bounded by
 * its startupTimeoutMs + {@link MCP_DIGEST_LIST_GRACE_MS}), writes the digest
 * and resolves to the environment the jail gets. Never rejects: a write that
 * fails leaves describe() listing the table's tools only.
 */
export async function prefetchMcpDigest(options: McpDigestOptions): Promise<Record<string, string>> {
  const signal = options.signal;
  if (!signal) return askAndWrite(options);
  if (signal.aborted) return {};
  let onAbort: (() => void) | undefined;
  const cancelled = new Promise<Record<string, string>>((resolve) => {
    onAbort = () => resolve({});
    signal.addEventListener('abort', onAbort, { once: true });
  });
  return Promise.race([askAndWrite(options), cancelled]).finally(() => signal.removeEventListener('abort', onAbort!));
}

async function askAndWrite(options: McpDigestOptions): Promise<Record<string, string>> {
  try {
    const parts = await Promise.all(
      allowlistedServers(options.surface.allow).map((server) => {
        const waitMs = Math.min(options.maxWaitMs, (options.servers?.[server]?.startupTimeoutMs ?? 15_000) + MCP_DIGEST_LIST_GRACE_MS);
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<McpCatalogEntry[]>((resolve) => {
          timer = setTimeout(() => resolve([{ server, unavailable: true, error: 'mcp_timeout', reason: `mcp server "${server}" did not list its tools within ${waitMs} ms, before the run started` }]), waitMs);
        });
        return Promise.race([mcpCatalog(options.surface, [server]), late]).finally(() => clearTimeout(timer));
      }),
    );
    writeFileSync(join(options.dir, MCP_DIGEST_FILE), digestJson(describeEntries(parts.flat())), { mode: options.mode });
    return { [MCP_DIGEST_ENV]: `${options.jailDir}/${MCP_DIGEST_FILE}` };
  } catch {
    return {};
  }
}
