import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';

import { parseJson, repoRoot } from '../helpers/cli.js';
import { alive, connectServe, descendants, HeldStdioTransport, until } from '../helpers/mcp-serve.js';
import { mcpConfigYaml } from '../helpers/mcp.js';
import { makeHome } from '../helpers/orchestrate.js';

const CANARY = 'CANARY-mcp-serve-4b1d-intermediate';

function text(result: unknown): string {
  const r = result as CallToolResult;
  expect(r.content).toHaveLength(1);
  const block = r.content[0]!;
  expect(block.type).toBe('text');
  return (block as { text: string }).text;
}

describe('comis mcp serve (a real MCP client over stdio)', () => {
  it('lists orchestrate and describe_tools; describe_tools is the agent surface from the tool table', async () => {
    const h = makeHome();
    const s = await connectServe(h.home);
    try {
      const { tools } = await s.client.listTools();
      expect(tools.map((t) => t.name)).toEqual(['orchestrate', 'describe_tools']);
      const orch = tools[0]!;
      expect(orch.inputSchema).toMatchObject({ type: 'object', required: ['script', 'language'], properties: { language: { enum: ['ts', 'js', 'py'] }, timeoutMs: { type: 'integer', minimum: 0, maximum: 600000 } } });
      expect(orch.description).toMatch(/Tools this agent's scripts can call: read, grep, ref_sql, ref_jsonpath, memory_search, memory_get, web_search, web_fetch, checkpoint, resume, message_send, message_reply, message_react\./);
      const described = await s.client.callTool({ name: 'describe_tools', arguments: {} });
      expect(described.isError).toBeFalsy();
      const d = described.structuredContent as { agent: string; tools: { name: string; capability: string; params: { properties: Record<string, unknown> } }[]; unavailable: { name: string; why: string }[] };
      expect(JSON.parse(text(described))).toEqual(d);
      expect(d.agent).toBe('default');
      expect(d.tools.map((t) => t.name)).toEqual(['read', 'grep', 'ref_sql', 'ref_jsonpath', 'memory_search', 'memory_get', 'web_search', 'web_fetch', 'checkpoint', 'resume', 'message_send', 'message_reply', 'message_react']);
      expect(d.tools[0]).toMatchObject({ capability: 'orch:read' });
      expect(Object.keys(d.tools[0]!.params.properties)).toEqual(['path', 'offset', 'limit']);
      // write is in the table but off for this agent: listed as unavailable, with the key that turns it on.
      expect(d.unavailable).toEqual([{ name: 'write', why: 'the write surface is off (agents.default.autonomy.write)' }]);
    } finally {
      await s.close();
    }
  });

  it('describe_tools follows the tool policy: a denied tool is unavailable, with the config entry that denies it', async () => {
    const h = makeHome('agents:\n  lean:\n    skills:\n      toolPolicy:\n        deny: [grep]\n');
    const s = await connectServe(h.home, ['--agent', 'lean']);
    try {
      const d = (await s.client.callTool({ name: 'describe_tools', arguments: {} })).structuredContent as { agent: string; tools: { name: string }[]; unavailable: { name: string; why: string }[] };
      expect(d.agent).toBe('lean');
      expect(d.tools.map((t) => t.name)).not.toContain('grep');
      expect(d.unavailable).toContainEqual({ name: 'grep', why: 'explicit_deny: "grep" in agents.lean.skills.toolPolicy.deny' });
    } finally {
      await s.close();
    }
  });

  it('runs a script that chains read and prints a slice: only stdout comes back, stderr noise does not, and the run is in explain --last', async () => {
    const h = makeHome();
    const ws = h.workspace();
    writeFileSync(join(ws, 'notes.md'), `# notes\nTODO: ship it\n${CANARY}\nTODO: test it\n`);
    const s = await connectServe(h.home);
    try {
      const script = `import { comis_tools } from './comis_tools.js';
const hits = await comis_tools.grep({ pattern: 'TODO' });
const file = await comis_tools.read({ path: hits.matches[0]!.path });
process.stderr.write('stderr noise {"jsonrpc":"2.0","id":999,"result":{}}\\n'.repeat(2000));
console.log(\`todos=\${hits.matches.length} second=\${file.content.split('\\n')[1]}\`);
`;
      const res = await s.client.callTool({ name: 'orchestrate', arguments: { script, language: 'ts' } });
      expect(res.isError).toBeFalsy();
      expect(text(res)).toBe('todos=2 second=TODO: ship it\n');
      expect(JSON.stringify(res)).not.toContain(CANARY);
      expect(JSON.stringify(res)).not.toContain('stderr noise');
      const runId = (res._meta as Record<string, unknown>)['comis/runId'] as string;
      expect(runId).toMatch(/^r-[0-9a-f]+$/);
      // The protocol survived the noise: the next call on the same connection answers, and Python works too.
      const py = await s.client.callTool({ name: 'orchestrate', arguments: { language: 'py', script: 'import comis_tools\nr = comis_tools.read({"path": "notes.md", "offset": 3, "limit": 1})\nprint(r["content"])\n' } });
      expect(text(py)).toBe('TODO: test it\n');
      const bearer = await s.client.callTool({ name: 'orchestrate', arguments: { language: 'py', script: 'import os\nprint("lease=" + os.environ["COMIS_CAP_LEASE"])\n' } });
      expect(text(bearer)).toBe('lease=[REDACTED]\n');
      const explain = parseJson(h.run(['explain', '--last', '--json']).stdout);
      const runs = explain.result.orchestrate as { runId: string; outcome: string; toolCalls: { tool: string; count: number }[] }[];
      expect(runs.map((r) => r.runId)).toEqual([runId, (py._meta as Record<string, unknown>)['comis/runId'], (bearer._meta as Record<string, unknown>)['comis/runId']]);
      expect(runs[0]).toMatchObject({ outcome: 'success' });
      expect(runs[0]!.toolCalls.map((c) => c.tool).sort()).toEqual(['grep', 'read']);
      expect(explain.result.sessionKey).toBe((res._meta as Record<string, unknown>)['comis/sessionKey']);
    } finally {
      await s.close();
    }
  });

  it('a failing script is isError with its failure class and the redacted stderr tail; a timeout says so', async () => {
    const h = makeHome();
    const s = await connectServe(h.home);
    try {
      const failed = await s.client.callTool({ name: 'orchestrate', arguments: { language: 'js', script: "console.log('partial');\nconsole.error('boom: \\u001b[31mred');\nprocess.exit(3);\n" } });
      expect(failed.isError).toBe(true);
      const t = text(failed);
      expect(t).toMatch(/^comis: run r-[0-9a-f]+ failed: nonzero_exit, exit code 3, after \d+ ms\n--- stderr \(last \d+ chars\) ---\nboom: ␛\[31mred\n--- stdout \(8 chars\) ---\npartial\n$/);
      expect(failed._meta).toMatchObject({ 'comis/failureClass': 'nonzero_exit', 'comis/exitCode': 3 });
      // The lease bearer is a registered secret: printed to stderr and stdout, it comes back redacted in both.
      const leak = await s.client.callTool({ name: 'orchestrate', arguments: { language: 'js', script: "const b = process.env.COMIS_CAP_LEASE;\nconsole.log('out=' + b);\nconsole.error('err=' + b);\nprocess.exit(1);\n" } });
      expect(text(leak)).toMatch(/--- stderr \(last \d+ chars\) ---\nerr=\[REDACTED\]\n--- stdout \(\d+ chars\) ---\nout=\[REDACTED\]\n$/);
      const slow = await s.client.callTool({ name: 'orchestrate', arguments: { language: 'js', script: 'setInterval(() => {}, 1000);', timeoutMs: 300 } });
      expect(slow.isError).toBe(true);
      expect(text(slow)).toMatch(/failed: timeout.*\ncomis: the script ran past its 300 ms timeout and was killed \(raise it with timeoutMs\)\n/);
      const explain = parseJson(h.run(['explain', '--last', '--json']).stdout);
      expect((explain.result.orchestrate as { failureClass: string }[]).map((r) => r.failureClass)).toEqual(['nonzero_exit', 'nonzero_exit', 'timeout']);
    } finally {
      await s.close();
    }
  });

  it('bad arguments get a clear error naming the argument, and nothing runs; an unknown tool is a protocol error', async () => {
    const h = makeHome();
    const s = await connectServe(h.home);
    try {
      const cases: [Record<string, unknown>, RegExp][] = [
        [{ script: 'print(1)', language: 'rb' }, /^Error \[USAGE\]: orchestrate: language must be one of ts, js, py, got "rb"\.\nHint: Nothing was run\./],
        [{ script: 'print(1)' }, /language must be one of ts, js, py, got undefined/],
        [{ language: 'py' }, /orchestrate: script must be a string, got undefined\./],
        [{ script: '  \n', language: 'py' }, /orchestrate: script is empty\./],
        [{ script: 'x'.repeat(1024 * 1024 + 1), language: 'js' }, /orchestrate: script is 1048577 bytes, over the 1048576-byte bound\./],
        [{ script: 'print(1)', language: 'py', timeoutMs: 50 }, /orchestrate: timeoutMs 50 is below the 100 ms minimum\.\nHint: Nothing was run\. Pass 100 to 600000, or 0 for the agent's configured timeout/],
        [{ script: 'print(1)', language: 'py', timeoutMs: 600001 }, /timeoutMs 600001 is outside 0 to 600000/],
        [{ script: 'print(1)', language: 'py', timeoutMs: -1 }, /timeoutMs -1 is outside 0 to 600000/],
        [{ script: 'print(1)', language: 'py', timeoutMs: 1.5 }, /timeoutMs must be an integer, got 1\.5/],
        [{ script: 'print(1)', language: 'py', timeoutMs: '500' }, /timeoutMs must be an integer, got string/],
        [{ script: 'print(1)', lang: 'py' }, /orchestrate: unknown argument "lang"\.\nHint: Nothing was run\. The arguments are script, language and timeoutMs\./],
      ];
      for (const [args, expected] of cases) {
        const res = await s.client.callTool({ name: 'orchestrate', arguments: args });
        expect(res.isError, JSON.stringify(args).slice(0, 80)).toBe(true);
        expect(text(res)).toMatch(expected);
      }
      const extra = await s.client.callTool({ name: 'describe_tools', arguments: { verbose: true } });
      expect(text(extra)).toMatch(/describe_tools takes no arguments/);
      await expect(s.client.callTool({ name: 'rm_rf', arguments: {} })).rejects.toThrow(/Unknown tool "rm_rf": comis offers orchestrate and describe_tools/);
      // Nothing above ran: no run was recorded.
      expect(h.run(['explain', '--last']).status).not.toBe(0);
      // 0 means the configured default, exactly as with --timeout-ms 0.
      const ok = await s.client.callTool({ name: 'orchestrate', arguments: { script: 'print(1)', language: 'py', timeoutMs: 0 } });
      expect(text(ok)).toBe('1\n');
    } finally {
      await s.close();
    }
  });

  it('a refusal (capability the agent lacks, an approval it cannot get) is isError with the reason, and recorded', async () => {
    const h = makeHome('agents:\n  gated:\n    autonomy:\n      approvals: true\n');
    const s = await connectServe(h.home, ['--agent', 'gated']);
    try {
      const res = await s.client.callTool({ name: 'orchestrate', arguments: { language: 'py', script: 'print("never")\n' } });
      expect(res.isError).toBe(true);
      expect(text(res)).toMatch(/^Error \[APPROVAL_REQUIRED\]: Agent "gated" requires approval for each run, and comis mcp serve has no terminal to ask on\.\nHint: Nothing was run\./);
      const written = await s.client.callTool({ name: 'orchestrate', arguments: { language: 'ts', script: "import { comis_tools } from './comis_tools.js';\nawait comis_tools.write({ path: 'x', content: 'y' });\n" } });
      expect(text(written)).toMatch(/^Error \[CAPABILITY_DENIED\]: The script calls comis_tools\.write, but the write surface of agent "gated" is off\./);
      const explain = parseJson(h.run(['explain', '--last', '--json']).stdout);
      expect(JSON.stringify(explain.result)).toMatch(/approval_required/);
      expect(JSON.stringify(explain.result)).toMatch(/surface_disabled/);
    } finally {
      await s.close();
    }
  });

  it('an agent without orchestrate is refused at start, before a client could call anything', () => {
    const h = makeHome('agents:\n  chat:\n    autonomy:\n      profile: assistant\n');
    const res = h.run(['mcp', 'serve', '--agent', 'chat'], { input: '' });
    expect(res.status).toBe(4);
    expect(res.stdout).toBe('');
    expect(res.stderr).toMatch(/Error \[CAPABILITY_DENIED\]: Agent "chat" has profile assistant/);
    const unknown = h.run(['mcp', 'serve', '--agent', 'nobody', '--json'], { input: '' });
    expect(unknown.status).toBe(2);
    expect(unknown.stdout).toBe('');
    expect(unknown.stderr).toMatch(/Error \[AGENT_UNKNOWN\]/);
  });

  it('closing stdin mid-run kills the run: the server exits 0 by itself, no jail process is left, the run is recorded', async () => {
    const h = makeHome();
    const ws = h.workspace();
    const transport = new HeldStdioTransport(h.home);
    const client = new Client({ name: 'comis-e2e', version: '0.0.0' });
    await client.connect(transport);
    const call = client.callTool({ name: 'orchestrate', arguments: { language: 'js', script: "require('node:fs').writeFileSync('started', 'yes');\nsetInterval(() => {}, 1000);\n", timeoutMs: 120000 } }).catch((err: Error) => err);
    await until(() => existsSync(join(ws, 'started')), 'the script to start');
    // Positive control: the jail is really there, under the server, running the script.
    const jail = descendants(transport.child.pid!);
    expect(
      jail.some((p) => p.cmdline.includes('/run/comis/script.js')),
      JSON.stringify(jail),
    ).toBe(true);
    transport.endInput();
    const exit = await transport.exited;
    expect(exit).toEqual({ code: 0, signal: null });
    expect(jail.filter((p) => alive(p.pid))).toEqual([]);
    expect(transport.stderr).toMatch(/comis: MCP server stopped: the client closed stdin/);
    // The protocol was all stdout carried: every line is a JSON-RPC message.
    for (const line of transport.stdout.split('\n').filter(Boolean)) expect(JSON.parse(line)).toMatchObject({ jsonrpc: '2.0' });
    await call;
    const explain = parseJson(h.run(['explain', '--last', '--json']).stdout);
    expect(explain.result.orchestrate).toHaveLength(1);
    expect(explain.result.orchestrate[0]).toMatchObject({ outcome: 'failure' });
  });
});

describe('comis mcp serve: cancellation and signals', () => {
  it('a call the client cancels kills its run (recorded as a failure); a call waiting behind it never starts', async () => {
    const h = makeHome();
    const ws = h.workspace();
    const s = await connectServe(h.home);
    try {
      const abort = new AbortController();
      const script = (name: string): string => `require('node:fs').writeFileSync('${name}', 'yes');\nsetInterval(() => {}, 1000);\n`;
      const first = s.client.callTool({ name: 'orchestrate', arguments: { language: 'js', script: script('first'), timeoutMs: 120000 } }, undefined, { signal: abort.signal, timeout: 180_000 }).catch((e: Error) => e);
      await until(() => existsSync(join(ws, 'first')), 'the first run to start');
      const waiting = new AbortController();
      const second = s.client.callTool({ name: 'orchestrate', arguments: { language: 'js', script: script('second'), timeoutMs: 120000 } }, undefined, { signal: waiting.signal, timeout: 180_000 }).catch((e: Error) => e);
      waiting.abort();
      abort.abort();
      expect(await first).toBeInstanceOf(Error);
      expect(await second).toBeInstanceOf(Error);
      // The connection still serves, so the cancelled run has ended (serialized: this one ran after it).
      const after = await s.client.callTool({ name: 'orchestrate', arguments: { language: 'py', script: 'print("after")\n' } });
      expect(text(after)).toBe('after\n');
      expect(existsSync(join(ws, 'second'))).toBe(false);
      const runs = parseJson(h.run(['explain', '--last', '--json']).stdout).result.orchestrate as { outcome: string }[];
      expect(runs.map((r) => r.outcome)).toEqual(['failure', 'success']);
    } finally {
      await s.close();
    }
  });

  it('runs are serialized: a second call starts only after the first ended; beyond 4 waiting a call is answered busy', async () => {
    const h = makeHome();
    const ws = h.workspace();
    const s = await connectServe(h.home);
    try {
      const call = (script: string) => s.client.callTool({ name: 'orchestrate', arguments: { language: 'js', script, timeoutMs: 120000 } }, undefined, { timeout: 180_000 });
      const fs = "const fs = require('node:fs');\n";
      const first = call(`${fs}fs.writeFileSync('a-started', '');\nconst t = setInterval(() => { if (fs.existsSync('release')) { clearInterval(t); console.log('a done'); } }, 20);\n`);
      await until(() => existsSync(join(ws, 'a-started')), 'the first run to start');
      const second = call(`${fs}fs.writeFileSync('b-started', '');\nconsole.log('release before b:', fs.existsSync('release'));\n`);
      const waiting = [1, 2, 3].map((i) => call(`console.log('w${i}')`));
      const busy = await call("console.log('never')");
      expect(busy.isError).toBe(true);
      expect(text(busy)).toMatch(/^comis: busy: one run is in progress and 4 are waiting; nothing was run\./);
      // Were runs concurrent, the second would start now; give it the chance (a bound, not an assertion on time).
      await until(() => existsSync(join(ws, 'b-started')), 'a concurrent second run', 5_000).catch(() => undefined);
      expect(existsSync(join(ws, 'b-started'))).toBe(false);
      writeFileSync(join(ws, 'release'), '');
      expect(text(await first)).toBe('a done\n');
      expect(text(await second)).toBe('release before b: true\n');
      expect(await Promise.all(waiting.map(async (w) => text(await w)))).toEqual(['w1\n', 'w2\n', 'w3\n']);
    } finally {
      await s.close();
    }
  });

  it('SIGTERM mid-run: the run is killed and recorded, no jail process is left, the server exits 0', async () => {
    const h = makeHome();
    const ws = h.workspace();
    const transport = new HeldStdioTransport(h.home);
    const client = new Client({ name: 'comis-e2e', version: '0.0.0' });
    await client.connect(transport);
    const call = client.callTool({ name: 'orchestrate', arguments: { language: 'py', script: "open('started', 'w').write('yes')\nimport time\nwhile True: time.sleep(1)\n", timeoutMs: 120000 } }).catch((err: Error) => err);
    await until(() => existsSync(join(ws, 'started')), 'the script to start');
    const jail = descendants(transport.child.pid!);
    expect(
      jail.some((p) => p.cmdline.includes('/run/comis/script.py')),
      JSON.stringify(jail),
    ).toBe(true);
    transport.child.kill('SIGTERM');
    expect(await transport.exited).toEqual({ code: 0, signal: null });
    expect(jail.filter((p) => alive(p.pid))).toEqual([]);
    expect(transport.stderr).toMatch(/comis: MCP server stopped: signalled/);
    await call;
    expect(parseJson(h.run(['explain', '--last', '--json']).stdout).result.orchestrate[0]).toMatchObject({ outcome: 'failure' });
  });
});

describe('comis mcp serve: load path', () => {
  it('--help teaches: the tools, the client config and the Claude Code line; comis --help lists the mcp topic', () => {
    const h = makeHome();
    const help = h.run(['mcp', 'serve', '--help']);
    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/orchestrate\(\{script, language, timeoutMs\}\)/);
    expect(help.stdout).toMatch(/describe_tools\(\)/);
    expect(help.stdout).toContain('claude mcp add comis -- comis mcp serve --agent default');
    expect(help.stdout.replace(/\s+/g, ' ')).toContain('"args": ["mcp", "serve", "--agent", "default"]');
    expect(h.run(['--help']).stdout).toMatch(/mcp\s+Connect MCP servers to jailed scripts, or serve comis itself over\s+MCP\./);
  });

  it('loads the MCP SDK when it serves (the positive control of the --help/--version trace in cli.test.ts)', () => {
    const h = makeHome();
    const trace = join(h.home, 'trace.txt');
    const res = h.run(['mcp', 'serve'], { input: '', env: { NODE_OPTIONS: `--import=${join(repoRoot, 'test/helpers/trace-imports.mjs')}`, COMIS_TRACE_IMPORTS: trace } });
    expect(res.status).toBe(0);
    expect(res.stdout).toBe('');
    const loaded = readFileSync(trace, 'utf8').split('\n');
    expect(loaded.some((m) => m.includes('@modelcontextprotocol/sdk/dist/esm/server/'))).toBe(true);
  });
});

describe('comis mcp serve with a connected MCP server (issue 15: the chain through both sides)', () => {
  it('one script chains read and the allowlisted comis_tools.mcp.everything.echo; an unlisted tool is denied; the run is in explain', async () => {
    const h = makeHome(mcpConfigYaml({ default: ['everything.echo'] }));
    writeFileSync(join(h.workspace(), 'notes.md'), `# notes\nhello from the workspace\n${CANARY}\n`);
    const s = await connectServe(h.home);
    try {
      const d = (await s.client.callTool({ name: 'describe_tools', arguments: {} })).structuredContent as { mcp: { allow: string[]; servers: string[]; unavailable?: string } };
      expect(d.mcp).toMatchObject({ allow: ['everything.echo'], servers: ['everything'] });
      expect(d.mcp.unavailable).toBeUndefined();
      const { tools } = await s.client.listTools();
      expect(tools[0]!.description).toContain('allowlisted: everything.echo.');
      const script = `import { comis_tools } from './comis_tools.js';
const file = await comis_tools.read({ path: 'notes.md' });
const echoed = await comis_tools.mcp.everything.echo({ message: file.content.split('\\n')[1] });
let denied = 'not denied';
const unlisted = ['get', 'sum'].join('-'); // dynamic: past the pre-flight, to the socket's gate
try { await comis_tools.mcp.everything[unlisted]({ a: 1, b: 2 }); } catch (e) { denied = e.code; }
console.log(echoed.text.split('\\n')[1], '|', denied);
`;
      const res = await s.client.callTool({ name: 'orchestrate', arguments: { script, language: 'ts' } });
      expect(res.isError, text(res)).toBeFalsy();
      expect(text(res)).toBe('Echo: hello from the workspace | mcp_not_allowed\n');
      expect(JSON.stringify(res)).not.toContain(CANARY);
      // Written literally, the unlisted call is refused before anything runs, naming the allow entry to add.
      const literal = await s.client.callTool({ name: 'orchestrate', arguments: { language: 'ts', script: "import { comis_tools } from './comis_tools.js';\nawait comis_tools.mcp.everything['get-sum']({ a: 1, b: 2 });\n" } });
      expect(literal.isError).toBe(true);
      expect(text(literal)).toMatch(/^Error \[CAPABILITY_DENIED\]: .*\nHint: Nothing was run\. Add "everything\.get-sum"/);
      const runs = parseJson(h.run(['explain', '--last', '--json']).stdout).result.orchestrate as { runId: string; outcome: string; toolCalls: { tool: string; decision: string }[] }[];
      expect(runs.map((r) => r.outcome)).toEqual(['success', 'refused']);
      expect(runs[0]!.runId).toBe((res._meta as Record<string, unknown>)['comis/runId']);
      expect(runs[0]!.outcome).toBe('success');
      expect(runs[0]!.toolCalls.map((c) => `${c.tool}:${c.decision}`).sort()).toEqual(['mcp:deny', 'mcp:everything.echo:allow', 'read:allow']);
    } finally {
      await s.close();
    }
  });

  it('an agent with no allowlist is told MCP is unavailable, and why', async () => {
    const h = makeHome(mcpConfigYaml({ default: undefined }));
    const s = await connectServe(h.home);
    try {
      const d = (await s.client.callTool({ name: 'describe_tools', arguments: {} })).structuredContent as { mcp: { allow: string[]; unavailable?: string } };
      expect(d.mcp).toMatchObject({ allow: [], unavailable: 'no configured MCP server is allowlisted (agents.default.autonomy.mcp.allow)' });
    } finally {
      await s.close();
    }
  });
});
