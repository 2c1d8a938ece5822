/**
 * A durable run's own area, `$COMIS_HOME/durable/<runId>/` (0700, comis's
 * own, never mounted into the jail): the pinned script (`script.json`: the
 * original bytes, language and name), the last checkpoint
 * (`checkpoint.json`), the replay recording (`calls.jsonl`: each tool call's
 * request and result, MCP calls included, in the order the calls were made;
 * `mcp-tools.json`: the tool list each MCP server gave) and the run's kept
 * results (`results/`: its ResultRef files, which a replay restores). The store holds
 * only the content-free row (store/durable-runs.ts). Everything here is
 * bounded by the run's caps and goes after 24 h (the start-up sweep).
 */
import { closeSync, copyFileSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, statSync, writeFileSync, writeSync, constants as fsConstants } from 'node:fs';
import { join } from 'node:path';

import { CAPABILITIES, type Capability } from '../capabilities/capabilities.js';
import { TOOL_TABLE } from '../capabilities/tool-table.js';
import { CapCallError } from '../capsocket/protocol.js';
import type { ResolvedAgent } from '../config/load.js';
import { ComisError } from '../errors.js';
import { mcpCallError, type McpGateSurface, type McpToolInfo } from '../mcp/gate.js';
import { MCP_SURFACE_TOOL } from '../policy/surface.js';
import { durableAreaRef } from '../store/durable-runs.js';
import { sanitizeUntrustedValue } from '../untrusted/envelope.js';
import type { ScriptLanguage } from './transpile.js';

/** The largest checkpoint, as serialized JSON. */
export const MAX_CHECKPOINT_BYTES = 1024 * 1024;

/**
 * What a durable run was allowed, pinned with its bytes: its lease's
 * capabilities, the tools its surface offered (`mcp` for comis_tools.mcp),
 * its write surface and its MCP allowlist. A resume runs under no more.
 */
export interface ResumeCeiling {
  caps: Capability[];
  tools: string[];
  write: boolean;
  mcpAllow: string[];
}

export interface PinnedScript {
  source: string;
  language: ScriptLanguage;
  displayName: string;
  ceiling?: ResumeCeiling;
}

function isCeiling(c: unknown): c is ResumeCeiling {
  const o = c as Partial<ResumeCeiling> | null;
  const strings = (a: unknown): boolean => Array.isArray(a) && a.length <= 1024 && a.every((x) => typeof x === 'string');
  return !!o && typeof o === 'object' && strings(o.caps) && (o.caps as string[]).every((x) => (CAPABILITIES as readonly string[]).includes(x)) && strings(o.tools) && typeof o.write === 'boolean' && strings(o.mcpAllow);
}

/**
 * The agent a resume runs as: today's config, narrowed to the original run's
 * ceiling. Tools the original's surface did not offer are denied (as
 * toolPolicy.deny entries), the write surface stays off if it was off, and
 * only MCP allowlist entries the original also had stay. (Its capabilities
 * are intersected through the run's requested caps.) Never widens anything.
 */
export function narrowToCeiling(agent: ResolvedAgent, ceiling: ResumeCeiling): ResolvedAgent {
  const autonomy = agent.config.autonomy;
  const policy = agent.config.skills.toolPolicy;
  const gone = [...TOOL_TABLE.map((t) => t.name), MCP_SURFACE_TOOL].filter((t) => !ceiling.tools.includes(t));
  return {
    ...agent,
    config: {
      ...agent.config,
      autonomy: {
        ...autonomy,
        write: autonomy.write && ceiling.write,
        ...(autonomy.mcp ? { mcp: { ...autonomy.mcp, allow: (autonomy.mcp.allow ?? []).filter((e) => ceiling.mcpAllow.includes(e)) } } : {}),
      },
      skills: { ...agent.config.skills, toolPolicy: { ...policy, deny: [...(policy.deny ?? []), ...gone.filter((t) => !(policy.deny ?? []).includes(t))] } },
    },
  };
}

/** One recorded tool call: what the script asked and what it got. */
export interface RecordedCall {
  i: number;
  tool: string;
  args: unknown;
  result?: unknown;
  error?: { code: string; message: string };
}

export function durableArea(home: string, runId: string): string {
  return join(home, durableAreaRef(runId));
}

function ensureArea(home: string, runId: string): string {
  mkdirSync(join(home, 'durable'), { recursive: true, mode: 0o700 });
  const dir = durableArea(home, runId);
  mkdirSync(dir, { mode: 0o700 });
  return dir;
}

