/**
 * The zod schema of `$COMIS_HOME/config.yaml`. It is the single source for
 * validation, for the embedded defaults and for the JSON Schema published in
 * docs/config.schema.json (scripts/build-config-schema.mjs). Every field has a
 * `.describe()`, which is what editors show.
 *
 * Config paths follow the seeds' configuration reference:
 * `agents.<id>.autonomy.*`, `agents.<id>.skills.toolPolicy.*`,
 * `agents.<id>.skills.execSandbox.*`, `agents.<id>.budget.*`,
 * `security.permission.*`.
 */
import { z } from 'zod';

export const AUTONOMY_PROFILES = ['assistant', 'standard', 'unattended', 'max'] as const;
export const AUTONOMY_ROLES = ['worker', 'coordinator'] as const;
export const TOOL_POLICY_PROFILES = [
  'minimal',
  'coding',
  'messaging',
  'supervisor',
  'full',
  'cron-minimal',
  'heartbeat-minimal',
] as const;
export const MODEL_CLASSES = ['nano', 'small', 'mid', 'frontier'] as const;

/** Agent ids name directories and appear in session keys: keep them boring. */
export const AGENT_ID_PATTERN = /^[a-z0-9][a-z0-9_-]{0,63}$/;

const toolNameList = z
  .array(z.string().min(1).max(128))
  .max(256)
  .default([]);

export const jailLimitsSchema = z
  .strictObject({
    timeoutMs: z
      .number()
      .int()
      .min(100)
      .max(600_000)
      .default(60_000)
      .describe('Default wall-clock timeout of one orchestrate run, in ms (clamped to 600000).'),
    memoryMb: z
      .number()
      .int()
      .min(64)
      .max(65_536)
      .default(4096)
      .describe('Address-space limit of every jailed process, in MiB (node needs several GiB of address space for WebAssembly).'),
    maxProcesses: z
      .number()
      .int()
      .min(4)
      .max(4096)
      .default(64)
      .describe('Most processes a run may have at once (enforced with an unprivileged uid, so it holds when comis runs as root).'),
    fileSizeMb: z
      .number()
      .int()
      .min(1)
      .max(65_536)
      .default(256)
      .describe('Largest file a jailed process may write, in MiB.'),
    tmpSizeMb: z
      .number()
      .int()
      .min(1)
      .max(65_536)
      .default(64)
      .describe('Size of the private RAM-backed /tmp and /dev/shm inside the jail, in MiB.'),
    resultFileMb: z
      .number()
      .int()
      .min(1)
      .max(4096)
      .default(8)
      .describe('Largest single ResultRef a tool may materialize, in MiB (a bigger result is a tool error, never a partial file).'),
    resultRunMb: z
      .number()
      .int()
      .min(1)
      .max(16_384)
      .default(64)
      .describe("Total bytes one run may materialize (ResultRefs and writes together), in MiB."),
    workspaceMb: z
      .number()
      .int()
      .min(1)
      .max(1_048_576)
      .default(1024)
      .describe('Most disk the whole workspace may use while a run is in it, in MiB of allocated blocks (what was there before counts too); a run past it is killed.'),
    workspaceInodes: z
      .number()
      .int()
      .min(100)
      .max(1_000_000)
      .default(100_000)
      .describe('Most entries (files, directories, links) the whole workspace may hold while a run is in it; a run past it is killed.'),
    stdoutCapBytes: z
      .number()
      .int()
      .min(1024)
      .max(64 * 1024 * 1024)
      .default(4 * 1024 * 1024)
      .describe('Hard cap on script stdout; a run that prints more is killed (failureClass stdout_cap).'),
  })
  .describe('Resource bounds of the orchestrate jail.');

export const modelSchema = z
  .strictObject({
    baseUrl: z.url().describe('OpenAI-compatible chat-completions base URL, e.g. http://127.0.0.1:11434/v1.'),
    name: z.string().min(1).max(200).describe('Model name sent in each request.'),
    class: z.enum(MODEL_CLASSES).default('mid').describe('Capability class; one-shot repair is on for nano/small only.'),
    apiKeyEnv: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/)
      .optional()
      .describe('Name of the environment variable that holds the API key (preferred over apiKey).'),
    apiKey: z.string().min(1).optional().describe('API key. Prefer apiKeyEnv; a key written here is never printed.'),
  })
  .describe('The utility model used for one-shot repair and summary condensation.');

