/**
 * `comis mcp serve`: comis itself as an MCP server, so any MCP client (Claude
 * Code, Cursor, an agent framework) becomes an orchestrate client. Two tools:
 *
 * - `orchestrate({script, language, timeoutMs})`: the client's model writes
 *   ONE script; it runs through {@link runAndRecord}, the run path of
 *   `comis orchestrate` (same pre-flight, lease, jail, limits, record), as the
 *   agent the server was started for. Only the script's stdout comes back; a
 *   failure is an isError result with its class and the redacted stderr tail;
 *   a refusal (exit 4 on the CLI) an isError result with the reason.
 * - `describe_tools`: what comis_tools offers that agent's scripts.
 *
 * Security property: nothing widens. The client's model gets exactly what a
 * `comis orchestrate --agent ID` user gets: its script runs jailed with the
 * agent's own lease; the MCP connection adds no capability, no path, no tool.
 * An agent that requires approvals is refused per run (there is no terminal
 * to ask on: stdin is the protocol), never approved implicitly.
 *
 * Concurrency: runs are serialized, one at a time, in arrival order; at most
 * {@link MAX_WAITING_RUNS} wait, and a call beyond that is answered at once
 * with isError. Two runs of one agent share its read-write workspace, its
 * quota and the end-of-run workspace strip; serializing keeps each run seeing
 * the workspace the previous one left, as a CLI user running them in turn
 * would, and bounds the machine to one jail per server.
 *
 * Lifetime: the server ends when its input closes (the client went away) or
 * {@link McpServeHandle.close} is called: the run in progress is killed
 * through its abort signal and awaited (its jail reaped, run directory
 * removed, run recorded), waiting runs never start, and `closed` resolves.
 *
 * Streams: the protocol is read from `input` and written to `output` only;
 * this module writes nowhere else (the caller points `output` at the real
 * stdout and keeps everything else off it).
 */
import type { Readable, Writable } from 'node:stream';

import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';

import type { ResolvedAgent } from '../lib/config/load.js';
import { ComisError } from '../lib/errors.js';
import { getLogger } from '../lib/obs/logger.js';
import { redactSecrets, redactValue } from '../lib/redact/output-guard.js';
import { runAndRecord } from '../lib/orchestrate/execute.js';
import type { OrchestrateResult } from '../lib/orchestrate/runner.js';
import { ORCHESTRATE_INPUT_SCHEMA, parseOrchestrateArgs, type OrchestrateToolArgs } from './mcp-serve-arguments.js';
import { describeAgentTools, orchestrateToolDescription } from './mcp-serve-describe.js';

/** Calls that may wait while one run is in progress; one more is answered "busy". */
export const MAX_WAITING_RUNS = 4;

export interface McpServeOptions {
  agent: ResolvedAgent;
  home: string;
  /** Every run of this server is recorded under this session. */
  sessionKey: string;
  /** comis's version, announced in the MCP handshake. */
  version: string;
  input: Readable;
  output: Writable;
  /** A run whose record could not be stored (the result still goes back). */
  onWarning: (message: string) => void;
}

export type McpStopReason = 'input_closed' | 'transport_closed' | 'requested';

export interface McpServeHandle {
  /** Resolves, with why it stopped, once the server has shut down and the run in progress was killed and cleaned up. */
  closed: Promise<McpStopReason>;
  close(reason?: McpStopReason): Promise<void>;
}

const INSTRUCTIONS =
  'comis runs one script per orchestrate call in a bubblewrap jail with no network; the script chains comis_tools calls and prints the answer. ' +
  'Call describe_tools once to see the tools, their parameters and results; then write one script that does the whole job.';

/** C0/C1 controls other than \n and \t, shown as in `comis orchestrate`'s stderr tail (ESC → ␛): diagnosis must not drive a terminal. */
function escapeControls(text: string): string {
  return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, (c) => {
    const code = c.charCodeAt(0);
    if (code < 0x20) return String.fromCharCode(0x2400 + code);
    if (code === 0x7f) return '\u2421';
    return `<U+${code.toString(16).toUpperCase().padStart(4, '0')}>`;
  });
}

