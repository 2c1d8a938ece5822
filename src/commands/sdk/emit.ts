import { Flags } from '@oclif/core';

import { BaseCommand } from '../../cli/base-command.js';
import { ComisError, ExitCode } from '../../lib/errors.js';

export interface SdkEmitResult {
  dir: string;
  lang: string;
  /** With --mcp: the agent whose allowlisted MCP tools are typed, and those tools ("server.tool"). */
  mcp?: { agentId: string; tools: string[] };
  mode: 'write' | 'check';
  files: string[];
  drift: { file: string; status: 'missing' | 'changed'; line?: number }[];
}

export default class SdkEmit extends BaseCommand {
  static override summary = 'Write the typed comis_tools SDK that jailed scripts import.';

  static override description = `Generates the SDK from the single tool-to-capability table, the same table the capability socket gates on:
  comis_tools.ts              typed source, for TypeScript scripts and editors
  comis_tools.js + .d.ts      runtime for JavaScript (and transpiled TypeScript)
  comis_tools.py              synchronous Python module, standard library only
Output is deterministic: emitting twice gives byte-identical files, and it is exactly what \`comis orchestrate\` mounts into the jail. Use --check in CI to fail when a committed copy drifted.

With --mcp, the .ts and .d.ts also type the MCP tools an agent may call: every server its autonomy.mcp.allow names is started once, asked for its tools and closed, and each allowlisted tool becomes a method typed from its input schema, so comis_tools.mcp.everything.echo({ message: "hi" }) type-checks and a wrong or misspelt argument fails tsc. The .js and .py are the same as without --mcp (the jail mounts the untyped SDK; types are for your editor and tsc). A server that cannot be asked fails the emit and nothing is written.`;

  static override examples = [
    { description: 'Write all four files into ./sdk', command: '<%= config.bin %> <%= command.id %> --out sdk' },
    { description: 'Only the Python module', command: '<%= config.bin %> <%= command.id %> --lang py --out tools' },
    { description: 'CI: fail (exit 1) when ./sdk differs from what would be emitted', command: '<%= config.bin %> <%= command.id %> --check sdk' },
    { description: 'Type the MCP tools agent ops may call (starts its allowlisted servers once)', command: '<%= config.bin %> <%= command.id %> --mcp --agent ops --out sdk' },
  ];

  static override flags = {
    out: Flags.string({ char: 'o', description: 'Directory to write the SDK into.', default: '.', exclusive: ['check'] }),
    lang: Flags.string({
      char: 'l',
      description: 'Which SDK flavour to emit.',
      options: ['ts', 'js', 'py', 'all'],
      default: 'all',
    }),
    check: Flags.string({
      description: 'Do not write: compare the files in DIR with what would be emitted; exit 1 on drift.',
      helpValue: 'DIR',
    }),
    mcp: Flags.boolean({ description: "Type the agent's allowlisted MCP tools in the .ts and .d.ts (asks its servers for their input schemas)." }),
    agent: Flags.string({ char: 'a', description: 'With --mcp: the agent whose autonomy.mcp.allow to type (from config.yaml; default: the default agent).', dependsOn: ['mcp'] }),
  };

  async run(): Promise<SdkEmitResult> {
    const { flags } = await this.parse(SdkEmit);
    const { emitSdk } = await import('../../lib/sdk/emit.js');
    const { checkSdkFiles, writeSdkFiles } = await import('../../lib/sdk/files.js');
    const lang = flags.lang as 'ts' | 'js' | 'py' | 'all';
    const mcp = flags.mcp ? await this.mcpTyping(flags.agent, lang) : undefined;
    const files = emitSdk(lang, undefined, mcp ? { mcp } : {});
    const mcpReport = mcp ? { mcp: { agentId: mcp.agentId, tools: mcp.tools.map((t) => `${t.server}.${t.tool}`).sort() } } : {};
    if (flags.check !== undefined) {
      const drift = checkSdkFiles(flags.check, files);
      if (drift.length > 0) {
        this.setExitStatus(ExitCode.FAILURE);
        if (!this.jsonEnabled()) {
          const lines = drift.map((d) => `  ${d.file}: ${d.status === 'missing' ? 'missing' : `differs from line ${d.line}`}`);
          process.stderr.write(`SDK drift in ${flags.check} (${drift.length} file${drift.length === 1 ? '' : 's'}):\n${lines.join('\n')}\nRun \`comis sdk emit --out ${flags.check}\` to regenerate.\n`);
        }
      } else if (!this.jsonEnabled()) {
        this.log(`SDK in ${flags.check} is up to date (${[...files.keys()].join(', ')}).`);
      }
      return { dir: flags.check, lang, ...mcpReport, mode: 'check', files: [...files.keys()], drift };
    }
    if (flags.out.trim() === '') throw new ComisError('USAGE', '--out must name a directory.');
    const written = writeSdkFiles(flags.out, files);
    if (!this.jsonEnabled()) for (const file of written) this.log(`wrote ${file}`);
    return { dir: flags.out, lang, ...mcpReport, mode: 'write', files: [...files.keys()], drift: [] };
  }

  /** The agent's allowlisted MCP tools with their schemas; any server that cannot be asked fails the emit before anything is written. */
  private async mcpTyping(agentFlag: string | undefined, lang: string): Promise<import('../../lib/sdk/emit.js').McpTyping> {
    if (lang === 'py') throw new ComisError('USAGE', '--mcp types the TypeScript files (.ts, .d.ts); the Python module has no types.', { hint: 'Use --lang ts, js or all with --mcp.' });
    const { loadConfig, resolveAgent } = await import('../../lib/config/load.js');
    const loaded = await loadConfig();
    const agent = resolveAgent(loaded, agentFlag);
    const { allowlistedToolSchemas } = await import('../../lib/mcp/tool-schemas.js');
    const found = await allowlistedToolSchemas({ servers: agent.mcpServers ?? {}, allow: agent.config.autonomy.mcp?.allow, home: loaded.home });
    if (found.unavailable.length > 0) {
      const first = found.unavailable[0]!;
      throw new ComisError('IO_ERROR', `MCP server "${first.server}" (on agents.${agent.id}.autonomy.mcp.allow) could not be asked for its tools: ${first.reason}`, {
        hint: 'Nothing was written. `comis mcp list` shows each server and why it does not start; fix mcp.servers or the allowlist.',
        exitCode: ExitCode.FAILURE,
        details: { unavailable: found.unavailable.map((u) => ({ server: u.server, code: u.code })) },
      });
    }
    return { agentId: agent.id, tools: found.tools };
  }
}