export const autonomySchema = z
  .strictObject({
    profile: z
      .enum(AUTONOMY_PROFILES)
      .default('standard')
      .describe('How much the agent may do: its capability set. standard and up hold orch:read, orch:web and the floor caps.'),
    role: z
      .enum(AUTONOMY_ROLES)
      .default('worker')
      .describe('How the agent spends its own window. coordinator narrows the tool surface; it never widens a capability.'),
    write: z
      .boolean()
      .default(false)
      .describe('Turns on the typed write surface (comis_tools.write). Off by default: the orchestrate surface is read-only.'),
    mcp: z
      .strictObject({
        allow: z
          .array(z.string().regex(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_*-]+)?$/, 'expected "server" or "server.tool"'))
          .default([])
          .describe('MCP servers (or server.tool pairs) reachable from comis_tools.mcp. Empty: deny by absence.'),
      })
      .default({ allow: [] })
      .describe('Connected MCP tools.'),
    durability: z
      .strictObject({
        enabled: z.boolean().default(false).describe('The durability posture (durable run rows, boot sweep).'),
        orchestrateResume: z
          .boolean()
          .default(false)
          .describe('Checkpoint/resume for orchestrate runs; a timed-out run leaves a resumable row.'),
      })
      .default({ enabled: false, orchestrateResume: false })
      .describe('Resumable runs (off by default).'),
    approvals: z
      .boolean()
      .default(false)
      .describe('Ask for one approval of the whole capability footprint before each orchestrate run.'),
    limits: jailLimitsSchema.default(jailLimitsSchema.parse({})),
  })
  .describe('The autonomy block: profile, role and surfaces of the orchestrate tool.');

export const toolPolicySchema = z
  .strictObject({
    profile: z.enum(TOOL_POLICY_PROFILES).default('full').describe('Agent tool-policy profile; narrow it for untrusted input.'),
    allow: toolNameList.describe('Additional tools to allow (with group expansion).'),
    deny: toolNameList.describe('Tools to deny; deny always wins over allow.'),
  })
  .describe('Tool policy: profile baseline, then allow additions, then deny removals.');

export const execSandboxSchema = z
  .strictObject({
    enabled: z
      .enum(['always', 'never'])
      .default('always')
      .describe('OS-level sandbox mode for exec. orchestrate always requires the jail, whatever this says.'),
    readOnlyAllowPaths: z
      .array(z.string().min(1))
      .default([])
      .describe('Additional host paths bound read-only inside the jail (screened: /etc, ~/.ssh, $COMIS_HOME and similar are refused).'),
  })
  .describe('The OS-level exec sandbox.');

export const agentSchema = z
  .strictObject({
    workspace: z
      .string()
      .min(1)
      .optional()
      .describe('The agent workspace directory (default $COMIS_HOME/workspaces/<id>). Scripts run here; it persists between runs.'),
    model: z
      .union([z.string().min(1).describe('A model name (no repair endpoint configured).'), modelSchema])
      .optional()
      .describe('The agent model.'),
    autonomy: autonomySchema.default(autonomySchema.parse({})),
    skills: z
      .strictObject({
        toolPolicy: toolPolicySchema.default(toolPolicySchema.parse({})),
        execSandbox: execSandboxSchema.default(execSandboxSchema.parse({})),
      })
      .default({ toolPolicy: toolPolicySchema.parse({}), execSandbox: execSandboxSchema.parse({}) })
      .describe('Skills and sandbox settings.'),
    budget: z
      .strictObject({
        maxTokens: z.number().int().positive().optional().describe('Maximum tokens per execution.'),
        maxCostUsd: z.number().positive().optional().describe('Maximum cost per execution, in USD.'),
      })
      .default({})
      .describe('Spend limits.'),
  })
  .describe('One agent.');

export const configSchema = z
  .strictObject({
    $schema: z.string().optional().describe('Path or URL of the JSON Schema, for editors.'),
    defaultAgent: z
      .string()
      .regex(AGENT_ID_PATTERN)
      .optional()
      .describe('The agent used when neither --agent nor COMIS_AGENT is given (default: "default", else the only agent).'),
    agents: z
      .record(z.string().regex(AGENT_ID_PATTERN, 'agent ids are lowercase letters, digits, "-" and "_"'), agentSchema)
      .default({})
      .describe('Agents, by id.'),
    security: z
      .strictObject({
        permission: z
          .strictObject({
            enableNodePermissions: z.boolean().default(false).describe('Enable the Node.js permission model on covered paths.'),
            allowedFsPaths: z.array(z.string()).default([]).describe('Allowed file system paths.'),
            allowedNetHosts: z.array(z.string()).default([]).describe('Allowed network hosts.'),
          })
          .default({ enableNodePermissions: false, allowedFsPaths: [], allowedNetHosts: [] }),
      })
      .default({ permission: { enableNodePermissions: false, allowedFsPaths: [], allowedNetHosts: [] } })
      .describe('Security settings.'),
  })
  .describe('comis configuration ($COMIS_HOME/config.yaml).');

export type ComisConfig = z.infer<typeof configSchema>;
export type AgentConfig = z.infer<typeof agentSchema>;
export type AutonomyConfig = z.infer<typeof autonomySchema>;
export type JailLimits = z.infer<typeof jailLimitsSchema>;
export type AutonomyProfile = (typeof AUTONOMY_PROFILES)[number];

/** Keys whose values are secrets: never echoed, in errors or elsewhere. */
export const SECRET_KEYS = new Set(['apiKey']);