function meta(r: OrchestrateResult): Record<string, unknown> {
  return {
    'comis/runId': r.runId,
    'comis/sessionKey': r.sessionKey,
    'comis/agentId': r.agentId,
    'comis/outcome': r.outcome,
    'comis/durationMs': r.durationMs,
    ...(r.failureClass ? { 'comis/failureClass': r.failureClass } : {}),
    ...(r.exitCode === null ? {} : { 'comis/exitCode': r.exitCode }),
  };
}

/** A finished run as the client sees it: stdout alone on success; on failure the CLI's diagnosis, then any stdout. */
export function runToolResult(r: OrchestrateResult): CallToolResult {
  if (r.outcome === 'success') return redactValue({ content: [{ type: 'text', text: r.stdout }], _meta: meta(r) });
  const code = r.exitCode === null ? '' : `, exit code ${r.exitCode}`;
  let text = `comis: run ${r.runId} failed: ${r.failureClass}${code}, after ${r.durationMs} ms\n`;
  if (r.failureClass === 'timeout') text += `comis: the script ran past its ${r.timeoutMs} ms timeout and was killed (raise it with timeoutMs)\n`;
  if (r.failureClass === 'stdout_cap') text += 'comis: the script printed more than the stdout hard cap and was killed\n';
  if (r.stderrTail) {
    const tail = escapeControls(r.stderrTail);
    text += `--- stderr (last ${r.stderrTail.length} chars) ---\n${tail}${tail.endsWith('\n') ? '' : '\n'}`;
  }
  if (r.stdout) text += `--- stdout (${r.stdout.length} chars) ---\n${r.stdout}`;
  return redactValue({ content: [{ type: 'text', text }], isError: true, _meta: meta(r) });
}

/** An error before or instead of a run, in the words of the CLI: `Error [CODE]: message` and the hint. */
export function errorToolResult(err: unknown): CallToolResult {
  const e = err instanceof ComisError ? err : new ComisError('INTERNAL', err instanceof Error ? err.message || String(err) : String(err), { hint: 'This is a bug in comis. Run with COMIS_LOG_LEVEL=debug and report the log.' });
  const text = `Error [${e.code}]: ${redactSecrets(e.message)}${e.hint ? `\nHint: ${redactSecrets(e.hint)}` : ''}`;
  return { content: [{ type: 'text', text }], isError: true, _meta: { 'comis/errorCode': e.code } };
}

/** One signal that fires when either does; `dispose` detaches it from both. */
function eitherSignal(a: AbortSignal, b: AbortSignal | undefined): { signal: AbortSignal; dispose: () => void } {
  const both = new AbortController();
  const fire = (): void => both.abort();
  if (a.aborted || b?.aborted) both.abort();
  a.addEventListener('abort', fire, { once: true });
  b?.addEventListener('abort', fire, { once: true });
  return {
    signal: both.signal,
    dispose: () => {
      a.removeEventListener('abort', fire);
      b?.removeEventListener('abort', fire);
    },
  };
}

