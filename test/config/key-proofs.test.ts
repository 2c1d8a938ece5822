/**
 * The honesty rule, enforced: every key of config.yaml (walked from the
 * published JSON Schema, docs/config.schema.json, which the build generates
 * from the zod schema) has a test that proves its effect, listed below, or
 * the loader refuses it (load.ts NOT_SUPPORTED_YET, proven in
 * refused.test.ts). A new key with neither fails this test, so a key cannot
 * be documented-but-dead again.
 *
 * To add a key: one line in KEY_PROOFS, `'<dotted key, * for an agent id>':
 * ['<test file>', '<test title, or a unique part of it>']`.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { NOT_SUPPORTED_YET } from '../../src/lib/config/load.js';
import { renderConfigJsonSchema } from '../../src/lib/config/json-schema.js';
import { repoRoot } from '../helpers/cli.js';

export const KEY_PROOFS: Record<string, readonly [file: string, title: string]> = {
  $schema: ['test/config/key-proofs.test.ts', 'a config with $schema loads'],
  defaultAgent: ['test/e2e/config-keys.test.ts', 'defaultAgent and workspace'],
  'agents.*.workspace': ['test/e2e/config-keys.test.ts', 'defaultAgent and workspace'],
  'agents.*.autonomy.profile': ['test/e2e/orchestrate.test.ts', 'an assistant agent gets no orchestrate'],
  'agents.*.autonomy.role': ['test/e2e/policy.test.ts', 'cannot call write even with autonomy.write: true'],
  'agents.*.autonomy.write': ['test/e2e/orchestrate.test.ts', 'the write surface is off by default and on with autonomy.write'],
  'agents.*.autonomy.approvals': ['test/e2e/orchestrate.test.ts', 'approvals: refused without a TTY unless --yes'],
  'agents.*.autonomy.limits.timeoutMs': ['test/e2e/config-keys.test.ts', 'timeoutMs and stdoutCapBytes'],
  'agents.*.autonomy.limits.stdoutCapBytes': ['test/e2e/config-keys.test.ts', 'timeoutMs and stdoutCapBytes'],
  'agents.*.autonomy.limits.memoryMb': ['test/e2e/config-keys.test.ts', 'memoryMb, fileSizeMb, tmpSizeMb and maxProcesses'],
  'agents.*.autonomy.limits.fileSizeMb': ['test/e2e/config-keys.test.ts', 'memoryMb, fileSizeMb, tmpSizeMb and maxProcesses'],
  'agents.*.autonomy.limits.tmpSizeMb': ['test/e2e/config-keys.test.ts', 'memoryMb, fileSizeMb, tmpSizeMb and maxProcesses'],
  'agents.*.autonomy.limits.tmpInodes': ['test/e2e/config-keys.test.ts', 'tmpInodes: /tmp and /dev/shm hold the configured number of inodes, the default 16384 without it'],
  'agents.*.autonomy.limits.maxProcesses': ['test/e2e/config-keys.test.ts', 'memoryMb, fileSizeMb, tmpSizeMb and maxProcesses'],
  'agents.*.autonomy.limits.resultFileMb': ['test/e2e/config-keys.test.ts', 'resultFileMb and resultRunMb'],
  'agents.*.autonomy.limits.resultRunMb': ['test/e2e/config-keys.test.ts', 'resultFileMb and resultRunMb'],
  'agents.*.autonomy.limits.workspaceMb': ['test/security/run-data.test.ts', 'writing past workspaceMb through many files kills the run'],
  'agents.*.autonomy.limits.workspaceInodes': ['test/security/run-data.test.ts', '60,000 empty directories against workspaceInodes 1000 kill the run'],
  'agents.*.skills.toolPolicy.profile': ['test/e2e/policy.test.ts', 'pre-flight: minimal with deny [grep, write]'],
  'agents.*.skills.toolPolicy.allow': ['test/policy/tool-policy.test.ts', 'allow adds, with group expansion'],
  'agents.*.skills.toolPolicy.deny': ['test/e2e/policy.test.ts', 'socket: a dynamically named denied call'],
  'agents.*.skills.execSandbox.enabled': ['test/config/refused.test.ts', 'refuses execSandbox.enabled: never'],
  'agents.*.skills.execSandbox.readOnlyAllowPaths': ['test/security/workspace-screen.test.ts', 'a listed directory is readable in the jail at the same path and not writable'],
  'agents.*.skills.execSandbox.jailUidRange.min': ['test/security/jail-uids.test.ts', 'a uid granted in /etc/subuid is never allocated'],
  'agents.*.skills.execSandbox.jailUidRange.max': ['test/security/jail-uids.test.ts', 'a uid granted in /etc/subuid is never allocated'],
  // Durable runs (issue 17): enabled gates orchestrateResume; orchestrateResume's effect is proven end to end.
  'agents.*.autonomy.durability.orchestrateResume': ['test/durable/durable.test.ts', 'a durable run keeps its pinned bytes and recording for replay'],
  // MCP (issue 15). env/envFrom/headers/headersFrom are maps (no leaf key of their own): proven in the same files.
  'agents.*.autonomy.mcp.allow': ['test/security/mcp-gate.test.ts', 'an allowlisted server tool answers; an unlisted server and an unlisted tool are denied'],
  'mcp.servers.*.command': ['test/mcp/client-manager.test.ts', 'server-everything: lists its tools and echoes'],
  'mcp.servers.*.args': ['test/mcp/client-manager.test.ts', 'server-filesystem: reads a file of its allowed directory'],
  'mcp.servers.*.cwd': ['test/mcp/client-manager.test.ts', 'cwd: the server runs in the configured directory'],
  'mcp.servers.*.callTimeoutMs': ['test/mcp/client-manager.test.ts', 'a call past callTimeoutMs fails with mcp_timeout'],
  'mcp.servers.*.startupTimeoutMs': ['test/mcp/client-manager.test.ts', 'startupTimeoutMs: an unknown server is mcp_unavailable'],
  'mcp.servers.*.url': ['test/mcp/http-transport.test.ts', 'url, headers and headersFrom'],
  // The agent's model (issue 18: one-shot repair).
  'agents.*.model.baseUrl': ['test/e2e/repair.test.ts', 'small + bad import: one model request, two spawns'],
  'agents.*.model.name': ['test/e2e/repair.test.ts', 'small + bad import: one model request, two spawns'],
  'agents.*.model.class': ['test/e2e/repair.test.ts', 'frontier (and mid): no model request, one spawn'],
  'agents.*.model.apiKeyEnv': ['test/security/obs-canary.test.ts', 'the model key (model.apiKeyEnv) reaches the model and nothing else'],
  'agents.*.model.timeoutMs': ['test/e2e/repair.test.ts', 'an answer with no code, a 429 then a slow answer past model.timeoutMs'],
  'agents.*.web.search.provider': ['test/web/web-search.test.ts', 'searxng: GET /search?q=…&format=json'],
  'agents.*.web.search.baseUrl': ['test/web/web-search.test.ts', 'searxng: GET /search?q=…&format=json'],
  'agents.*.web.search.apiKeyEnv': ['test/web/web-search.test.ts', 'brave: GET /res/v1/web/search with X-Subscription-Token'],
  'agents.*.web.search.timeoutMs': ['test/web/web-search.test.ts', 'timeoutMs bounds a provider that never answers'],
  'agents.*.web.search.defaultCount': ['test/web/web-search.test.ts', 'brave: GET /res/v1/web/search with X-Subscription-Token and count; defaultCount and maxCount'],
  'agents.*.web.search.maxCount': ['test/web/web-search.test.ts', 'brave: GET /res/v1/web/search with X-Subscription-Token and count; defaultCount and maxCount'],
  'agents.*.web.fetch.allowHosts': ['test/e2e/web-fetch.test.ts', 'allowHosts and denyHosts'],
  'agents.*.web.fetch.denyHosts': ['test/e2e/web-fetch.test.ts', 'allowHosts and denyHosts'],
  // Outward sends (issue 16).
  'agents.*.autonomy.durability.enabled': ['test/e2e/message.test.ts', 'durability on: a repeated operationId'],
  'agents.*.autonomy.message.origin': ['test/e2e/message.test.ts', 'webhook origin with reply and react'],
  'agents.*.autonomy.message.maxPerRun': ['test/security/message-sends.test.ts', 'a flood is cut at maxPerRun'],
  'agents.*.autonomy.message.maxPerHour': ['test/security/message-sends.test.ts', 'a flood is cut at maxPerRun'],
  'channels.*.type': ['test/e2e/message.test.ts', 'webhook origin with reply and react'],
  'channels.*.path': ['test/security/message-sends.test.ts', 'a send to a channel that is not the origin is refused without approval'],
  'channels.*.url': ['test/e2e/message.test.ts', 'webhook origin with reply and react'],
  'channels.*.secretEnv': ['test/e2e/message.test.ts', 'webhook origin with reply and react'],
  'channels.*.tokenEnv': ['test/e2e/message.test.ts', "seed 000's worked example, as written"],
  'channels.*.baseUrl': ['test/e2e/message.test.ts', "seed 000's worked example, as written"],
  'channels.*.webhookUrlEnv': ['test/tools/message-channels.test.ts', 'chat.postMessage (ts is the id), a threaded reply, reactions.add; an incoming webhook sends only'],
  'channels.*.timeoutMs': ['test/tools/message-channels.test.ts', 'retries a 5xx and a timeout with the same key'],
  'channels.*.maxAttempts': ['test/tools/message-channels.test.ts', 'retries a 5xx and a timeout with the same key'],
  'agents.*.web.fetch.allowPrivate': ['test/e2e/web-fetch.test.ts', 'allowPrivate opens the local server'],
  'agents.*.web.fetch.followRedirects': ['test/security/web-ssrf.test.ts', 'followRedirects: false refuses the first 3xx'],
  'agents.*.web.fetch.timeoutMs': ['test/e2e/web-fetch.test.ts', 'timeoutMs, maxResponseBytes and maxChars'],
  'agents.*.web.fetch.maxResponseBytes': ['test/e2e/web-fetch.test.ts', 'timeoutMs, maxResponseBytes and maxChars'],
  'agents.*.web.fetch.maxChars': ['test/e2e/web-fetch.test.ts', 'timeoutMs, maxResponseBytes and maxChars'],
};

type JsonSchema = { properties?: Record<string, JsonSchema>; additionalProperties?: JsonSchema | boolean; anyOf?: JsonSchema[]; oneOf?: JsonSchema[]; type?: string };

/** Dotted leaf keys of the schema; a record (agents) contributes `*`. */
function leafKeys(node: JsonSchema, prefix: string[] = []): string[] {
  const out: string[] = [];
  // zod writes a union as anyOf, a discriminated union (channels.<name>) as oneOf.
  const variants = node.anyOf ?? node.oneOf ?? [node];
  for (const v of variants) {
    if (v.properties)
      for (const [k, child] of Object.entries(v.properties)) {
        const path = [...prefix, k];
        const nested = leafKeys(child, path);
        const isContainer = (child.anyOf ?? child.oneOf ?? [child]).some((c) => c.type === 'object');
        if (nested.length > 0) out.push(...nested);
        else if (!isContainer) out.push(path.join('.'));
      }
    if (v.additionalProperties && typeof v.additionalProperties === 'object') out.push(...leafKeys(v.additionalProperties, [...prefix, '*']));
  }
  return [...new Set(out)];
}

