/**
 * `comis replay <runId>`: a durable run's pinned bytes re-spawned in the same
 * jail (its workspace bound read-only: the only writable place is the jail's
 * own /tmp scratch) against a replay socket. The socket keeps the gate (lease,
 * policy, capabilities, the MCP allowlist) but its tools act on nothing: each
 * call, MCP calls included, is answered from the run's recording, in order,
 * and each MCP server's tool list from the list it gave the original run, so
 * no MCP server is ever started. A call whose tool or params differ from the
 * recording at that index is a `replay_divergence` (the script sees it
 * thrown; the report names the index). The ResultRef files the original run
 * materialised are restored into the replay's own results area (the handles
 * in the recording point at them), so the script's slicers read the same
 * bytes. A replay never sends, fetches or writes anything.
 */
import { chmodSync, closeSync, constants as fsConstants, fchmodSync, fstatSync, lstatSync, mkdirSync, openSync, readdirSync, readSync, writeSync } from 'node:fs';
import { join } from 'node:path';

import { CapCallError } from '../capsocket/protocol.js';
import { TOOL_TABLE } from '../capabilities/tool-table.js';
import type { ResolvedAgent } from '../config/load.js';
import { parseAllowlist } from '../mcp/allowlist.js';
import type { McpGateSurface } from '../mcp/gate.js';
import { RESULTREF_DEFAULTS } from '../resultref/materialize.js';
import type { ToolImpl } from './dispatch.js';
import type { RecordedCall, RecordedToolLists } from './durable.js';

export interface ReplayCall {
  index: number;
  tool: string;
  recordedTool?: string;
  match: boolean;
}

export interface ReplayLog {
  calls: ReplayCall[];
  divergence?: { index: number; recordedTool?: string; tool: string; why: 'tool' | 'params' | 'extra_call' };
}

/** JSON with sorted keys, so two equal values compare equal whatever their key order. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => (v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v));
}

/**
 * A recorded result as the replay hands it back: every ResultRef handle in it
 * lives again from now (its file is restored into the replay's results area;
 * the original's expiry may have passed).
 */
function revive(value: unknown, expiresAt: number, depth = 0): unknown {
  if (!value || typeof value !== 'object' || depth > 32) return value;
  if (Array.isArray(value)) return value.map((v) => revive(v, expiresAt, depth + 1));
  const o = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) out[k] = revive(v, expiresAt, depth + 1);
  if (o.type === 'ResultRef' && typeof o.ref === 'string' && typeof o.expiresAt === 'number') out.expiresAt = expiresAt;
  return out;
}

export interface Replay {
  /** The socket's table tools, each answered from the recording. */
  tools: Record<string, ToolImpl>;
  /** The socket's MCP surface: the agent's allowlist, each server's recorded tool list, each call answered from the recording. */
  mcp: McpGateSurface;
}

/** The replay socket's tools and MCP surface, answering from `calls` in order; `log` collects the comparison. */
export function createReplay(calls: readonly RecordedCall[], log: ReplayLog, agent: ResolvedAgent, toolLists: RecordedToolLists = {}): Replay {
  const byIndex = new Map(calls.map((c) => [c.i, c]));
  let next = 0;
  const diverge = (index: number, tool: string, why: 'tool' | 'params' | 'extra_call', rec: RecordedCall | undefined): CapCallError => {
    log.divergence ??= { index, tool, why, ...(rec ? { recordedTool: rec.tool } : {}) };
    const what = why === 'extra_call' ? 'the recording has no call there' : why === 'tool' ? `the recording has ${rec!.tool} there` : 'its params differ from the recording';
    return new CapCallError('replay_divergence', `replay_divergence at call ${index}: ${tool}: ${what}`);
  };
  const answer = (tool: string, args: unknown): unknown => {
    const index = next++;
    const rec = byIndex.get(index);
    const why = !rec ? 'extra_call' : rec.tool !== tool ? 'tool' : canonical(rec.args) !== canonical(args) ? 'params' : undefined;
    log.calls.push({ index, tool, ...(rec ? { recordedTool: rec.tool } : {}), match: why === undefined });
    if (why) throw diverge(index, tool, why, rec);
    if (rec!.error) throw new CapCallError(rec!.error.code, rec!.error.message);
    return revive(rec!.result, Date.now() + RESULTREF_DEFAULTS.ttlMs);
  };
  const servers = agent.mcpServers ?? {};
  const mcp: McpGateSurface = {
    allow: parseAllowlist(agent.config.autonomy.mcp?.allow),
    configured: (server) => Object.hasOwn(servers, server),
    listTools: async (server, forCall) => {
      const list = Object.hasOwn(toolLists, server) ? toolLists[server] : undefined;
      if (!list && forCall) {
        // The script calls a server the original run never reached: the replay has left the
        // recording at this call (a describe() digest asking for it is not a call).
        const index = next;
        const rec = byIndex.get(index);
        log.calls.push({ index, tool: `mcp:${server}`, ...(rec ? { recordedTool: rec.tool } : {}), match: false });
        throw diverge(index, `mcp:${server}`, rec ? 'tool' : 'extra_call', rec);
      }
      if (!list) throw new CapCallError('mcp_unavailable', `a replay starts no MCP server, and the original run never asked "${server}" for its tools`);
      if ('error' in list) throw new CapCallError(list.error.code, list.error.message);
      return list.tools;
    },
    call: async (server, tool, args) => answer(`mcp:${server}.${tool}`, args),
  };
  return { tools: Object.fromEntries(TOOL_TABLE.map((t) => [t.name, (args: unknown) => answer(t.name, args)])), mcp };
}

/** Deepest directory level and most entries a restore walks (the kept results are bounded by the run's caps already). */
const MAX_RESTORE_DEPTH = 32;
const MAX_RESTORE_ENTRIES = 100_000;

/**
 * Restores a durable run's kept results (`durable/<runId>/results/`) into a
 * replay's results area: regular files and directories only (a link is
 * skipped, never followed), created exclusively, with the run directory's
 * modes (the jail reads them; nothing there is writable by it). A missing
 * area restores nothing: the handles then fail as expired files would.
 */
export function restoreKeptResults(from: string, to: string, modes: { file: number; dir: number }): number {
  let entries = 0;
  const walk = (src: string, dst: string, depth: number): void => {
    let names: string[];
    try {
      names = readdirSync(src);
    } catch {
      return;
    }
    for (const name of names) {
      if (++entries > MAX_RESTORE_ENTRIES) return;
      const s = join(src, name);
      const d = join(dst, name);
      const st = lstatSync(s);
      if (st.isDirectory() && depth < MAX_RESTORE_DEPTH) {
        try {
          mkdirSync(d, { mode: modes.dir });
          chmodSync(d, modes.dir);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || !lstatSync(d).isDirectory()) continue;
        }
        walk(s, d, depth + 1);
      } else if (st.isFile()) copyFile(s, d, modes.file);
    }
  };
  walk(from, to, 0);
  return entries;
}

function copyFile(src: string, dst: string, mode: number): void {
  const inFd = openSync(src, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW);
  try {
    if (!fstatSync(inFd).isFile()) return;
    const outFd = openSync(dst, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW, mode);
    try {
      fchmodSync(outFd, mode); // the umask may have narrowed it
      const buf = Buffer.allocUnsafe(1 << 16);
      for (let n = readSync(inFd, buf); n > 0; n = readSync(inFd, buf)) for (let off = 0; off < n;) off += writeSync(outFd, buf, off, n - off);
    } finally {
      closeSync(outFd);
    }
  } finally {
    closeSync(inFd);
  }
}
