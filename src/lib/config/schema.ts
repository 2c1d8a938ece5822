/**
 * The zod schema of `$COMIS_HOME/config.yaml`. It is the single source for
 * validation, for the embedded defaults and for the JSON Schema published in
 * docs/config.schema.json (scripts/build-config-schema.mjs). Every field has a
 * `.describe()`, which is what editors show.
 *
 * Config paths follow the seeds' configuration reference:
 * `agents.<id>.autonomy.*`, `agents.<id>.skills.toolPolicy.*`,
 * `agents.<id>.skills.execSandbox.*`.
 *
 * Honesty rule: every key here has an effect proven by a test (the table in
 * test/config/key-proofs.test.ts). Keys the seeds define that comis does not
 * implement yet (`budget`,
 * `security.permission`) are not in this schema: the loader refuses them
 * with "`<key>` is not supported yet" at their file and line (load.ts).
 */
import { z } from 'zod';

import { autonomyMcpSchema, mcpConfigSchema } from './mcp-schema.js';
import { modelSchema } from './model-schema.js';
import { autonomyMessageSchema, channelsSchema } from './message-schema.js';
import { webSchema } from './web-schema.js';

export const AUTONOMY_PROFILES = ['assistant', 'standard', 'unattended', 'max'] as const;
export const AUTONOMY_ROLES = ['worker', 'coordinator'] as const;
export const TOOL_POLICY_PROFILES = ['minimal', 'coding', 'messaging', 'supervisor', 'full', 'cron-minimal', 'heartbeat-minimal'] as const;

/** Agent ids name directories and appear in session keys: keep them boring. */
export const AGENT_ID_PATTERN = /^[a-z0-9][a-z0-9_-]{0,63}$/;

const toolNameList = z.array(z.string().min(1).max(128)).max(256).default([]);

export const jailLimitsSchema = z
  .strictObject({
    timeoutMs: z.number().int().min(100).max(600_000).default(60_000).describe('Default wall-clock timeout of one orchestrate run, in ms (clamped to 600000).'),
    memoryMb: z.number().int().min(64).max(65_536).default(4096).describe('Address-space limit of every jailed process, in MiB (node needs several GiB of address space for WebAssembly).'),
    maxProcesses: z.number().int().min(4).max(4096).default(64).describe('Most processes a run may have at once (enforced with an unprivileged uid, so it holds when comis runs as root).'),
    fileSizeMb: z.number().int().min(1).max(65_536).default(256).describe('Largest file a jailed process may write, in MiB.'),
    tmpSizeMb: z.number().int().min(1).max(65_536).default(64).describe('Size of the private RAM-backed /tmp and /dev/shm inside the jail, in MiB.'),
    tmpInodes: z.number().int().min(64).max(1_000_000).default(16_384).describe('Most files, directories and links in each of the private /tmp and /dev/shm (the tmpfs nr_inodes bound; each inode is kernel memory no byte limit counts).'),
    resultFileMb: z.number().int().min(1).max(4096).default(8).describe('Largest single ResultRef a tool may materialize, in MiB (a bigger result is a tool error, never a partial file).'),
    resultRunMb: z.number().int().min(1).max(16_384).default(64).describe('Total bytes one run may materialize (ResultRefs and writes together), in MiB.'),
    workspaceMb: z.number().int().min(1).max(1_048_576).default(1024).describe('Most disk the whole workspace may use while a run is in it, in MiB of allocated blocks (what was there before counts too); a run past it is killed.'),
    workspaceInodes: z.number().int().min(100).max(1_000_000).default(100_000).describe('Most entries (files, directories, links) the whole workspace may hold while a run is in it; a run past it is killed.'),
    stdoutCapBytes: z
      .number()
      .int()
      .min(1024)
      .max(64 * 1024 * 1024)
      .default(4 * 1024 * 1024)
      .describe('Hard cap on script stdout; a run that prints more is killed (failureClass stdout_cap).'),
  })
  .describe('Resource bounds of the orchestrate jail.');

/**
 * Seed 001, "Resumable runs": the durability posture. `orchestrateResume`
 * acts only inside an enabled block (`enabled: true`); on its own it is
 * refused rather than silently inert. Both are off by default.
 */
export const durabilitySchema = z
  .strictObject({
    enabled: z.boolean().default(false).describe('Turns the durability posture on for this agent. Off by default; the durability features below act only when it is true.'),
    orchestrateResume: z
      .boolean()
      .default(false)
      .describe(
        'With enabled: true, orchestrate runs are durable: checkpoint()/resume() in the SDK, a timed-out run stays resumable (comis orchestrate --resume <runId>), a run interrupted by a crash is reported, and comis replay <runId> re-runs it offline. Off by default.',
      ),
  })
  .superRefine((d, ctx) => {
    if (d.orchestrateResume && !d.enabled) {
      ctx.addIssue({ code: 'custom', path: ['orchestrateResume'], message: 'orchestrateResume acts only inside an enabled durability block: set durability.enabled: true as well, or remove orchestrateResume' });
    }
  })
  .describe('Durable runs (resume after a timeout or a crash, replay). Off by default.');

