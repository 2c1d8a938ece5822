/**
 * Loads `$COMIS_HOME/config.yaml`: YAML with the `yaml` package (no code
 * execution, duplicate keys rejected), then the zod schema. Every problem is
 * reported with the file, line and column, the dotted key, what was expected
 * and what to do, and never with the value found (it may be a secret).
 *
 * With no config file an embedded default applies (agent `default`, profile
 * `standard`). A config file that exists but is invalid is an error, never a
 * silent fallback.
 */
import { readFileSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';

import type { Document, LineCounter, Node } from 'yaml';
import type { z } from 'zod';

import { ComisError } from '../errors.js';
import { registerSecret } from '../redact/output-guard.js';
import { SHORTHAND_BASE_URL_ENV, SHORTHAND_KEY_ENV, shorthandBaseUrl } from './model-resolve.js';
import { comisHome, configPath, workspacesDir } from './paths.js';
import { defaultAgentConfig, defaultConfig } from './defaults.js';
import type { AgentConfig, ComisConfig } from './schema.js';

/** Same as schema.ts's pattern; duplicated so resolving an agent loads no schema library. */
const AGENT_ID_PATTERN = /^[a-z0-9][a-z0-9_-]{0,63}$/;

export interface ConfigProblem {
  file: string;
  line: number;
  column: number;
  key: string;
  message: string;
}

export interface LoadedConfig {
  config: ComisConfig;
  /** The file it came from, or undefined for the embedded default. */
  source: string | undefined;
  home: string;
}

export interface ResolvedAgent {
  id: string;
  config: AgentConfig;
  workspace: string;
  /** The config file the agent came from (undefined: the embedded default), for messages. */
  source?: string | undefined;
  /** The MCP servers configured (top-level mcp.servers); the agent reaches only those its autonomy.mcp.allow lists. */
  mcpServers?: NonNullable<ComisConfig['mcp']>['servers'] | undefined;
  /** The outward channels configured (top-level channels), for message_*. */
  channels?: ComisConfig['channels'] | undefined;
  /**
   * The workspaces of every configured agent, this one's included (paths as configured, resolved):
   * jails write there, so no agent's read-only bind may lie in or hold one (workspace.ts).
   */
  agentWorkspaces?: readonly string[] | undefined;
}

export const DEFAULT_AGENT_ID = 'default';

/** The embedded default used when there is no config file: agent `default`, profile `standard`. */
export function embeddedDefaultConfig(): ComisConfig {
  return defaultConfig(DEFAULT_AGENT_ID);
}

export async function loadConfig(options: { home?: string; file?: string } = {}): Promise<LoadedConfig> {
  const home = options.home ?? comisHome();
  const file = options.file ?? configPath(home);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' && options.file === undefined) {
      return { config: embeddedDefaultConfig(), source: undefined, home };
    }
    throw new ComisError('CONFIG_UNREADABLE', `Cannot read config file ${file}: ${code ?? 'unknown error'}.`, {
      hint: 'Check that the file exists and is readable, or unset COMIS_HOME to use ~/.comis.',
    });
  }
  // The same text validated before (by this comis) is not parsed again: see compiled.ts.
  const { compiledConfigPath, readCompiledConfig, writeCompiledConfig } = await import('./compiled.js');
  const cacheFile = compiledConfigPath(home, file);
  const compiled = readCompiledConfig(cacheFile, file, text);
  if (compiled) return { config: compiled, source: file, home };
  const yaml = await import('yaml');
  const { configSchema } = await import('./schema.js');
  const config = parseConfigText(text, file, { yaml, configSchema });
  writeCompiledConfig(cacheFile, file, text, config);
  return { config, source: file, home };
}

interface ParserModules {
  yaml: typeof import('yaml');
  configSchema: typeof import('./schema.js').configSchema;
}

/**
 * Keys the seeds define that comis does not implement yet. Each is refused at
 * its file and line with "`<key>` is not supported yet" and why, instead of
 * being parsed and then ignored (a user who sets one would believe it acts).
 * `*` matches any agent id. Remove an entry (and add the key to schema.ts
 * with a test in test/config/key-proofs.test.ts) when the feature lands.
 */
export const NOT_SUPPORTED_YET: readonly { path: readonly string[]; why: string }[] = [
  { path: ['agents', '*', 'budget'], why: 'comis does not meter what its model requests (the one-shot repair) spend yet, so there is nothing to cap.' },
  { path: ['security', 'permission'], why: "Node's permission model is not applied to jailed scripts yet (the jail itself is the boundary)." },
];