/** Reads a run's pinned script, or throws naming what is wrong. */
export function readPinnedScript(home: string, runId: string): PinnedScript {
  const file = join(durableArea(home, runId), 'script.json');
  let parsed: PinnedScript;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8')) as PinnedScript;
  } catch (err) {
    throw new ComisError('NOT_FOUND', `The pinned script of run ${runId} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'invalid JSON'}).`, {
      hint: 'It was reclaimed or damaged; the run cannot be resumed or replayed. `comis explain` lists durable runs.',
    });
  }
  if (typeof parsed.source !== 'string' || !['ts', 'js', 'py'].includes(parsed.language) || typeof parsed.displayName !== 'string' || (parsed.ceiling !== undefined && !isCeiling(parsed.ceiling))) {
    throw new ComisError('NOT_FOUND', `The pinned script of run ${runId} is damaged.`, { hint: 'The run cannot be resumed or replayed.' });
  }
  return parsed;
}

/** The recorded stdout of a durable run, when kept. */
export function readRecordedStdout(home: string, runId: string): string | undefined {
  try {
    return readFileSync(join(durableArea(home, runId), 'stdout.txt'), 'utf8');
  } catch {
    return undefined;
  }
}

/** What an MCP server listed during a durable run (or how asking it failed), by server name. */
export type RecordedToolLists = Record<string, { tools: McpToolInfo[] } | { error: { code: string; message: string } }>;

/**
 * Reads a run's replay recording: every line a call, ordered by the index the
 * call got when it was made (a line is written when its call ends, so
 * concurrent calls may be written out of order), and the MCP tool lists.
 */
export function readRecording(home: string, runId: string): { calls: RecordedCall[]; complete: boolean; toolLists: RecordedToolLists } {
  const dir = durableArea(home, runId);
  const text = readFileSync(join(dir, 'calls.jsonl'), 'utf8');
  const calls = text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as RecordedCall)
    .sort((a, b) => a.i - b.i);
  let toolLists: RecordedToolLists = {};
  try {
    toolLists = JSON.parse(readFileSync(join(dir, 'mcp-tools.json'), 'utf8')) as RecordedToolLists;
  } catch {
    /* no MCP server was asked */
  }
  return { calls, complete: !existsSync(join(dir, 'calls.truncated')), toolLists };
}

/**
 * The durable side of one run: its area, checkpoint and recording. Created
 * by the runner after the lease (the run id is known) and before the spawn.
 */
export class DurableRun {
  readonly dir: string;
  private recordFd: number | undefined;
  private recorded = 0;
  private recordBytes = 0;
  private calls = 0;
  private checkpointBytes = 0;
  private readonly toolLists: RecordedToolLists = {};

  constructor(
    readonly home: string,
    readonly runId: string,
    script: PinnedScript,
    private readonly caps: { maxFileBytes: number; budget: { remainingBytes: number } },
    resumeOf?: string,
  ) {
    this.dir = ensureArea(home, runId);
    writeFileSync(join(this.dir, 'script.json'), JSON.stringify(script), { mode: 0o600, flag: 'wx' });
    if (resumeOf) {
      const from = join(durableArea(home, resumeOf), 'checkpoint.json');
      if (existsSync(from)) {
        copyFileSync(from, join(this.dir, 'checkpoint.json'), fsConstants.COPYFILE_EXCL);
        this.checkpointBytes = statSync(join(this.dir, 'checkpoint.json')).size;
      }
    }
    this.recordFd = openSync(join(this.dir, 'calls.jsonl'), fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW, 0o600);
  }

  get scriptRef(): string {
    return `${durableAreaRef(this.runId)}/script.json`;
  }

  /** The checkpoint's ref when one exists. */
  get checkpointRef(): string | undefined {
    return existsSync(join(this.dir, 'checkpoint.json')) ? `${durableAreaRef(this.runId)}/checkpoint.json` : undefined;
  }

  get resultsDir(): string {
    return join(this.dir, 'results');
  }

  /** comis_tools.checkpoint(state): replaces the last checkpoint (atomically), within the caps. */
  checkpoint(args: { state?: unknown }): { savedAt: number; bytes: number } {
    const stateText = JSON.stringify(args.state ?? null);
    const stateBytes = Buffer.byteLength(stateText);
    const limit = Math.min(MAX_CHECKPOINT_BYTES, this.caps.maxFileBytes);
    if (stateBytes > limit) throw new CapCallError('checkpoint_too_large', `checkpoint state is ${stateBytes} bytes serialized; the limit is ${limit} bytes`);
    const text = `{"state":${stateText},"savedAt":${Date.now()}}`;
    const bytes = Buffer.byteLength(text);
    // The checkpoint replaces the last one: only the growth is charged to the run's results budget.
    const growth = bytes - this.checkpointBytes;
    if (growth > this.caps.budget.remainingBytes) throw new CapCallError('result_budget_exceeded', "checkpoint would pass this run's results budget (autonomy.limits.resultRunMb)");
    const tmp = join(this.dir, 'checkpoint.json.tmp');
    writeFileSync(tmp, text, { mode: 0o600 });
    renameSync(tmp, join(this.dir, 'checkpoint.json'));
    this.caps.budget.remainingBytes -= growth;
    this.checkpointBytes = bytes;
    return { savedAt: (JSON.parse(text) as { savedAt: number }).savedAt, bytes };
  }

