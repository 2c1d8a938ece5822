/**
 * `comis sdk emit --mcp`: the .ts and .d.ts type an agent's allowlisted MCP
 * tools from the real server-everything's input schemas, so
 * `comis_tools.mcp.everything.echo({message})` type-checks and a wrong
 * argument fails tsc (each wrong call carries `@ts-expect-error`: an unused one
 * is itself a tsc error, so one clean tsc run proves both directions).
 * Deterministic, and --check works. The converter itself is checked on the
 * shapes it handles and on hostile schemas (comment breakers, odd keys, depth).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { commentText, mcpSchemaToTs, mcpTypesRegion } from '../../src/lib/sdk/mcp-types.js';
import { parseJson, repoRoot } from '../helpers/cli.js';
import { EVERYTHING_ENTRY } from '../helpers/mcp.js';
import { makeHome } from '../helpers/orchestrate.js';
import { tempDir } from '../helpers/temp.js';

describe('JSON Schema of an MCP tool → TypeScript', () => {
  it('objects, required/optional, arrays, enums, unions, nullable; unknown for anything else', () => {
    const ts = mcpSchemaToTs({
      type: 'object',
      properties: {
        name: { type: 'string', description: 'Who' },
        count: { type: 'integer' },
        tags: { type: 'array', items: { type: 'string' } },
        rows: { type: 'array', items: { type: 'object', properties: { id: { type: 'number' } }, required: ['id'] } },
        mode: { type: 'string', enum: ['a', 'b'] },
        either: { anyOf: [{ type: 'string' }, { type: 'number' }] },
        maybe: { type: ['string', 'null'] },
        fixed: { const: 3 },
        ref: { $ref: '#/definitions/x' },
        all: { allOf: [{ type: 'string' }] },
        tuple: { type: 'array', items: [{ type: 'string' }] },
        'odd-key': { type: 'boolean' },
        map: { type: 'object', additionalProperties: { type: 'number' } },
      },
      required: ['name', 'mode', 'ghost'],
    });
    expect(ts).toBe(
      [
        '{',
        '  /** Who */',
        '  name: string;',
        '  count?: number;',
        '  tags?: string[];',
        '  rows?: Array<{',
        '    id: number;',
        '  }>;',
        '  mode: "a" | "b";',
        '  either?: string | number;',
        '  maybe?: string | null;',
        '  fixed?: 3;',
        '  ref?: unknown;',
        '  all?: unknown;',
        '  tuple?: unknown[];',
        '  "odd-key"?: boolean;',
        '  map?: {',
        '    [key: string]: number;',
        '  };',
        '  ghost: unknown;',
        '}',
      ].join('\n'),
    );
  });

  it('hostile schemas: nothing escapes a comment or a key, object enums and deep nesting are unknown', () => {
    expect(commentText('ok */ import("x"); /* \u2028 new\nline')).toBe('ok * / import("x"); /* new line');
    const ts = mcpSchemaToTs({ type: 'object', properties: { 'a"b': { type: 'string', description: '*/ evil() /*' }, __proto__x: { enum: [{ a: 1 }] } } });
    expect(ts).toContain('"a\\"b"?: string;');
    expect(ts).toContain('/** * / evil() /* */');
    expect(ts).toContain('__proto__x?: unknown;');
    let deep: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 20; i++) deep = { type: 'object', properties: { x: deep }, required: ['x'] };
    expect(mcpSchemaToTs(deep)).toContain('x: unknown;');
    const region = mcpTypesRegion('a', [
      { server: 's', tool: 'constructor', inputSchema: { type: 'object', properties: {} } },
      { server: 's', tool: 'b.c', description: 'x */ y', inputSchema: {} },
    ]);
    expect(region).toContain('"constructor"(args?: Record<string, never>)');
    expect(region).toContain('/** x * / y */');
    expect(region).toContain('"b.c"(args?: Record<string, never>)');
  });
});

function everythingConfig(allow: string[], extra = ''): string {
  return [
    'mcp:',
    '  servers:',
    '    everything:',
    `      command: ${JSON.stringify(process.execPath)}`,
    `      args: ${JSON.stringify([EVERYTHING_ENTRY, 'stdio'])}`,
    '      startupTimeoutMs: 30000',
    extra,
    'agents:',
    '  default: {}',
    '  typed:',
    '    autonomy:',
    '      mcp:',
    `        allow: ${JSON.stringify(allow)}`,
    '',
  ].join('\n');
}