/** Finds the refused keys present in the document: one problem per leaf key under a refused prefix. */
function refusedKeys(doc: Document, lineCounter: LineCounter, file: string, yaml: ParserModules['yaml']): { problems: ConfigProblem[]; paths: string[][] } {
  const problems: ConfigProblem[] = [];
  const paths: string[][] = [];
  const visit = (node: unknown, path: string[], rule: (typeof NOT_SUPPORTED_YET)[number], depth: number): void => {
    if (depth < rule.path.length) {
      if (!yaml.isMap(node)) return;
      for (const item of node.items) {
        if (!yaml.isPair(item) || !yaml.isScalar(item.key)) continue;
        const name = String(item.key.value);
        const want = rule.path[depth]!;
        if (want !== '*' && want !== name) continue;
        const next = [...path, name];
        if (depth === rule.path.length - 1) {
          paths.push(next);
          report(item.value, item.key as Node, next, rule);
        } else visit(item.value, next, rule, depth + 1);
      }
    }
  };
  const report = (value: unknown, keyNode: Node, path: string[], rule: (typeof NOT_SUPPORTED_YET)[number]): void => {
    // Name the most specific keys the user wrote (agents.x.autonomy.mcp.allow), each at its own line.
    if (yaml.isMap(value) && value.items.length > 0) {
      for (const item of value.items) if (yaml.isPair(item) && yaml.isScalar(item.key)) report(item.value, item.key as Node, [...path, String(item.key.value)], rule);
      return;
    }
    const pos = lineCounter.linePos(keyNode.range?.[0] ?? 0);
    const key = dottedKey(path);
    problems.push({ file, line: pos.line, column: pos.col, key, message: `\`${key}\` is not supported yet: ${rule.why} Remove it.` });
  };
  for (const rule of NOT_SUPPORTED_YET) visit(doc.contents, [], rule, 0);
  return { problems, paths };
}

/** Parses and validates config text; throws CONFIG_INVALID listing every problem. */
export function parseConfigText(text: string, file: string, modules: ParserModules): ComisConfig {
  const { yaml, configSchema } = modules;
  const lineCounter = new yaml.LineCounter();
  const doc = yaml.parseDocument(text, { lineCounter, uniqueKeys: true, prettyErrors: false, merge: false });
  const problems: ConfigProblem[] = [];
  for (const err of doc.errors) {
    const pos = lineCounter.linePos(err.pos[0]);
    problems.push({ file, line: pos.line, column: pos.col, key: '', message: yamlErrorMessage(err.code, err.message) });
  }
  if (problems.length === 0) {
    const raw: unknown = doc.contents === null ? {} : doc.toJS({ maxAliasCount: 100 });
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
      problems.push({ file, line: 1, column: 1, key: '', message: 'the top level must be a mapping (key: value pairs)' });
    } else {
      const refused = refusedKeys(doc, lineCounter, file, yaml);
      problems.push(...refused.problems);
      // Validate the rest too (so one run reports everything), without the refused keys.
      for (const path of refused.paths) deleteIn(raw as Record<string, unknown>, path);
      const parsed = configSchema.safeParse(raw, { reportInput: true });
      if (parsed.success && problems.length === 0) return withDefaultAgent(parsed.data);
      if (!parsed.success) for (const issue of parsed.error.issues.flatMap(unionBranchIssues)) problems.push(locateIssue(issue, doc, lineCounter, file, yaml));
    }
  }
  throw configError(file, problems);
}

function deleteIn(obj: Record<string, unknown>, path: readonly string[]): void {
  let at: unknown = obj;
  for (const part of path.slice(0, -1)) at = at && typeof at === 'object' ? (at as Record<string, unknown>)[part] : undefined;
  if (at && typeof at === 'object') delete (at as Record<string, unknown>)[path[path.length - 1]!];
}

/**
 * A file that defines no agents (empty, only comments, only `security:`)
 * keeps the embedded agent `default`, as if there were no file.
 */
function withDefaultAgent(config: ComisConfig): ComisConfig {
  if (Object.keys(config.agents).length > 0) return config;
  return { ...config, agents: { [DEFAULT_AGENT_ID]: defaultAgentConfig() } };
}

