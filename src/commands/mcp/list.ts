import { Flags } from '@oclif/core';

import { BaseCommand } from '../../cli/base-command.js';
import { outStyle } from '../../cli/color.js';
import { ExitCode } from '../../lib/errors.js';
import type { McpListReport } from '../../lib/mcp/inspect.js';

function render(r: McpListReport): string {
  const style = outStyle();
  const lines: string[] = [];
  if (r.servers.length === 0) {
    lines.push('No MCP servers are configured (mcp.servers in config.yaml): comis_tools.mcp reaches nothing.');
    return lines.join('\n');
  }
  lines.push(`MCP servers, as agent "${r.agentId}" sees them (autonomy.mcp.allow: ${r.allow.length > 0 ? r.allow.join(', ') : 'empty, so none'}):`);
  for (const s of r.servers) {
    const state = s.starts ? style.good('starts') : style.bad(`does not start (${s.error?.code ?? 'error'})`);
    lines.push('', `${s.name}  ${s.transport}  ${state}  ${s.target}`);
    if (s.envNames.length > 0) lines.push(`  env/headers (names only): ${s.envNames.join(', ')}`);
    if (s.error) lines.push(`  ${s.error.message}`);
    for (const t of s.tools) {
      const mark = t.allowlisted ? style.good('allowed') : style.dim('   -   ');
      lines.push(`  ${mark}  ${t.name}${t.description ? `  ${style.dim(t.description)}` : ''}`);
    }
    if (s.starts && !s.allowlisted) lines.push(`  (not on agents.${r.agentId}.autonomy.mcp.allow: add "${s.name}" or "${s.name}.<tool>" to open it)`);
  }
  for (const e of r.unknownAllowEntries) lines.push('', `note: allow entry "${e}" names no configured server`);
  return lines.join('\n');
}

export default class McpList extends BaseCommand {
  static override summary = 'List the configured MCP servers, whether each starts, its tools, and which the agent may call.';

  static override description = `Starts (or connects to) every server under mcp.servers in config.yaml once, lists its tools, marks those the agent's autonomy.mcp.allow opens, and closes it again (its whole process tree reaped). What it shows is exactly what a script of that agent could reach through comis_tools.mcp. Secret values are never shown, only the names of env and header entries.

Exit code: 0 when every configured server starts, 1 when one does not.`;

  static override examples = [
    { description: 'The servers and what the default agent may call', command: '<%= config.bin %> <%= command.id %>' },
    { description: 'As agent ops, as JSON', command: '<%= config.bin %> <%= command.id %> --agent ops --json' },
  ];

  static override flags = {
    agent: Flags.string({ char: 'a', env: 'COMIS_AGENT', description: 'Agent whose allowlist to show (from config.yaml).' }),
  };

  async run(): Promise<McpListReport> {
    const { flags } = await this.parse(McpList);
    const { loadConfig, resolveAgent } = await import('../../lib/config/load.js');
    const loaded = await loadConfig();
    const agent = resolveAgent(loaded, flags.agent);
    const { inspectMcpServers } = await import('../../lib/mcp/inspect.js');
    const report = await inspectMcpServers({ servers: agent.mcpServers ?? {}, allow: agent.config.autonomy.mcp?.allow, agentId: agent.id, home: loaded.home });
    if (report.servers.some((s) => !s.starts)) this.setExitStatus(ExitCode.FAILURE);
    if (!this.jsonEnabled()) this.log(render(report));
    return report;
  }
}