/** Starts the server on `input`/`output`. The MCP SDK is loaded here, on first use, never at import. */
export async function startMcpServer(options: McpServeOptions): Promise<McpServeHandle> {
  const [{ Server }, { StdioServerTransport }, { CallToolRequestSchema, ListToolsRequestSchema, McpError, ErrorCode }] = await Promise.all([
    import('@modelcontextprotocol/sdk/server/index.js'),
    import('@modelcontextprotocol/sdk/server/stdio.js'),
    import('@modelcontextprotocol/sdk/types.js'),
  ]);
  const { agent } = options;
  const described = describeAgentTools(agent);
  const server = new Server({ name: 'comis', version: options.version }, { capabilities: { tools: {} }, instructions: INSTRUCTIONS });
  const shutdown = new AbortController();
  let queue: Promise<unknown> = Promise.resolve();
  let admitted = 0;

  const refuseApproval = async (): Promise<boolean> => {
    throw new ComisError('APPROVAL_REQUIRED', `Agent "${agent.id}" requires approval for each run, and comis mcp serve has no terminal to ask on.`, {
      hint: `Nothing was run. Serve an agent without autonomy.approvals (comis mcp serve --agent ID), or run the script with comis orchestrate --yes.`,
    });
  };

  const runOne = async (args: OrchestrateToolArgs, requestSignal: AbortSignal | undefined): Promise<CallToolResult> => {
    const { signal, dispose } = eitherSignal(shutdown.signal, requestSignal);
    try {
      if (signal.aborted) return errorToolResult(new ComisError('USAGE', 'The call was cancelled before its run started; nothing was run.'));
      const outcome = await runAndRecord({
        source: args.script,
        displayName: `mcp-script.${args.language}`,
        language: args.language,
        agent,
        home: options.home,
        sessionKey: options.sessionKey,
        timeoutMs: args.timeoutMs,
        approve: refuseApproval,
        signal,
        onWarning: options.onWarning,
      });
      return runToolResult(outcome.public);
    } catch (err) {
      if (!(err instanceof ComisError)) getLogger().error({ event: 'mcp:serve:error', err }, 'orchestrate call failed');
      return errorToolResult(err);
    } finally {
      dispose();
    }
  };

  const orchestrate = async (raw: unknown, requestSignal: AbortSignal | undefined): Promise<CallToolResult> => {
    let args: OrchestrateToolArgs;
    try {
      args = parseOrchestrateArgs(raw ?? {});
    } catch (err) {
      return errorToolResult(err);
    }
    if (shutdown.signal.aborted) return errorToolResult(new ComisError('USAGE', 'comis mcp serve is shutting down; nothing was run.'));
    if (admitted > MAX_WAITING_RUNS) {
      return {
        content: [{ type: 'text', text: `comis: busy: one run is in progress and ${MAX_WAITING_RUNS} are waiting; nothing was run. Runs are serialized: call again when one finishes.` }],
        isError: true,
      };
    }
    admitted++;
    const turn = queue.then(() => runOne(args, requestSignal));
    queue = turn.catch(() => undefined);
    try {
      return await turn;
    } finally {
      admitted--;
    }
  };

  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: [
      { name: 'orchestrate', title: 'Run one jailed script', description: orchestrateToolDescription(described), inputSchema: ORCHESTRATE_INPUT_SCHEMA as unknown as { type: 'object' } },
      {
        name: 'describe_tools',
        title: "List the jailed SDK's tools",
        description: `What comis_tools offers the scripts of agent "${agent.id}": each tool's name, capability, summary, and the JSON Schemas of its parameters and result; the tools it cannot call and why; how a script imports the SDK.`,
        inputSchema: { type: 'object', properties: {}, additionalProperties: false },
        annotations: { readOnlyHint: true, openWorldHint: false },
      },
    ],
  }));

  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const { name } = request.params;
    if (name === 'orchestrate') return orchestrate(request.params.arguments, extra.signal);
    if (name === 'describe_tools') {
      const extraKeys = Object.keys(request.params.arguments ?? {});
      if (extraKeys.length > 0) return errorToolResult(new ComisError('USAGE', 'describe_tools takes no arguments.', { hint: 'Call it with {}.' }));
      return { content: [{ type: 'text', text: JSON.stringify(described, null, 2) }], structuredContent: described as unknown as Record<string, unknown> };
    }
    // A name the client invented is a protocol error (the spec's -32602), not a tool result.
    throw new McpError(ErrorCode.InvalidParams, `Unknown tool ${JSON.stringify(String(name).slice(0, 64))}: comis offers orchestrate and describe_tools.`);
  });

  let closing: Promise<void> | undefined;
  let markClosed: (reason: McpStopReason) => void = () => undefined;
  const closed = new Promise<McpStopReason>((resolve) => (markClosed = resolve));
  const close = (reason: McpStopReason = 'requested'): Promise<void> =>
    (closing ??= (async () => {
      shutdown.abort();
      // The run in progress ends (killed, cleaned up, recorded) before the server lets go.
      await queue;
      await server.close().catch(() => undefined);
      getLogger().info({ event: 'mcp:serve:stopped', agentId: agent.id, reason }, 'mcp server stopped');
      markClosed(reason);
    })());

  const transport = new StdioServerTransport(options.input, options.output);
  server.onclose = () => void close('transport_closed');
  // The stdio transport does not watch for the end of its input: the client closing stdin means it is gone.
  options.input.once('end', () => void close('input_closed'));
  options.input.once('close', () => void close('input_closed'));
  await server.connect(transport);
  getLogger().info({ event: 'mcp:serve:started', agentId: agent.id, sessionKey: options.sessionKey }, 'mcp server started');
  return { closed, close };
}