function yamlErrorMessage(code: string, message: string): string {
  if (code === 'DUPLICATE_KEY') return 'duplicate key: each key may appear once in a mapping';
  // yaml's messages quote the offending source; keep only the first sentence.
  return `YAML syntax error (${code}): ${message.split('\n')[0]?.replace(/ at line \d+, column \d+.*$/, '')}`;
}

function configError(file: string, problems: ConfigProblem[]): ComisError {
  const shown = problems.slice(0, 10);
  const lines = shown.map((p) => `  ${p.file}:${p.line}:${p.column}${p.key ? ` ${p.key}` : ''}: ${p.message}`);
  if (problems.length > shown.length) lines.push(`  … and ${problems.length - shown.length} more`);
  return new ComisError('CONFIG_INVALID', `Invalid config ${file} (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n${lines.join('\n')}`, {
    hint: 'Fix the keys above; docs/config.md lists every key, and docs/config.schema.json gives editors completion.',
    details: { problems },
  });
}

type ZodIssue = z.core.$ZodIssue;

/**
 * A key that takes several forms (`model: gpt-5.1` or `model: {baseUrl, name}`): when the value
 * has the type of exactly one form, that form's own problems are reported (the misspelt class at
 * its line) instead of a bare "none of the forms".
 */
function unionBranchIssues(issue: ZodIssue): ZodIssue[] {
  if (issue.code !== 'invalid_union' || !Array.isArray(issue.errors)) return [issue];
  const fitting = issue.errors.filter((branch) => branch.length > 0 && !branch.some((i) => i.code === 'invalid_type' && i.path.length === 0));
  if (fitting.length !== 1) return [issue];
  return fitting[0]!.flatMap((inner) => unionBranchIssues({ ...inner, path: [...issue.path, ...inner.path] } as ZodIssue));
}

function locateIssue(issue: ZodIssue, doc: Document, lineCounter: LineCounter, file: string, yaml: ParserModules['yaml']): ConfigProblem {
  const path = issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p));
  let target: Node | undefined;
  let keyPath = path;
  if (issue.code === 'unrecognized_keys' && issue.keys.length > 0) {
    const keyName = issue.keys[0] as string;
    keyPath = [...path, keyName];
    target = findKeyNode(doc, path, keyName, yaml);
  } else if (issue.code === 'invalid_key') {
    // A record key (agent id) is wrong: point at the key itself.
    target = findKeyNode(doc, path.slice(0, -1), String(path[path.length - 1]), yaml);
  }
  // Walk up until a node exists (a missing key points at its parent mapping).
  for (let depth = path.length; target === undefined && depth >= 0; depth--) {
    const node = depth === 0 ? doc.contents : doc.getIn(path.slice(0, depth), true);
    if (node && typeof node === 'object' && 'range' in node) target = node as Node;
  }
  const offset = target?.range?.[0] ?? 0;
  const pos = lineCounter.linePos(offset);
  return { file, line: pos.line, column: pos.col, key: dottedKey(keyPath), message: describeIssue(issue) };
}

function findKeyNode(doc: Document, mapPath: (string | number)[], keyName: string, yaml: ParserModules['yaml']): Node | undefined {
  const map = mapPath.length === 0 ? doc.contents : doc.getIn(mapPath, true);
  if (!yaml.isMap(map)) return undefined;
  for (const item of map.items) {
    if (yaml.isPair(item) && yaml.isScalar(item.key) && String(item.key.value) === keyName) return item.key;
  }
  return undefined;
}

function dottedKey(path: (string | number)[]): string {
  return path
    .map((p) => (typeof p === 'number' ? `[${p}]` : p))
    .join('.')
    .replaceAll('.[', '[');
}

/** A message that states what was expected, never the value that was found. */
function describeIssue(issue: ZodIssue): string {
  switch (issue.code) {
    case 'invalid_type':
      return issue.input === undefined ? `required: expected ${issue.expected}` : `expected ${issue.expected}, got ${typeName(issue.input)}`;
    case 'invalid_value':
      return `expected one of ${issue.values.map((v) => JSON.stringify(v)).join(', ')}`;
    case 'unrecognized_keys':
      return `unknown key${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `"${k}"`).join(', ')} (check the spelling; docs/config.md lists the keys)`;
    case 'too_small':
      return issue.origin === 'string' || issue.origin === 'array' ? `too short: at least ${String(issue.minimum)} ${issue.origin === 'string' ? 'characters' : 'items'}` : `too small: must be >= ${String(issue.minimum)}`;
    case 'too_big':
      return issue.origin === 'string' || issue.origin === 'array' ? `too long: at most ${String(issue.maximum)} ${issue.origin === 'string' ? 'characters' : 'items'}` : `too large: must be <= ${String(issue.maximum)}`;
    case 'invalid_format':
      return issue.format === 'regex' ? `invalid format: ${issue.message}` : `invalid format: expected a ${issue.format}`;
    case 'invalid_key':
      if (issue.path[0] === 'mcp') return 'invalid key: MCP server names are a lowercase letter, then lowercase letters, digits or "_" (at most 32), and not a name a proxy would confuse (then, constructor, inspect, …)';
      return 'invalid key: agent ids are lowercase letters, digits, "-" and "_" (at most 64)';
    case 'invalid_union':
      return 'expected one of the forms docs/config.md gives for this key';
    case 'not_multiple_of':
      return `must be a multiple of ${String(issue.divisor)}`;
    default:
      return issue.message;
  }
}