const SCRIPT = `import { comis_tools } from './comis_tools.js';
const r = await comis_tools.mcp.everything.echo({ message: 'hi' });
const text: string | undefined = 'text' in r ? r.text : undefined;
const sum = await comis_tools.mcp.everything['get-sum']({ a: 2, b: 3 });
const w = await comis_tools.mcp.everything['get-structured-content']({ location: 'Chicago' });
const t: number | undefined = w.type === 'McpResult' ? w.structuredContent?.temperature : undefined;
const all = await comis_tools.mcp.describe();
// @ts-expect-error a misspelt argument
await comis_tools.mcp.everything.echo({ msg: 'hi' });
// @ts-expect-error a number where the schema says string
await comis_tools.mcp.everything.echo({ message: 1 });
// @ts-expect-error the required argument is missing
await comis_tools.mcp.everything.echo({});
// @ts-expect-error a value outside the enum
await comis_tools.mcp.everything['get-structured-content']({ location: 'Paris' });
// @ts-expect-error a tool the agent's allowlist does not open
await comis_tools.mcp.everything.add({ a: 1 });
// @ts-expect-error a server the agent's allowlist does not name
await comis_tools.mcp.other.tool();
console.log(text, sum, t, all.length);
`;

describe('comis sdk emit --mcp', () => {
  it('types the allowlisted tools of the real server-everything: right calls pass tsc, wrong ones fail it; deterministic; --check', () => {
    const h = makeHome(everythingConfig(['everything.echo', 'everything.get-sum', 'everything.get-structured-content']));
    const dir = tempDir('comis-mcp-sdk-');
    const out = join(dir, 'ts');
    const res = h.run(['sdk', 'emit', '--mcp', '--agent', 'typed', '--out', out, '--json']);
    expect(res.status, res.stderr).toBe(0);
    const body = parseJson(res.stdout);
    expect(body.result.mcp).toEqual({ agentId: 'typed', tools: ['everything.echo', 'everything.get-structured-content', 'everything.get-sum'] });
    const dts = readFileSync(join(out, 'comis_tools.d.ts'), 'utf8');
    expect(dts).toContain('echo(args: {\n      /** Message to echo */\n      message: string;\n    }): Promise<McpResult | ResultRef>;');
    expect(dts).not.toContain('toggle-simulated-logging');
    // The .js is the untyped runtime the jail mounts.
    expect(readFileSync(join(out, 'comis_tools.js'), 'utf8')).toBe(readFileSync(join(repoRoot, 'dist/sdk/comis_tools.js'), 'utf8'));

    // Deterministic: --check emits afresh (the server started again) and compares byte for byte; the untyped SDK differs.
    const check = h.run(['sdk', 'emit', '--mcp', '--agent', 'typed', '--check', out]);
    expect(check.status, check.stderr + check.stdout).toBe(0);
    expect(h.run(['sdk', 'emit', '--check', out]).status).toBe(1);

    // tsc: the script against the .ts, and the same script against the .js + .d.ts.
    const js = join(dir, 'js');
    mkdirSync(js);
    for (const f of ['comis_tools.js', 'comis_tools.d.ts']) writeFileSync(join(js, f), readFileSync(join(out, f)));
    for (const d of [out, js]) {
      writeFileSync(join(d, 'script.ts'), SCRIPT);
      writeFileSync(join(d, 'package.json'), '{"type":"module"}\n');
    }
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { strict: true, module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', noEmit: true, skipLibCheck: false, types: ['node'], typeRoots: [join(repoRoot, 'node_modules/@types')] },
        files: ['ts/script.ts', 'ts/comis_tools.ts', 'js/script.ts'],
      }),
    );
    const tsc = spawnSync(process.execPath, [join(repoRoot, 'node_modules/typescript/bin/tsc'), '-p', join(dir, 'tsconfig.json')], { encoding: 'utf8' });
    expect(tsc.stdout + tsc.stderr).toBe('');
    expect(tsc.status).toBe(0);
  }, 300_000);

  it('a server that cannot be asked fails the emit and nothing is written; --agent needs --mcp; --mcp has no Python', () => {
    const h = makeHome(everythingConfig(['everything.echo', 'broken'], '    broken:\n      command: /nonexistent/mcp-server\n      startupTimeoutMs: 5000'));
    const out = join(tempDir('comis-mcp-sdk-'), 'sdk');
    const res = h.run(['sdk', 'emit', '--mcp', '--agent', 'typed', '--out', out, '--json']);
    expect(res.status).toBe(1);
    const body = parseJson(res.stdout);
    expect(body.error.code).toBe('IO_ERROR');
    expect(body.error.message).toMatch(/MCP server "broken" \(on agents\.typed\.autonomy\.mcp\.allow\) could not be asked/);
    expect(existsSync(out)).toBe(false);
    expect(h.run(['sdk', 'emit', '--agent', 'typed', '--out', out]).status).toBe(2);
    expect(h.run(['sdk', 'emit', '--mcp', '--lang', 'py', '--out', out]).status).toBe(2);
  });
});
