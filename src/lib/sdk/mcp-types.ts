/**
 * Types for `comis_tools.mcp.<server>.<tool>(args)` from the input schemas
 * the allowlisted servers give (`comis sdk emit --mcp`), so that
 * `comis_tools.mcp.everything.echo({message: "hi"})` type-checks and a wrong
 * argument fails tsc.
 *
 * The schemas are the servers' own, so this converter treats them as
 * untrusted input that ends up in a TypeScript file: names are emitted as
 * identifiers only when they are plain identifiers and as JSON string
 * literals otherwise; descriptions become one-line comments with nothing that
 * could close them; enum/const values only when they are JSON primitives.
 * Depth, width and size are bounded. What it handles: `type` (one or a list),
 * objects (properties, required/optional, additionalProperties), arrays
 * (items; tuples as `unknown[]`), enum, const, anyOf/oneOf (unions), nullable
 * via `type: [..., "null"]`. Anything else ($ref, allOf, not, if/then, …) is
 * `unknown`: never a guess. Output is a pure function of the schemas.
 *
 * An object that does not say `additionalProperties` gets no index signature:
 * JSON Schema allows extra properties there, but the typed SDK holds a script
 * to the names the server declared (a misspelt argument then fails tsc).
 */
import { sanitizeUntrustedText } from '../untrusted/envelope.js';

/** Deepest nesting converted; below it a schema is `unknown`. */
const MAX_DEPTH = 8;
/** Most properties, union members and enum values kept per schema; past them the whole node is `unknown`. */
const MAX_WIDTH = 200;
/** Longest type text of one tool's arguments; a larger one reads as `Record<string, unknown>`. */
const MAX_TYPE_CHARS = 32_000;

const IDENT = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
const RESERVED = new Set(['__proto__', 'constructor', 'prototype']);

type Schema = Record<string, unknown>;

const isSchema = (v: unknown): v is Schema => v !== null && typeof v === 'object' && !Array.isArray(v);
const isPrimitive = (v: unknown): v is string | number | boolean | null => v === null || typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v));

/** A property name as TS source: a plain identifier, else a JSON string literal (valid TS, nothing to escape from). */
export function tsKey(name: string): string {
  return IDENT.test(name) && !RESERVED.has(name) ? name : JSON.stringify(name);
}

/** Untrusted text as the inside of a one-line comment: visible characters only, nothing that ends the comment. */
export function commentText(text: unknown, max = 200): string | undefined {
  if (typeof text !== 'string') return undefined;
  const line = sanitizeUntrustedText(text)
    .replace(/[^\x20-\x7e\u00a0-\uffff]/gu, ' ')
    .replace(/[\u2028\u2029]/g, ' ')
    .replace(/\s+/g, ' ')
    .trim()
    .replaceAll('*/', '* /');
  if (line === '') return undefined;
  return line.length > max ? `${line.slice(0, max).replace(/\*$/, '')}…` : line;
}

const literal = (v: string | number | boolean | null): string => JSON.stringify(v);

/** One JSON Schema as a TypeScript type expression (`unknown` for what it does not handle). */
export function mcpSchemaToTs(schema: unknown, indent = '', depth = 0): string {
  if (schema === true || (isSchema(schema) && Object.keys(schema).length === 0)) return 'unknown';
  if (!isSchema(schema) || depth > MAX_DEPTH) return 'unknown';
  if ('const' in schema) return isPrimitive(schema.const) ? literal(schema.const) : 'unknown';
  if (Array.isArray(schema.enum)) {
    const values = schema.enum;
    if (values.length === 0 || values.length > MAX_WIDTH || !values.every(isPrimitive)) return 'unknown';
    return [...new Set(values.map(literal))].join(' | ');
  }
  const variants = Array.isArray(schema.anyOf) ? schema.anyOf : Array.isArray(schema.oneOf) ? schema.oneOf : undefined;
  if (variants) {
    if (variants.length === 0 || variants.length > MAX_WIDTH) return 'unknown';
    const members = [...new Set(variants.map((v) => mcpSchemaToTs(v, indent, depth + 1)))];
    return members.includes('unknown') ? 'unknown' : members.join(' | ');
  }
  if (Array.isArray(schema.type)) {
    const types = schema.type.filter((t): t is string => typeof t === 'string');
    if (types.length === 0 || types.length > 8) return 'unknown';
    const members = [...new Set(types.map((t) => mcpSchemaToTs({ ...schema, type: t }, indent, depth)))];
    return members.includes('unknown') ? 'unknown' : members.join(' | ');
  }
  switch (schema.type) {
    case 'string':
      return 'string';
    case 'number':
    case 'integer':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'null':
      return 'null';
    case 'array': {
      if (!isSchema(schema.items)) return 'unknown[]';
      const item = mcpSchemaToTs(schema.items, indent, depth + 1);
      return /^[A-Za-z0-9_]+$/.test(item) ? `${item}[]` : `Array<${item}>`;
    }
    case 'object':
      return objectToTs(schema, indent, depth);
    default:
      // No type: an object by its properties, else anything.
      return isSchema(schema.properties) ? objectToTs(schema, indent, depth) : 'unknown';
  }
}

