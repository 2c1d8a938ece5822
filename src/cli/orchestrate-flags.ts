/**
 * The flags of `comis orchestrate`, as data: the oclif command and the fast
 * path in bin/comis.js are both built from this table, so they cannot drift.
 */
export interface FlagSpec {
  type: 'string' | 'integer' | 'boolean';
  char?: string;
  env?: string;
  options?: readonly string[];
  min?: number;
  description: string;
}

export const ORCHESTRATE_FLAGS = {
  lang: { type: 'string', options: ['ts', 'js', 'py'], description: 'Script language (default: from the file extension).' },
  agent: { type: 'string', char: 'a', env: 'COMIS_AGENT', description: 'Agent to run as (from config.yaml).' },
  session: { type: 'string', char: 's', env: 'COMIS_SESSION', description: 'Session key to record the run under (default: a new one, printed).' },
  'timeout-ms': { type: 'integer', min: 100, description: 'Wall-clock timeout in ms (default from config, 60000; at most 600000).' },
  yes: { type: 'boolean', char: 'y', description: "Approve the run's capability footprint without asking (when approvals are on)." },
  raw: { type: 'boolean', description: "Write the script's stdout to a terminal as is, control characters and escape sequences included (default: shown escaped when stdout is a TTY)." },
} as const satisfies Record<string, FlagSpec>;

export interface OrchestrateInput {
  script: string;
  lang?: 'ts' | 'js' | 'py' | undefined;
  agent?: string | undefined;
  session?: string | undefined;
  timeoutMs?: number | undefined;
  yes: boolean;
  /** Pass the script's stdout to a terminal unescaped. */
  raw?: boolean;
}
