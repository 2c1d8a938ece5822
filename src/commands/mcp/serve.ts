import { readFileSync } from 'node:fs';

import { Flags } from '@oclif/core';

import { BaseCommand } from '../../cli/base-command.js';
import { ORCHESTRATE_FLAGS as F } from '../../cli/orchestrate-flags.js';

const STOP_WORDS = {
  input_closed: 'the client closed stdin (a run in progress was killed and recorded)',
  transport_closed: 'the protocol stream closed',
  requested: 'signalled (a run in progress was killed and recorded)',
} as const;

export default class McpServe extends BaseCommand {
  static override summary = 'Serve comis over MCP (stdio): any MCP client gets orchestrate, one jailed script per call.';

  static override description = `Runs comis as an MCP server on stdin/stdout, for one agent, so an MCP client's model can write ONE script that chains tools in the jail instead of calling tools one by one. Two tools:

orchestrate({script, language, timeoutMs}): runs the script (language ts, js or py; timeoutMs 100 to 600000, or 0 for the default) exactly as \`comis orchestrate\` would as that agent. Only its stdout comes back; a failure is isError with the failure class and the redacted stderr tail; a refusal is isError with the reason.

describe_tools(): what comis_tools offers the agent's scripts: names, capabilities, summaries, parameter and result schemas, and what it cannot call and why.

Every run is recorded like a CLI run (\`comis explain --last\` shows it), all under one session per server. Runs are serialized, one at a time. The agent's capabilities, tool policy, limits and jail apply unchanged: the MCP connection widens nothing, and an agent with autonomy.approvals is refused per run (stdin is the protocol: there is no terminal to ask on).

stdout carries only the protocol; diagnostics go to stderr and the log. The server exits when stdin closes (or on SIGTERM), killing a run in progress. Config is read once, at start. --json changes nothing: there is no result to print.

Client config (.mcp.json, Cursor's mcp.json): {"mcpServers": {"comis": {"command": "comis", "args": ["mcp", "serve", "--agent", "default"]}}}`;

  static override examples = [
    { description: 'Serve the default agent (an MCP client starts this, not you)', command: '<%= config.bin %> <%= command.id %>' },
    { description: 'Serve the agent "research", its runs under a session key you choose', command: '<%= config.bin %> <%= command.id %> --agent research --session s-review' },
    { description: 'Register it with Claude Code', command: 'claude mcp add comis -- <%= config.bin %> <%= command.id %> --agent default' },
  ];

  static override flags = {
    agent: Flags.string({ char: F.agent.char, description: 'Agent whose scripts the client runs (from config.yaml).', env: F.agent.env }),
    session: Flags.string({ char: F.session.char, description: 'Session key to record every run of this server under (default: a new one, logged to stderr).', env: F.session.env }),
  };

  // stdout is the protocol's: no JSON envelope, and errors go to stderr as text, with or without --json.
  public override jsonEnabled(): boolean {
    return false;
  }

  async run(): Promise<void> {
    const { flags } = await this.parse(McpServe);
    const { loadConfig, resolveAgent } = await import('../../lib/config/load.js');
    const loaded = await loadConfig();
    const agent = resolveAgent(loaded, flags.agent);
    const { assertGetsOrchestrate } = await import('../../lib/policy/surface.js');
    // An agent without orchestrate would refuse every call: say so now, before a client connects.
    assertGetsOrchestrate(agent);
    const { newSessionKey } = await import('../../lib/orchestrate/execute.js');
    const sessionKey = flags.session ?? newSessionKey();
    const { takeStdoutForProtocol } = await import('../../cli/protocol-stdout.js');
    const output = takeStdoutForProtocol();
    const { startMcpServer } = await import('../../cli/mcp-serve.js');
    const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string };
    const server = await startMcpServer({ agent, home: loaded.home, sessionKey, version: pkg.version, input: process.stdin, output, onWarning: (m) => this.addWarning(m) });
    process.stderr.write(`comis: serving agent "${agent.id}" over MCP on stdio, session ${sessionKey}\n`);
    // Started by hand: say what it waits for, rather than sit silent.
    if (process.stdin.isTTY) process.stderr.write('comis: stdin is a terminal; an MCP client (claude mcp add, .mcp.json) starts this command and speaks JSON-RPC on stdin. Ctrl-D stops it.\n');
    const stop = (): void => void server.close('requested');
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
    const reason = await server.closed;
    process.off('SIGTERM', stop);
    process.off('SIGINT', stop);
    process.stderr.write(`comis: MCP server stopped: ${STOP_WORDS[reason]}\n`);
  }
}
