import { describe, expect, it } from 'vitest';

import { CAPABILITIES, intersectCapabilities, PROFILE_CAPABILITIES } from '../../src/lib/capabilities/capabilities.js';
import { findTool, isControlPlaneTool, TOOL_MAP } from '../../src/lib/capabilities/tool-map.js';

describe('tool map', () => {
  it('maps every tool to a capability of the closed union, with a one-line summary', () => {
    expect(TOOL_MAP.map((t) => t.name)).toEqual(['read', 'grep', 'ref_sql', 'ref_jsonpath', 'memory_search', 'memory_get', 'web_search', 'web_fetch', 'checkpoint', 'resume', 'write', 'message_send', 'message_reply', 'message_react']);
    for (const tool of TOOL_MAP) {
      expect(CAPABILITIES).toContain(tool.capability);
      expect(tool.summary).toMatch(/^[A-Z].*\.$/);
      expect(tool.summary).not.toContain('\n');
    }
    expect(findTool('read')?.capability).toBe('orch:read');
    expect(findTool('write')).toMatchObject({ capability: 'orch:write', surface: 'write' });
    expect(findTool('exec')).toBeUndefined();
    expect(findTool('web_search')?.capability).toBe('orch:web');
    expect(findTool('memory_search')?.capability).toBe('orch:read');
    expect(findTool('memory_get')?.capability).toBe('orch:read');
  });

  it('validates parameters strictly', () => {
    expect(findTool('read')!.params.safeParse({ path: 'a.md', limit: 5 }).success).toBe(true);
    expect(findTool('read')!.params.safeParse({ path: '' }).success).toBe(false);
    expect(findTool('read')!.params.safeParse({ path: 'a', extra: 1 }).success).toBe(false);
    expect(findTool('grep')!.params.safeParse({}).success).toBe(false);
  });

  it('treats the control plane as deny-by-origin', () => {
    for (const name of ['gateway', 'mcp_manage', 'mcp_login', 'agents_manage', 'tokens_manage']) expect(isControlPlaneTool(name)).toBe(true);
    for (const name of ['read', 'grep', 'write', 'manager']) expect(isControlPlaneTool(name)).toBe(false);
    // The admin subset of message.* (seed 000) is not part of orch:message: denied by origin.
    for (const name of ['message_edit', 'message_delete', 'message_fetch']) expect(isControlPlaneTool(name)).toBe(true);
    for (const name of ['message_send', 'message_reply', 'message_react']) expect(isControlPlaneTool(name)).toBe(false);
  });

  it('profiles: standard holds read and web; assistant withholds write and message', () => {
    expect(PROFILE_CAPABILITIES.standard).toEqual(expect.arrayContaining(['orch:read', 'orch:web']));
    expect(PROFILE_CAPABILITIES.assistant).not.toContain('orch:write');
    expect(PROFILE_CAPABILITIES.assistant).not.toContain('orch:message');
  });

  it('a child never holds more than its parent', () => {
    expect(intersectCapabilities(['orch:read'], ['orch:read', 'orch:web'])).toEqual(['orch:read']);
    expect(intersectCapabilities(PROFILE_CAPABILITIES.standard, ['orch:web', 'orch:read'])).toEqual(['orch:read', 'orch:web']);
    expect(intersectCapabilities([], ['orch:read'])).toEqual([]);
  });
});

describe('table and schemas', () => {
  it('cover exactly the same tools', async () => {
    const { TOOL_TABLE } = await import('../../src/lib/capabilities/tool-table.js');
    const { SCHEMA_NAMES } = await import('../../src/lib/capabilities/tool-map.js');
    expect([...SCHEMA_NAMES].sort()).toEqual(TOOL_TABLE.map((t) => t.name).sort());
  });
});