function objectToTs(schema: Schema, indent: string, depth: number): string {
  const props = isSchema(schema.properties) ? schema.properties : {};
  const names = Object.keys(props);
  if (names.length > MAX_WIDTH) return 'Record<string, unknown>';
  const required = new Set(Array.isArray(schema.required) ? schema.required.filter((r): r is string => typeof r === 'string') : []);
  const inner = `${indent}  `;
  const lines: string[] = [];
  for (const name of names) {
    const prop = props[name];
    const doc = isSchema(prop) ? commentText(prop.description) : undefined;
    if (doc) lines.push(`${inner}/** ${doc} */`);
    lines.push(`${inner}${tsKey(name)}${required.has(name) ? '' : '?'}: ${mcpSchemaToTs(prop, inner, depth + 1)};`);
  }
  // A required name the properties do not describe is still required.
  for (const name of [...required].filter((r) => !Object.hasOwn(props, r)).slice(0, MAX_WIDTH)) lines.push(`${inner}${tsKey(name)}: unknown;`);
  const extra = schema.additionalProperties;
  if (extra === true || isSchema(extra)) lines.push(`${inner}[key: string]: ${extra === true ? 'unknown' : mcpSchemaToTs(extra, inner, depth + 1)};`);
  if (lines.length === 0) return extra === true ? 'Record<string, unknown>' : 'Record<string, never>';
  return `{\n${lines.join('\n')}\n${indent}}`;
}

/** One allowlisted tool as the emitter needs it (from the catalog the gate and describe() use). */
export interface McpTypedTool {
  server: string;
  tool: string;
  description?: string | undefined;
  inputSchema: unknown;
  outputSchema?: unknown;
}

/** Whether every argument may be left out (then `args` is optional). */
function argsOptional(schema: unknown): boolean {
  return !isSchema(schema) || !Array.isArray(schema.required) || schema.required.length === 0;
}

/**
 * The `mcp-types` region of the TS runtime for these tools: an `McpServers`
 * interface naming each server and, in it, each tool as a method typed by its
 * input schema (and, when the server gives one, its output schema as the
 * result's structuredContent). Sorted by server, then tool.
 */
export function mcpTypesRegion(agentId: string, tools: readonly McpTypedTool[]): string {
  const byServer = new Map<string, McpTypedTool[]>();
  for (const t of tools) {
    if (t.server === 'describe') continue; // comis_tools.mcp.describe is the catalog, never a server
    byServer.set(t.server, [...(byServer.get(t.server) ?? []), t]);
  }
  const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
  const servers = [...byServer.keys()].sort(cmp);
  const lines = [
    `/** comis_tools.mcp as agent ${JSON.stringify(agentId)} may call it: its allowlisted tools, typed from each server's input schema by \`comis sdk emit --mcp\` (descriptions are the servers' own, untrusted). */`,
    'export interface McpServers {',
  ];
  for (const server of servers) {
    lines.push(`  readonly ${tsKey(server)}: {`);
    for (const t of byServer.get(server)!.sort((a, b) => cmp(a.tool, b.tool))) {
      let args = mcpSchemaToTs(isSchema(t.inputSchema) && t.inputSchema.type === undefined ? { ...t.inputSchema, type: 'object' } : t.inputSchema, '    ');
      if (args.length > MAX_TYPE_CHARS) args = 'Record<string, unknown>';
      const out = isSchema(t.outputSchema) ? mcpSchemaToTs(t.outputSchema, '    ') : undefined;
      const result = out === undefined || out === 'unknown' || out.length > MAX_TYPE_CHARS ? 'McpResult' : `McpResult<${out}>`;
      const doc = commentText(t.description);
      if (doc) lines.push(`    /** ${doc} */`);
      lines.push(`    ${tsKey(t.tool)}(args${argsOptional(t.inputSchema) ? '?' : ''}: ${args}): Promise<${result} | ResultRef>;`);
    }
    lines.push('  };');
  }
  lines.push('}');
  return `${lines.join('\n')}\n`;
}

/** The region's text when no server is typed: any server and tool name, arguments untyped (checked by the server). */
export const UNTYPED_MCP_SERVERS =
  "/** comis_tools.mcp.<server>.<tool>: any name at runtime (the socket allows only what autonomy.mcp.allow lists); `comis sdk emit --mcp` types an agent's tools. */\nexport type McpServers = { readonly [server: string]: { readonly [tool: string]: McpTool } };\n";
