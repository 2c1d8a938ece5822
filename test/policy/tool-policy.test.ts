import { describe, expect, it } from 'vitest';

import { CAPABILITIES, PROFILE_CAPABILITIES } from '../../src/lib/capabilities/capabilities.js';
import { TOOL_TABLE } from '../../src/lib/capabilities/tool-table.js';
import { defaultAgentConfig } from '../../src/lib/config/defaults.js';
import { TOOL_POLICY_PROFILES as SCHEMA_POLICY_PROFILES, type AgentConfig } from '../../src/lib/config/schema.js';
import { agentSurface, describeDrop } from '../../src/lib/policy/surface.js';
import { expandEntry, resolveToolPolicy, TOOL_GROUPS, TOOL_POLICY_PROFILES } from '../../src/lib/policy/tool-policy.js';

const UNIVERSE = ['read', 'grep', 'ref_sql', 'ref_jsonpath', 'write', 'web_search', 'web_fetch', 'message_send', 'message_reply', 'message_react', 'memory_search', 'exec'];

const resolve = (profile: string, allow: string[] = [], deny: string[] = []) => resolveToolPolicy({ profile, allow, deny }, UNIVERSE);

function agent(patch: { toolPolicy?: Partial<AgentConfig['skills']['toolPolicy']>; autonomy?: Partial<AgentConfig['autonomy']> } = {}) {
  const config = defaultAgentConfig();
  Object.assign(config.skills.toolPolicy, patch.toolPolicy ?? {});
  Object.assign(config.autonomy, patch.autonomy ?? {});
  return { id: 'ops', config };
}

describe('tool policy resolution (profile → allow → deny, deny wins)', () => {
  it("has the seed's seven profiles with their tool lists", () => {
    expect(Object.keys(TOOL_POLICY_PROFILES)).toEqual(['minimal', 'coding', 'messaging', 'supervisor', 'full', 'cron-minimal', 'heartbeat-minimal']);
    expect(TOOL_POLICY_PROFILES.minimal).toEqual(['read', 'write']);
    expect(TOOL_POLICY_PROFILES.messaging).toEqual(['message', 'session_status']);
    expect(TOOL_POLICY_PROFILES.full).toBe('all');
    // The schema's description lists the same names.
    expect(Object.keys(TOOL_POLICY_PROFILES)).toEqual([...SCHEMA_POLICY_PROFILES]);
  });

  it('full allows every tool; minimal only read and write, the rest not_in_profile', () => {
    expect(resolve('full')).toEqual({ allowed: UNIVERSE, dropped: [] });
    const min = resolve('minimal');
    expect(min.allowed).toEqual(['read', 'write']);
    expect(min.dropped).toContainEqual({ tool: 'grep', why: 'not_in_profile' });
    expect(min.dropped.every((d) => d.why === 'not_in_profile')).toBe(true);
  });

  it("the issue's case: minimal with deny [grep, write] leaves read only, each drop with why", () => {
    const r = resolve('minimal', [], ['grep', 'write']);
    expect(r.allowed).toEqual(['read']);
    expect(r.dropped).toContainEqual({ tool: 'write', why: 'explicit_deny', entry: 'write' });
    expect(r.dropped).toContainEqual({ tool: 'grep', why: 'explicit_deny', entry: 'grep' });
    expect(r.dropped).toContainEqual({ tool: 'ref_sql', why: 'not_in_profile' });
  });

  it('allow adds, with group expansion', () => {
    const r = resolve('minimal', ['group:web', 'grep']);
    expect(r.allowed).toEqual(['read', 'grep', 'write', 'web_search', 'web_fetch']);
  });

  it('deny always wins over allow and over the profile, also through a group', () => {
    const r = resolve('full', ['write'], ['group:messaging', 'write']);
    expect(r.allowed).not.toContain('write');
    expect(r.dropped).toContainEqual({ tool: 'write', why: 'explicit_deny', entry: 'write' });
    for (const t of ['message_send', 'message_reply', 'message_react']) expect(r.dropped).toContainEqual({ tool: t, why: 'explicit_deny', entry: 'group:messaging' });
  });

  it('an unknown profile is the allow list only', () => {
    const r = resolve('no-such-profile', ['read']);
    expect(r.allowed).toEqual(['read']);
    expect(r.dropped.map((d) => d.tool)).toEqual(UNIVERSE.filter((t) => t !== 'read'));
    expect(resolve('constructor').allowed).toEqual([]);
  });

  it("the seed's message tool stands for message_send/reply/react; read_file/write_file for read/write", () => {
    expect(resolve('messaging').allowed).toEqual(['message_send', 'message_reply', 'message_react']);
    expect(resolve('cron-minimal').allowed).toEqual(['read', 'write', 'web_search', 'message_send', 'message_reply', 'message_react', 'memory_search']);
    expect(expandEntry('group:memory')).toEqual(['memory_search', 'memory_get', 'memory_store']);
    expect(Object.keys(TOOL_GROUPS)).toEqual(expect.arrayContaining(['group:web', 'group:memory', 'group:messaging', 'group:sessions']));
  });
});

describe('agent surface: policy and role narrow tools, never capabilities', () => {
  it('the default agent (full, worker) sees the whole table', () => {
    const s = agentSurface(agent());
    expect(s.tools).toEqual(TOOL_TABLE.map((t) => t.name));
    expect(s.dropped.size).toBe(0);
  });

  it('a coordinator drops write (even with autonomy.write: true) and keeps the read-only tools; allow cannot re-add it', () => {
    const s = agentSurface(agent({ autonomy: { role: 'coordinator', write: true }, toolPolicy: { allow: ['write'] } }));
    // Read-only drill-in: orch:read and orch:web tools stay (a coordinator may read, look things up, and checkpoint its own progress).
    expect(s.tools).toEqual(['read', 'grep', 'ref_sql', 'ref_jsonpath', 'memory_search', 'memory_get', 'web_search', 'web_fetch', 'checkpoint', 'resume']);
    expect(s.dropped.get('write')).toEqual({ why: 'role_coordinator' });
    expect(s.write).toBe(false);
    expect(describeDrop('ops', 'write', s.dropped.get('write')!)).toMatch(/agents\.ops\.autonomy\.role is coordinator/);
  });

  it('an explicit deny is reported over the role, naming the entry', () => {
    const s = agentSurface(agent({ autonomy: { role: 'coordinator' }, toolPolicy: { deny: ['group:fs'] } }));
    expect(s.dropped.get('write')).toEqual({ why: 'explicit_deny', entry: 'group:fs' });
    expect(describeDrop('ops', 'write', s.dropped.get('write')!)).toBe('explicit_deny: "group:fs" in agents.ops.skills.toolPolicy.deny');
  });

  it('the role never widens or changes capabilities: the profile table alone decides them', () => {
    // agentSurface has no capability field at all; the runner takes capabilities from PROFILE_CAPABILITIES.
    expect(Object.keys(agentSurface(agent({ autonomy: { role: 'coordinator' } })))).not.toContain('capabilities');
    expect(PROFILE_CAPABILITIES.standard).toEqual(CAPABILITIES);
  });
});
