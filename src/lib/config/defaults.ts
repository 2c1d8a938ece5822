/**
 * The embedded defaults as plain data, so a machine with no config file
 * never loads the YAML parser or the schema library. A unit test asserts
 * these objects equal what the zod schema produces from empty input.
 */
import type { AgentConfig, ComisConfig } from './schema.js';

export function defaultAgentConfig(): AgentConfig {
  return {
    autonomy: {
      profile: 'standard',
      role: 'worker',
      write: false,
      approvals: false,
      limits: { timeoutMs: 60_000, memoryMb: 4096, maxProcesses: 64, fileSizeMb: 256, tmpSizeMb: 64, tmpInodes: 16_384, resultFileMb: 8, resultRunMb: 64, workspaceMb: 1024, workspaceInodes: 100_000, stdoutCapBytes: 4 * 1024 * 1024 },
    },
    skills: {
      toolPolicy: { profile: 'full', allow: [], deny: [] },
      execSandbox: { enabled: 'always', readOnlyAllowPaths: [] },
    },
    web: { fetch: { allowHosts: [], denyHosts: [], allowPrivate: [], followRedirects: true, timeoutMs: 30_000 } },
  };
}

export function defaultConfig(agentId: string): ComisConfig {
  return { agents: { [agentId]: defaultAgentConfig() } };
}
