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
import { registerSecret } from '../obs/output-guard.js';
import { comisHome, configPath, workspacesDir } from './paths.js';
import { defaultConfig } from './defaults.js';
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
  const yaml = await import('yaml');
  const { configSchema } = await import('./schema.js');
  const config = parseConfigText(text, file, { yaml, configSchema });
  registerConfigSecrets(config);
  return { config, source: file, home };
}

interface ParserModules {
  yaml: typeof import('yaml');
  configSchema: typeof import('./schema.js').configSchema;
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
      const parsed = configSchema.safeParse(raw, { reportInput: true });
      if (parsed.success) return parsed.data;
      for (const issue of parsed.error.issues) problems.push(locateIssue(issue, doc, lineCounter, file, yaml));
    }
  }
  throw configError(file, problems);
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
  return new ComisError(
    'CONFIG_INVALID',
    `Invalid config ${file} (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n${lines.join('\n')}`,
    {
      hint: 'Fix the keys above; docs/config.md lists every key, and docs/config.schema.json gives editors completion.',
      details: { problems },
    },
  );
}

type ZodIssue = z.core.$ZodIssue;

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
  return path.map((p) => (typeof p === 'number' ? `[${p}]` : p)).join('.').replaceAll('.[', '[');
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
      return issue.origin === 'string' || issue.origin === 'array'
        ? `too short: at least ${String(issue.minimum)} ${issue.origin === 'string' ? 'characters' : 'items'}`
        : `too small: must be >= ${String(issue.minimum)}`;
    case 'too_big':
      return issue.origin === 'string' || issue.origin === 'array'
        ? `too long: at most ${String(issue.maximum)} ${issue.origin === 'string' ? 'characters' : 'items'}`
        : `too large: must be <= ${String(issue.maximum)}`;
    case 'invalid_format':
      return issue.format === 'regex' ? `invalid format: ${issue.message}` : `invalid format: expected a ${issue.format}`;
    case 'invalid_key':
      return 'invalid key: agent ids are lowercase letters, digits, "-" and "_" (at most 64)';
    case 'invalid_union':
      return 'expected a model name (string) or a model block {baseUrl, name, class}';
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

function registerConfigSecrets(config: ComisConfig): void {
  for (const agent of Object.values(config.agents)) {
    const model = agent.model;
    if (model && typeof model === 'object') {
      registerSecret(model.apiKey);
      if (model.apiKeyEnv) registerSecret(process.env[model.apiKeyEnv]);
    }
  }
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
  if (id === undefined) {
    throw new ComisError('AGENT_UNKNOWN', `No agent selected and the config defines ${ids.length} agents (${ids.join(', ')}).`, {
      hint: 'Pass --agent ID, set COMIS_AGENT, or set defaultAgent in config.yaml.',
    });
  }
  const agent = config.agents[id];
  if (!agent) {
    const where = loaded.source ?? 'the embedded default config';
    throw new ComisError('AGENT_UNKNOWN', `Unknown agent "${AGENT_ID_PATTERN.test(id) ? id : '(invalid id)'}": ${where} defines ${ids.length ? ids.join(', ') : 'no agents'}.`, {
      hint: 'Use one of the agents listed, or add it under agents: in config.yaml.',
    });
  }
  const workspace = agent.workspace
    ? isAbsolute(agent.workspace)
      ? agent.workspace
      : resolve(loaded.home, agent.workspace)
    : join(workspacesDir(loaded.home), id);
  return { id, config: agent, workspace };
}