export const autonomySchema = z
  .strictObject({
    profile: z.enum(AUTONOMY_PROFILES).default('standard').describe('How much the agent may do: its capability set. assistant holds none and gets no orchestrate; standard (default), unattended and max hold the floor capabilities.'),
    role: z.enum(AUTONOMY_ROLES).default('worker').describe('How the agent spends its own window. coordinator: its own scripts get read-only tools and a read-only workspace (no write, no message); it never widens a capability.'),
    write: z.boolean().default(false).describe('Turns on the typed write surface (comis_tools.write). Off by default: the orchestrate surface is read-only.'),
    approvals: z.boolean().default(false).describe('Ask for one approval of the whole capability footprint before each orchestrate run.'),
    // Optional with no default, so the embedded defaults (defaults.ts) need no mcp block.
    mcp: autonomyMcpSchema.optional(),
    message: autonomyMessageSchema.optional(),
    // Optional with no default, for the same reason.
    durability: durabilitySchema.optional(),
    limits: jailLimitsSchema.default(jailLimitsSchema.parse({})),
  })
  .describe('The autonomy block: profile, role and surfaces of the orchestrate tool.');

export const toolPolicySchema = z
  .strictObject({
    profile: z
      .string()
      .min(1)
      .max(64)
      .default('full')
      .describe(`Agent tool-policy profile (${TOOL_POLICY_PROFILES.join(', ')}); an unknown name allows only the allow list. Narrow it for untrusted input.`),
    allow: toolNameList.describe('Additional tools to allow, by name or group (group:fs, group:read, group:resultref, group:web, group:memory, group:messaging, group:sessions, group:mcp).'),
    deny: toolNameList.describe('Tools to deny, by name or group; deny always wins over allow.'),
  })
  .describe('Tool policy: profile baseline, then allow additions, then deny removals.');

export const execSandboxSchema = z
  .strictObject({
    enabled: z.enum(['always']).default('always').describe('OS-level sandbox mode. Only "always": orchestrate never runs a script unjailed, so "never" is refused.'),
    readOnlyAllowPaths: z
      .array(z.string().min(1))
      .default([])
      .describe('Additional host paths bound read-only inside the jail, at the same path (screened: /etc, /root, ~/.ssh, $COMIS_HOME and similar, sockets and missing paths are refused).'),
    jailUidRange: z
      .strictObject({
        min: z.number().int().min(65_536).max(2_147_483_646).describe('Lowest uid.'),
        max: z.number().int().min(65_536).max(2_147_483_646).describe('Highest uid.'),
      })
      .refine((r) => r.min <= r.max, { message: 'min must not exceed max' })
      .optional()
      .describe('As root: the host uids jails are allocated from, one per workspace, recorded in the store (default 1879048192-2080374783). Every /etc/subuid and /etc/subgid grant and every passwd/group id is skipped.'),
  })
  .describe('The OS-level exec sandbox.');

export const agentSchema = z
  .strictObject({
    workspace: z.string().min(1).optional().describe('The agent workspace directory (default $COMIS_HOME/workspaces/<id>). Scripts run here; it persists between runs.'),
    autonomy: autonomySchema.default(autonomySchema.parse({})),
    skills: z
      .strictObject({
        toolPolicy: toolPolicySchema.default(toolPolicySchema.parse({})),
        execSandbox: execSandboxSchema.default(execSandboxSchema.parse({})),
      })
      .default({ toolPolicy: toolPolicySchema.parse({}), execSandbox: execSandboxSchema.parse({}) })
      .describe('Skills and sandbox settings.'),
    web: webSchema.default(webSchema.parse({})),
    // Optional with no default: no model configured means nothing to ask (no repair).
    model: modelSchema.optional(),
  })
  .describe('One agent.');

export const configSchema = z
  .strictObject({
    $schema: z.string().optional().describe('Path or URL of the JSON Schema, for editors.'),
    defaultAgent: z.string().regex(AGENT_ID_PATTERN).optional().describe('The agent used when neither --agent nor COMIS_AGENT is given (default: "default", else the only agent).'),
    agents: z
      .record(z.string().regex(AGENT_ID_PATTERN, 'agent ids are lowercase letters, digits, "-" and "_"'), agentSchema)
      .nullish()
      .transform((v) => v ?? {})
      .describe('Agents, by id. A file that defines none keeps the embedded agent "default".'),
    mcp: mcpConfigSchema.optional(),
    channels: channelsSchema.optional(),
    security: z.strictObject({}).nullish().describe('Security settings. security.permission (the Node.js permission model) is not supported yet and is refused.'),
  })
  .describe('comis configuration ($COMIS_HOME/config.yaml).');

export type ComisConfig = z.infer<typeof configSchema>;
export type AgentConfig = z.infer<typeof agentSchema>;
export type JailLimits = z.infer<typeof jailLimitsSchema>;
export type AutonomyProfile = (typeof AUTONOMY_PROFILES)[number];
