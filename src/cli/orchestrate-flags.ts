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
  max?: number;
  description: string;
}

export const ORCHESTRATE_FLAGS = {
  lang: { type: 'string', options: ['ts', 'js', 'py'], description: 'Script language (default: from the file extension).' },
  agent: { type: 'string', char: 'a', env: 'COMIS_AGENT', description: 'Agent to run as (from config.yaml).' },
  session: { type: 'string', char: 's', env: 'COMIS_SESSION', description: 'Session key to record the run under (default: a new one, printed).' },
  'timeout-ms': { type: 'integer', min: 0, max: 600_000, description: 'Wall-clock timeout in ms: 100 to 600000, or 0 for the default (from config, 60000).' },
  yes: { type: 'boolean', char: 'y', description: "Approve the run's capability footprint without asking (when approvals are on)." },
  quiet: { type: 'boolean', char: 'q', description: "On success, print nothing but the script's stdout (no closing summary line on stderr)." },
  resume: { type: 'string', description: 'Continue a durable run that timed out or was interrupted: re-spawn its pinned original script (no script argument: new bytes are refused); resume() returns its last checkpoint.' },
  'no-repair': { type: 'boolean', description: "No one-shot repair for this run, even when the agent's model class (nano, small) would get one: the first failure is the result. For debugging." },
  raw: { type: 'boolean', description: "Write the script's stdout to a terminal as is, control characters and escape sequences included (default: shown escaped when stdout is a TTY)." },
} as const satisfies Record<string, FlagSpec>;

export interface OrchestrateInput {
  /** Absent only with `resume`. */
  script?: string | undefined;
  /** The run id of a resumable durable run. */
  resume?: string | undefined;
  lang?: 'ts' | 'js' | 'py' | undefined;
  agent?: string | undefined;
  session?: string | undefined;
  timeoutMs?: number | undefined;
  yes: boolean;
  /** Pass the script's stdout to a terminal unescaped. */
  raw?: boolean;
  /** No closing summary line on success. */
  quiet?: boolean;
  /** No one-shot repair for this run. */
  noRepair?: boolean;
}