function typeName(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'a mapping';
  return `a ${typeof v}`;
}

/**
 * Picks the agent to act as: the explicit id, else `COMIS_AGENT`, else
 * `defaultAgent`, else `default`, else the only agent configured.
 */
export function resolveAgent(loaded: LoadedConfig, requested?: string): ResolvedAgent {
  const { config } = loaded;
  const ids = Object.keys(config.agents);
  const wanted = requested ?? process.env.COMIS_AGENT ?? config.defaultAgent;
  let id: string | undefined = wanted;
  if (id === undefined) id = config.agents[DEFAULT_AGENT_ID] ? DEFAULT_AGENT_ID : ids.length === 1 ? ids[0] : undefined;
  const where = loaded.source ?? 'the embedded default config';
  if (id === undefined) {
    throw new ComisError('AGENT_UNKNOWN', `No agent selected and ${where} defines ${ids.length} agents (${ids.join(', ')}).`, {
      hint: 'Pass --agent ID, set COMIS_AGENT, or set defaultAgent in config.yaml.',
    });
  }
  const agent = config.agents[id];
  if (!agent) {
    throw new ComisError('AGENT_UNKNOWN', `Unknown agent "${AGENT_ID_PATTERN.test(id) ? id : '(invalid id)'}": ${where} defines ${ids.length ? ids.join(', ') : 'no agents'}.`, {
      hint: 'Use one of the agents listed, or add it under agents: in config.yaml.',
    });
  }
  // A key named by web.search.apiKeyEnv is a secret from the moment the agent is known: every
  // log line, error and report comis writes goes through the output guard, which redacts it.
  const keyEnv = agent.web?.search?.apiKeyEnv;
  if (keyEnv !== undefined) registerSecret(process.env[keyEnv]);
  // The same for the model's key (model.apiKeyEnv, or OPENAI_API_KEY for a bare model id):
  // registered before any run, repair or log line.
  if (typeof agent.model === 'string') {
    if (shorthandBaseUrl() === null) {
      throw new ComisError('CONFIG_INVALID', `${SHORTHAND_BASE_URL_ENV} is not an http(s) URL; agents.${id}.model (a bare model id) takes its endpoint from it.`, {
        hint: `Set ${SHORTHAND_BASE_URL_ENV} to the API root (e.g. http://127.0.0.1:11434/v1), unset it, or write model: {baseUrl, name} in ${where}.`,
      });
    }
    registerSecret(process.env[SHORTHAND_KEY_ENV]);
  } else if (agent.model?.apiKeyEnv !== undefined) registerSecret(process.env[agent.model.apiKeyEnv]);
  // So are the tokens, signing secrets and webhook URLs the channels name (message_*).
  for (const channel of Object.values(config.channels ?? {})) {
    for (const env of [(channel as { tokenEnv?: string }).tokenEnv, (channel as { secretEnv?: string }).secretEnv, (channel as { webhookUrlEnv?: string }).webhookUrlEnv]) {
      if (env !== undefined) registerSecret(process.env[env]);
    }
  }
  const workspaceOf = (agentId: string, configured: string | undefined): string => (configured ? (isAbsolute(configured) ? configured : resolve(loaded.home, configured)) : join(workspacesDir(loaded.home), agentId));
  const workspace = workspaceOf(id, agent.workspace);
  const agentWorkspaces = Object.entries(config.agents).map(([agentId, a]) => workspaceOf(agentId, a.workspace));
  return { id, config: agent, workspace, source: loaded.source, mcpServers: config.mcp?.servers, channels: config.channels, agentWorkspaces };
}
