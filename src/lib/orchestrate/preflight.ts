/**
 * Pre-flight capability scan: statically find the `comis_tools.<tool>(...)`
 * calls of a script, so a run that needs a capability the agent lacks is
 * refused before a jail is built, with the capability named.
 *
 * Advisory by design: a dynamically computed name (`comis_tools[name]`)
 * passes this scan and is still denied at the capability socket, which is the
 * only authoritative gate.
 */
import { spawnSync } from 'node:child_process';

import type { Capability } from '../capabilities/capabilities.js';
import { findToolEntry } from '../capabilities/tool-table.js';
import { allowsTool, entryToAdd, parseAllowlist } from '../mcp/allowlist.js';

export interface Footprint {
  /** Tool names found (sorted). */
  tools: string[];
  /** Capabilities those tools need (sorted, de-duplicated). */
  capabilities: Capability[];
  /** Whether the scan could parse the script at all. */
  parsed: boolean;
  /** `comis_tools.mcp.<server>.<tool>` calls found, as "server.tool" (sorted); names the allowlist is checked against. */
  mcp?: string[];
}

interface AstNode {
  type: string;
  [key: string]: unknown;
}

/** Finds tool names in JavaScript (ESM or CommonJS), after any TypeScript transpile. */
export async function scanJavaScript(code: string): Promise<{ tools: Set<string>; parsed: boolean; mcp?: Set<string> }> {
  const acorn = await import('acorn');
  const walk = await import('acorn-walk');
  let ast: AstNode;
  try {
    ast = acorn.parse(code, { ecmaVersion: 'latest', sourceType: 'module', allowHashBang: true, allowAwaitOutsideFunction: true }) as unknown as AstNode;
  } catch {
    try {
      ast = acorn.parse(code, { ecmaVersion: 'latest', sourceType: 'script', allowHashBang: true, allowReturnOutsideFunction: true }) as unknown as AstNode;
    } catch {
      return { tools: new Set(), parsed: false };
    }
  }
  const sdkNames = new Set(['comis_tools']);
  const namespaces = new Set<string>();
  walk.full(ast as never, (raw) => {
    const node = raw as unknown as AstNode;
    if (node.type === 'ImportDeclaration') {
      for (const spec of node.specifiers as AstNode[]) {
        const local = (spec.local as AstNode).name as string;
        if (spec.type === 'ImportNamespaceSpecifier') namespaces.add(local);
        else if (spec.type === 'ImportSpecifier' && propertyName(spec.imported as AstNode) === 'comis_tools') sdkNames.add(local);
      }
    }
    if (node.type === 'VariableDeclarator' && (node.id as AstNode).type === 'Identifier') {
      // const t = require('./comis_tools.js').comis_tools  /  const sdk = require('./comis_tools.js')
      const init = node.init as AstNode | null;
      const id = (node.id as AstNode).name as string;
      if (init && init.type === 'MemberExpression' && propertyOf(init) === 'comis_tools') sdkNames.add(id);
      if (init && init.type === 'CallExpression' && (init.callee as AstNode).type === 'Identifier' && (init.callee as AstNode).name === 'require') namespaces.add(id);
    }
  });
  const tools = new Set<string>();
  const isSdk = (object: AstNode): boolean =>
    (object.type === 'Identifier' && sdkNames.has(object.name as string)) ||
    (object.type === 'MemberExpression' && (object.object as AstNode).type === 'Identifier' && namespaces.has((object.object as AstNode).name as string) && propertyOf(object) === 'comis_tools');
  walk.full(ast as never, (raw) => {
    const node = raw as unknown as AstNode;
    if (node.type !== 'MemberExpression') return;
    if (!isSdk(node.object as AstNode)) return;
    const name = propertyOf(node);
    if (name) tools.add(name);
  });
  // comis_tools.mcp.<server>.<tool>(…): the pair the allowlist is checked against before the run.
  const mcp = new Set<string>();
  walk.full(ast as never, (raw) => {
    const node = raw as unknown as AstNode;
    if (node.type !== 'CallExpression' || (node.callee as AstNode).type !== 'MemberExpression') return;
    const callee = node.callee as AstNode;
    const serverNode = callee.object as AstNode;
    if (serverNode.type !== 'MemberExpression') return;
    const mcpNode = serverNode.object as AstNode;
    if (mcpNode.type !== 'MemberExpression' || propertyOf(mcpNode) !== 'mcp' || !isSdk(mcpNode.object as AstNode)) return;
    const server = propertyOf(serverNode);
    const tool = propertyOf(callee);
    if (server && tool) mcp.add(`${server}.${tool}`);
  });
  // comis_tools.invoke("tool", ...) with a literal name
  walk.full(ast as never, (raw) => {
    const node = raw as unknown as AstNode;
    if (node.type !== 'CallExpression') return;
    const callee = node.callee as AstNode;
    if (callee.type !== 'MemberExpression' || propertyOf(callee) !== 'invoke') return;
    const first = (node.arguments as AstNode[])[0];
    if (first && first.type === 'Literal' && typeof first.value === 'string') tools.add(first.value);
  });
  tools.delete('describe');
  tools.delete('invoke');
  return { tools, parsed: true, mcp };
}

function propertyName(node: AstNode): string | undefined {
  if (node.type === 'Identifier') return node.name as string;
  if (node.type === 'Literal' && typeof node.value === 'string') return node.value;
  return undefined;
}

