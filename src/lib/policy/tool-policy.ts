/**
 * Tool policy (seed 002, "Tool Policy Enforcement"): which registered tools an
 * agent may call, from `agents.<id>.skills.toolPolicy: {profile, allow, deny}`.
 *
 * Resolution order, exactly as the seed gives it:
 *   1. profile baseline: the profile's tool list (`full`: every tool);
 *   2. allow additions, with group expansion;
 *   3. deny removals, with group expansion: deny always wins.
 * An unknown profile contributes nothing, so the result is the allow list
 * only (fail closed). Every tool that is not allowed is reported with why:
 * `explicit_deny` with the deny entry that removed it, or `not_in_profile`.
 *
 * Pure data and functions: no I/O, no config loading, no schema library, so
 * the dispatcher, the pre-flight and the SDK emitter can all use it.
 */

/** The built-in profiles, with the seed's tool lists verbatim. `full` is unrestricted. */
export const TOOL_POLICY_PROFILES: Readonly<Record<string, readonly string[] | 'all'>> = {
  minimal: ['read', 'write'],
  coding: ['read', 'edit', 'write', 'grep', 'find', 'ls', 'apply_patch', 'exec', 'process'],
  messaging: ['message', 'session_status'],
  supervisor: ['agents_manage', 'obs_query', 'sessions_manage', 'memory_manage', 'channels_manage', 'tokens_manage', 'models_manage', 'skills_manage', 'mcp_manage', 'heartbeat_manage'],
  full: 'all',
  'cron-minimal': ['web_search', 'message', 'read_file', 'write_file', 'list_dir', 'memory_store', 'memory_search', 'cron', 'discover'],
  'heartbeat-minimal': ['message', 'memory_store', 'memory_search', 'discover'],
};

/**
 * Groups usable in allow and deny. The seeds name the groups but not their
 * members; these are the members over the tool names comis uses (and the
 * seed's names for tools comis does not have yet, so a policy written today
 * keeps its meaning when they land).
 */
export const TOOL_GROUPS: Readonly<Record<string, readonly string[]>> = {
  'group:fs': ['read', 'grep', 'write', 'edit', 'find', 'ls', 'apply_patch'],
  'group:read': ['read', 'grep', 'ref_sql', 'ref_jsonpath'],
  'group:resultref': ['ref_sql', 'ref_jsonpath'],
  'group:web': ['web_search', 'web_fetch'],
  'group:memory': ['memory_search', 'memory_get', 'memory_store'],
  'group:messaging': ['message', 'message_send', 'message_reply', 'message_react'],
  'group:sessions': ['sessions_spawn', 'sessions_list', 'sessions_history', 'session_status', 'session_search'],
  'group:mcp': ['mcp'],
};

/**
 * Seed tool names that stand for comis_tools methods of another name: the
 * seed's one `message` tool is comis's `message_send`/`reply`/`react`, and
 * cron-minimal's `read_file`/`write_file` are `read`/`write`.
 */
const ALIASES: Readonly<Record<string, readonly string[]>> = {
  message: ['message_send', 'message_reply', 'message_react'],
  read_file: ['read'],
  write_file: ['write'],
};

export interface ToolPolicyConfig {
  profile: string;
  allow: readonly string[];
  deny: readonly string[];
}

export type DropReason = 'explicit_deny' | 'not_in_profile';

export interface DroppedTool {
  tool: string;
  why: DropReason;
  /** For explicit_deny: the deny entry that removed it (a tool or group name). */
  entry?: string;
}

export interface ResolvedToolPolicy {
  /** Tools of the universe the agent may call, in universe order. */
  allowed: string[];
  /** Tools of the universe it may not call, with why, in universe order. */
  dropped: DroppedTool[];
}

/** One allow/deny entry → the tool names it stands for (itself, its aliases, or its group's members). */
export function expandEntry(entry: string): string[] {
  const group = TOOL_GROUPS[entry];
  const names = group ? [...group] : [entry];
  return names.flatMap((n) => [n, ...(ALIASES[n] ?? [])]);
}

/**
 * Resolves a policy over `universe` (the tool names that exist for the
 * agent): profile → allow → deny, deny wins, unknown profile = allow only.
 */
export function resolveToolPolicy(policy: ToolPolicyConfig, universe: readonly string[]): ResolvedToolPolicy {
  const baseline = Object.hasOwn(TOOL_POLICY_PROFILES, policy.profile) ? TOOL_POLICY_PROFILES[policy.profile]! : [];
  const allowed = new Set<string>(baseline === 'all' ? universe : baseline.flatMap(expandEntry));
  for (const entry of policy.allow) for (const name of expandEntry(entry)) allowed.add(name);
  const deniedBy = new Map<string, string>();
  for (const entry of policy.deny) for (const name of expandEntry(entry)) if (!deniedBy.has(name)) deniedBy.set(name, entry);
  const result: ResolvedToolPolicy = { allowed: [], dropped: [] };
  for (const tool of universe) {
    const entry = deniedBy.get(tool);
    if (entry !== undefined) result.dropped.push({ tool, why: 'explicit_deny', entry });
    else if (!allowed.has(tool)) result.dropped.push({ tool, why: 'not_in_profile' });
    else result.allowed.push(tool);
  }
  return result;
}