const published = JSON.parse(readFileSync(join(repoRoot, 'docs', 'config.schema.json'), 'utf8')) as JsonSchema;

describe('every config key has a proof of effect, or is refused', () => {
  it('the published schema is the one the zod schema generates', () => {
    expect(readFileSync(join(repoRoot, 'docs', 'config.schema.json'), 'utf8')).toBe(renderConfigJsonSchema());
  });

  it('every key of the schema has an entry in KEY_PROOFS, and every entry is a key of the schema', () => {
    const keys = leafKeys(published).sort();
    expect(keys.length).toBeGreaterThan(15);
    const unproven = keys.filter((k) => !(k in KEY_PROOFS));
    expect(unproven, 'keys with no proof of effect: add a test and a KEY_PROOFS line, or refuse the key in load.ts').toEqual([]);
    expect(Object.keys(KEY_PROOFS).filter((k) => !keys.includes(k))).toEqual([]);
  });

  it('each proof names a test that exists', () => {
    for (const [key, [file, title]] of Object.entries(KEY_PROOFS)) {
      const text = readFileSync(join(repoRoot, file), 'utf8');
      // it('title…'), it.skipIf(cond)(`title…`), it.each(...)("title…") all count.
      const escaped = title.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      const declared = new RegExp(`\\bit(?:\\.\\w+\\([^)]*\\))?\\(\\s*['"\`]${escaped}`);
      expect(declared.test(text), `${key}: no test "${title}" in ${file}`).toBe(true);
    }
  });

  it('refused keys are not in the schema, and each has a refusal test', () => {
    const keys = leafKeys(published);
    const refusedTests = readFileSync(join(repoRoot, 'test', 'config', 'refused.test.ts'), 'utf8');
    for (const rule of NOT_SUPPORTED_YET) {
      const prefix = rule.path.join('.');
      expect(
        keys.filter((k) => k === prefix || k.startsWith(`${prefix}.`)),
        prefix,
      ).toEqual([]);
      // A rule over the children of a block (durability.*, all but `enabled`) is proven by a test of one child.
      const sample = rule.path
        .slice(rule.path[0] === 'agents' ? 2 : 0)
        .filter((p, i, all) => !(p === '*' && i === all.length - 1))
        .join('.');
      expect(refusedTests, `no refusal test for ${prefix}`).toContain(`'${sample}`);
    }
  });

  it("every key in docs/config.md's example is a key of the schema (the docs document no dead key)", () => {
    const docs = readFileSync(join(repoRoot, 'docs', 'config.md'), 'utf8');
    const block = docs.slice(docs.indexOf('```yaml') + 7, docs.indexOf('```', docs.indexOf('```yaml') + 7));
    const keys = new Set(leafKeys(published));
    const stack: { indent: number; key: string }[] = [];
    const found: string[] = [];
    for (const line of block.split('\n')) {
      const m = /^(\s*)([A-Za-z$][\w$-]*):(.*)$/.exec(line);
      if (!m) continue;
      const indent = m[1]!.length;
      while (stack.length > 0 && stack.at(-1)!.indent >= indent) stack.pop();
      const parent = stack.map((s) => s.key);
      const key = (parent[0] === 'agents' || parent[0] === 'channels') && parent.length === 1 ? '*' : m[2]!;
      stack.push({ indent, key });
      const value = m[3]!.replace(/#.*$/, '').trim();
      if (value !== '') found.push([...parent, key].join('.'));
    }
    expect(found.length).toBeGreaterThan(15);
    expect(found.filter((k) => !keys.has(k))).toEqual([]);
  });

  it('a config with $schema loads', async () => {
    const yaml = await import('yaml');
    const { configSchema } = await import('../../src/lib/config/schema.js');
    const { parseConfigText } = await import('../../src/lib/config/load.js');
    const config = parseConfigText('$schema: ./config.schema.json\nagents:\n  a: {}\n', 'c.yaml', { yaml, configSchema });
    expect(config.$schema).toBe('./config.schema.json');
  });
});
