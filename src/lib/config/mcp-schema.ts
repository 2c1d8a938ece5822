/**
 * The config of connected MCP servers (seed 000, "Connected MCP tools"):
 * `mcp.servers.<name>` at the top level, and `agents.<id>.autonomy.mcp.allow`.
 *
 * Semantics:
 * - A server is either stdio (`command`, `args`, `env`, `envFrom`, `cwd`) or
 *   Streamable HTTP (`url`, `headers`, `headersFrom`); both take
 *   `startupTimeoutMs` and `callTimeoutMs`.
 * - Secrets only by reference: `envFrom` / `headersFrom` map a name to the
 *   NAME of an environment variable of the comis process, read when the
 *   server starts and registered with the output guard. An inline `env` or
 *   `headers` value under a secret-looking name (KEY, TOKEN, SECRET,
 *   PASSWORD, AUTH, COOKIE) is refused, so a secret cannot sit in
 *   config.yaml by accident and be echoed from there.
 * - Names are a small identifier set: a server name is used as a JS property
 *   (`comis_tools.mcp.<server>`) and a Python attribute, never to build a
 *   command line or a path; names a proxy would confuse (`then`,
 *   `constructor`, …) are refused.
 * - `autonomy.mcp.allow` lists `"server"` (all its tools) or `"server.tool"`;
 *   empty or absent = no server is reachable (deny by absence).
 */
import { z } from 'zod';

import { MCP_CONFUSABLE_NAMES, MCP_SERVER_NAME_PATTERN } from './mcp-names.js';

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}$/;
/** Names whose values are secrets: they must come by reference (envFrom / headersFrom). */
export const SECRET_LOOKING_NAME = /KEY|TOKEN|SECRET|PASSW|AUTH|COOKIE|CREDENTIAL/i;

const serverName = z
  .string()
  .regex(MCP_SERVER_NAME_PATTERN, 'MCP server names are a lowercase letter, then lowercase letters, digits or "_" (at most 32)')
  .refine((n) => !MCP_CONFUSABLE_NAMES.has(n), 'this name would be confused with a JavaScript/Python protocol property; pick another');

const timeouts = {
  startupTimeoutMs: z.number().int().min(500).max(120_000).default(15_000).describe('How long the server may take to start and answer initialize, in ms (500 to 120000).'),
  callTimeoutMs: z.number().int().min(100).max(600_000).default(60_000).describe('How long one tool call may take, in ms (default 60000, at most 600000; never past the run deadline).'),
};

const inlineValues = (what: string, pattern: RegExp) =>
  z.record(z.string().regex(pattern, `invalid ${what} name`), z.string().max(8192)).refine((r) => Object.keys(r).every((k) => !SECRET_LOOKING_NAME.test(k)), {
    message: `a secret-looking ${what} (KEY, TOKEN, SECRET, PASSWORD, AUTH, COOKIE) must come by reference: use ${what === 'header' ? 'headersFrom' : 'envFrom'}`,
  });

const fromEnv = (what: string, pattern: RegExp) => z.record(z.string().regex(pattern, `invalid ${what} name`), z.string().regex(ENV_NAME, 'the value is the NAME of an environment variable of the comis process'));

const STDIO_KEYS = ['command', 'args', 'env', 'envFrom', 'cwd'] as const;
const HTTP_KEYS = ['url', 'headers', 'headersFrom'] as const;

/**
 * One server. A single strict object (not a union) so a mistake is reported
 * at the key that is wrong ("`headers` is only for url servers"), not as "none
 * of the forms matched".
 */
export const mcpServerSchema = z
  .strictObject({
    command: z.string().min(1).max(4096).optional().describe('stdio: the program to start (a path or a name on PATH); run without a shell.'),
    args: z.array(z.string().max(4096)).max(256).optional().describe('stdio: its arguments, passed as given (no shell).'),
    env: inlineValues('variable', ENV_NAME).optional().describe('stdio: non-secret environment variables of the server (it gets only PATH, HOME, LANG and these, never the environment of comis).'),
    envFrom: fromEnv('variable', ENV_NAME).optional().describe('stdio: secret variables by reference: server variable -> NAME of a variable of the comis process, read at start, never printed.'),
    cwd: z.string().min(1).max(4096).optional().describe('stdio: working directory of the server (default: $COMIS_HOME).'),
    url: z
      .string()
      .max(4096)
      .refine((u) => /^https?:\/\//i.test(u) && URL.canParse(u), 'expected an http:// or https:// URL')
      .refine((u) => !URL.canParse(u) || (new URL(u).username === '' && new URL(u).password === ''), 'no credentials in the URL: send them as a header by reference (headersFrom)')
      .optional()
      .describe('Streamable HTTP: the endpoint of the server.'),
    headers: inlineValues('header', HEADER_NAME).optional().describe('Streamable HTTP: non-secret request headers.'),
    headersFrom: fromEnv('header', HEADER_NAME).optional().describe('Streamable HTTP: secret headers by reference: header -> NAME of a variable of the comis process (e.g. Authorization: MY_TOKEN_VAR), sent as its value.'),
    ...timeouts,
  })
  .superRefine((s, ctx) => {
    if ((s.command === undefined) === (s.url === undefined)) {
      ctx.addIssue({ code: 'custom', path: [], message: 'give either command (a stdio server) or url (a Streamable HTTP server), not both or neither' });
      return;
    }
    const wrong = s.command !== undefined ? HTTP_KEYS : STDIO_KEYS;
    for (const key of wrong) {
      if (s[key] !== undefined) ctx.addIssue({ code: 'custom', path: [key], message: `\`${key}\` is only for ${s.command !== undefined ? 'url (Streamable HTTP)' : 'command (stdio)'} servers` });
    }
  })
  .describe('One MCP server: {command, args, env, envFrom, cwd} for stdio or {url, headers, headersFrom} for Streamable HTTP.');

export const mcpConfigSchema = z
  .strictObject({
    servers: z
      .record(serverName, mcpServerSchema)
      .refine((r) => Object.keys(r).length <= 64, 'at most 64 servers')
      .default({})
      .describe('MCP servers by name. Configuring one opens nothing: an agent reaches it only when its autonomy.mcp.allow lists it.'),
  })
  .describe('Connected MCP servers (comis is their client).');

/** One allowlist entry: `server` or `server.tool`. */
export const MCP_ALLOW_ENTRY = /^[a-z][a-z0-9_]{0,31}(?:\.[A-Za-z0-9_][A-Za-z0-9_.-]{0,58})?$/;

export const autonomyMcpSchema = z
  .strictObject({
    allow: z
      .array(z.string().regex(MCP_ALLOW_ENTRY, 'expected "server" or "server.tool" (a configured server name, then optionally "." and a tool name)'))
      .max(256)
      .default([])
      .describe('MCP tools this agent may call: "server" (all its tools) or "server.tool". Empty or absent: none (deny by absence).'),
  })
  .describe('The mcp surface of the agent.');

export type McpServerConfig = z.infer<typeof mcpServerSchema>;