  /** comis_tools.resume(): the last checkpoint as untrusted data, or null. */
  resume(): { type: 'Checkpoint'; state: unknown; savedAt: number; untrusted: true } | null {
    let saved: { state: unknown; savedAt: number };
    try {
      saved = JSON.parse(readFileSync(join(this.dir, 'checkpoint.json'), 'utf8')) as { state: unknown; savedAt: number };
    } catch {
      return null;
    }
    return { type: 'Checkpoint', state: sanitizeUntrustedValue(saved.state), savedAt: saved.savedAt, untrusted: true };
  }

  /** A call starts: its index in the recording (taken when it is made, so concurrent calls keep the order the script made them in). */
  begin(): number {
    return this.calls++;
  }

  /**
   * Appends call `i` (from {@link begin}) to the recording. Bounded (four times the per-file cap,
   * autonomy.limits.resultFileMb): past it the recording stops and is marked
   * incomplete (a replay then refuses).
   */
  record(i: number, tool: string, args: unknown, outcome: { result: unknown } | { error: { code: string; message: string } }): void {
    if (this.recordFd === undefined) return;
    const line = `${JSON.stringify({ i, tool, args, ...outcome })}\n`;
    const bytes = Buffer.byteLength(line);
    if (this.recordBytes + bytes > this.caps.maxFileBytes * 4) {
      writeFileSync(join(this.dir, 'calls.truncated'), `${i}\n`, { mode: 0o600 });
      this.close();
      return;
    }
    writeSync(this.recordFd, line);
    this.recordBytes += bytes;
    this.recorded++;
  }

  /**
   * The run's MCP surface, recording: each call that passed the gate (its
   * server, tool, arguments, and the data or error the script got) takes its
   * place in the recording like any table tool's call, and each server's
   * tool list is kept (`mcp-tools.json`, within the per-file cap), so a
   * replay answers both without starting a server.
   */
  recordMcp(surface: McpGateSurface): McpGateSurface {
    return {
      allow: surface.allow,
      configured: (server) => surface.configured(server),
      listTools: async (server, forCall) => {
        try {
          const tools = await surface.listTools(server, forCall);
          this.keepToolList(server, { tools: tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema })) });
          return tools;
        } catch (err) {
          const e = mcpCallError(err);
          this.keepToolList(server, { error: { code: e.code, message: e.message } });
          throw err;
        }
      },
      call: async (server, tool, args) => {
        const i = this.begin();
        try {
          const result = await surface.call(server, tool, args);
          this.record(i, `mcp:${server}.${tool}`, args, { result });
          return result;
        } catch (err) {
          const e = mcpCallError(err);
          this.record(i, `mcp:${server}.${tool}`, args, { error: { code: e.code, message: e.message } });
          throw err;
        }
      },
    };
  }

  private keepToolList(server: string, entry: RecordedToolLists[string]): void {
    if (Object.hasOwn(this.toolLists, server)) return;
    this.toolLists[server] = entry;
    const text = JSON.stringify(this.toolLists);
    if (Buffer.byteLength(text) > this.caps.maxFileBytes) {
      delete this.toolLists[server];
      return; // a replay then finds the server unavailable
    }
    try {
      const tmp = join(this.dir, 'mcp-tools.json.tmp');
      writeFileSync(tmp, text, { mode: 0o600 });
      renameSync(tmp, join(this.dir, 'mcp-tools.json'));
    } catch {
      /* best effort: a replay then finds the server unavailable */
    }
  }

  /** The run's bounded stdout, for a replay to compare against. */
  saveStdout(text: string): void {
    try {
      writeFileSync(join(this.dir, 'stdout.txt'), text, { mode: 0o600, flag: 'wx' });
    } catch {
      /* best effort: a replay without it reports no output comparison */
    }
  }

  close(): void {
    if (this.recordFd !== undefined) closeSync(this.recordFd);
    this.recordFd = undefined;
  }
}