function propertyOf(member: AstNode): string | undefined {
  const prop = member.property as AstNode;
  if (!member.computed) return prop.type === 'Identifier' ? (prop.name as string) : undefined;
  return prop.type === 'Literal' && typeof prop.value === 'string' ? prop.value : undefined;
}

const PYTHON_SCAN = String.raw`
import ast, json, sys
src = sys.stdin.read()
try:
    tree = ast.parse(src)
except SyntaxError:
    print(json.dumps({"parsed": False, "tools": [], "mcp": []})); sys.exit(0)
names, direct, tools, mcp = {"comis_tools"}, {}, set(), set()
for node in ast.walk(tree):
    if isinstance(node, ast.Import):
        for a in node.names:
            if a.name == "comis_tools": names.add(a.asname or a.name)
    elif isinstance(node, ast.ImportFrom) and node.module == "comis_tools":
        for a in node.names:
            direct[a.asname or a.name] = a.name
for node in ast.walk(tree):
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in names:
        tools.add(node.attr)
    elif isinstance(node, ast.Call):
        f = node.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Attribute) and isinstance(f.value.value, ast.Attribute) and f.value.value.attr == "mcp" and isinstance(f.value.value.value, ast.Name) and f.value.value.value.id in names:
            mcp.add(f.value.attr + "." + f.attr)
        if isinstance(f, ast.Name) and f.id in direct:
            tools.add(direct[f.id])
        if isinstance(f, ast.Attribute) and f.attr == "invoke" and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            tools.add(node.args[0].value)
        if isinstance(f, ast.Name) and direct.get(f.id) == "invoke" and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            tools.add(node.args[0].value)
tools.discard("describe"); tools.discard("invoke"); tools.discard("ComisToolError")
print(json.dumps({"parsed": True, "tools": sorted(tools), "mcp": sorted(mcp)}))
`;

/** Finds tool names in Python with the interpreter's own `ast` module (parse only, nothing runs). */
export function scanPython(code: string, python: string): { tools: Set<string>; parsed: boolean; mcp?: Set<string> } {
  const res = spawnSync(python, ['-I', '-S', '-c', PYTHON_SCAN], { input: code, encoding: 'utf8', timeout: 10_000, env: {} });
  if (res.status !== 0) return { tools: new Set(), parsed: false };
  try {
    const out = JSON.parse(res.stdout) as { parsed: boolean; tools: string[]; mcp?: string[] };
    return { tools: new Set(out.tools), parsed: out.parsed, mcp: new Set(out.mcp ?? []) };
  } catch {
    return { tools: new Set(), parsed: false };
  }
}

export function footprintOf(scan: { tools: Set<string>; parsed: boolean; mcp?: Set<string> | undefined }): Footprint {
  const tools = [...scan.tools].filter((t) => findToolEntry(t) !== undefined || t === 'mcp').sort();
  const caps = new Set<Capability>();
  for (const t of tools) {
    if (t === 'mcp') caps.add('orch:mcp');
    else caps.add(findToolEntry(t)!.capability);
  }
  const footprint: Footprint = { tools, capabilities: [...caps].sort(), parsed: scan.parsed };
  if (scan.mcp && scan.mcp.size > 0) footprint.mcp = [...scan.mcp].sort();
  return footprint;
}

/**
 * The pre-flight refusal of an `comis_tools.mcp.<server>.<tool>(` call the
 * agent's allowlist does not open: a message naming the entry to add, or
 * undefined when every call found is allowlisted. Advisory like the rest of
 * the scan: the socket gate decides.
 */
export function mcpPreflightRefusal(footprint: Footprint, allow: readonly string[] | undefined, agentId: string): { message: string; hint: string } | undefined {
  const list = parseAllowlist(allow);
  const denied = (footprint.mcp ?? []).filter((pair) => {
    const dot = pair.indexOf('.');
    return !allowsTool(list, pair.slice(0, dot), pair.slice(dot + 1));
  });
  if (denied.length === 0) return undefined;
  const [server, tool] = [denied[0]!.slice(0, denied[0]!.indexOf('.')), denied[0]!.slice(denied[0]!.indexOf('.') + 1)];
  const entry = entryToAdd(server, tool);
  const what = entry ? `comis_tools.mcp.${entry}` : 'an MCP server or tool whose name is not valid';
  return {
    message: `The script calls ${what}, which agent "${agentId}" may not call: it is not on agents.${agentId}.autonomy.mcp.allow.`,
    hint: entry
      ? `Nothing was run. Add "${entry}" (or "${server}" for all its tools) to agents.${agentId}.autonomy.mcp.allow in config.yaml, or remove the call.`
      : 'Nothing was run. Server names are lowercase identifiers; see docs/config.md (mcp).',
  };
}

/**
 * Whether the script may slice a ResultRef with DuckDB (`.sql(` or
 * `.jsonpath(` anywhere in its text, either language), so the run can start
 * a hardened DuckDB child while the script boots. A plain text test on
 * purpose: it runs for every script, a miss only costs the first query its
 * child's start-up, and a false hit one idle child that the run's end stops.
 */
export function slicesResults(code: string): boolean {
  return /\.(sql|jsonpath)\s*\(/.test(code);
}
