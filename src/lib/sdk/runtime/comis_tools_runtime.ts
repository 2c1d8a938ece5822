// @generated:begin source-note
/**
 * The comis_tools runtime for TypeScript and JavaScript scripts in the jail.
 * This file is real source: tsc checks it with the project, and `comis sdk
 * emit` copies it into comis_tools.ts (and, types stripped, comis_tools.js),
 * replacing each `@generated` region with what the tool table yields. It
 * runs inside the jail, so it imports node: builtins only.
 */
// @generated:end source-note
import * as cp from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';

// @api-types:begin
export interface ToolSummary {
  name: string;
  capability: string;
  summary: string;
}

/**
 * An MCP tool this agent may call, as describe() lists it beside the table's
 * tools: fetched from its server before the run (when the script calls
 * describe()), sanitized, untrusted. An allowlisted server that could not be
 * asked is one entry with `unavailable: true` and its reason.
 */
export interface McpToolSummary extends ToolSummary {
  /** mcp.<server>.<tool> (describe(name) takes it), or mcp.<server> for an unavailable server. */
  name: string;
  server: string;
  tool?: string;
  /** How to call it, e.g. comis_tools.mcp.everything.echo. */
  call?: string;
  /** The server's own description (untrusted text, sanitized). */
  description?: string;
  /** JSON Schema of its arguments, as the server gives it (sanitized). */
  inputSchema?: Record<string, unknown>;
  unavailable?: true;
  /** Why the server is unavailable: an error code and a sanitized reason. */
  error?: string;
  reason?: string;
  untrusted: true;
}

export interface ToolDescription extends ToolSummary {
  /** JSON Schema of the parameters. */
  params: Record<string, unknown>;
  /** JSON Schema of the result. */
  result: Record<string, unknown>;
}

/**
 * The ResultRef slicing methods that an inline result which is data offers,
 * over the same payload a ResultRef of it would hold (the tool table's
 * `inlinePayload`): .read/.grep/.jq answer exactly as on the ResultRef;
 * .sql/.jsonpath need DuckDB over a file in results/ and reject with code
 * `inline_result` (query the value with .jq() or plain code instead).
 * The methods are not enumerable (they are on the result's prototype: call them
 * on the result): JSON.stringify and console.log see the data.
 */
export interface InlineSlices {
  /** Lines offset..offset+limit (0-based) of the payload, joined with newlines. */
  read(offset?: number, limit?: number): Promise<string>;
  /** Lines matching a POSIX extended regular expression (grep -E), with 1-based line numbers. */
  grep(pattern: string): Promise<Array<{ line: number; text: string }>>;
  /** A jq filter over the payload. One output → that value; else an array of outputs. */
  jq(expr: string): Promise<unknown>;
  /** Rejects with code inline_result: SQL runs over a ResultRef only. */
  sql(query: string): Promise<Array<Record<string, unknown>> | { error: string }>;
  /** Rejects with code inline_result: JSONPath runs over a ResultRef only. */
  jsonpath(expr: string): Promise<unknown>;
}

/** A result as a script gets it: a ResultRef stays itself, an inline value also has the {@link InlineSlices}. */
export type Sliceable<T> = T extends ResultRef ? T : T & InlineSlices;

// @generated:begin tool-types
// @generated:end tool-types

/** One MCP tool this agent may call, as comis_tools.mcp.describe() lists it (fetched from its server). */
export interface McpToolInfo {
  server: string;
  tool: string;
  /** How to call it, e.g. comis_tools.mcp.everything.echo. */
  call: string;
  capability: string;
  /** The server's own description (untrusted text, sanitized). */
  description?: string;
  /** JSON Schema of its arguments, as the server gives it (sanitized). */
  inputSchema: Record<string, unknown>;
  untrusted: true;
}

/** What an MCP tool returns: data from outside, never instructions (S: its structured content, typed by `comis sdk emit --mcp` from the server's output schema). */
export interface McpResult<S = unknown> {
  type: 'McpResult';
  /** mcp:<server>.<tool> */
  source: string;
  /** The server's own tool-error flag. */
  isError: boolean;
  /** Every text part, in one untrusted-content envelope. */
  text?: string;
  /** The other parts as metadata: images, audio and blobs are files under results/ (`file`), never inline. */
  content: Array<Record<string, unknown>>;
  /** Structured content, as JSON (strings sanitized). */
  structuredContent?: S;
  /** True when text was cut at the mcp_default profile's character bound. */
  truncated?: boolean;
  untrusted: true;
}

/** One tool of a connected server: one capability-socket call. Over 15,000 bytes the result is a ResultRef. */
export type McpTool = (args?: Record<string, unknown>) => Promise<McpResult | ResultRef>;

// @generated:begin mcp-types
export type McpServers = { readonly [server: string]: { readonly [tool: string]: McpTool } };
// @generated:end mcp-types

/** comis_tools.mcp.<server>.<tool>(args): resolved at runtime; the socket allows only what autonomy.mcp.allow lists. */
export type McpNamespace = {
  /** The MCP tools this agent may call, with descriptions and input schemas (fetched once per run). */
  describe(): Promise<McpToolInfo[]>;
} & McpServers;

export interface ComisTools {
  /** Allowlisted tools of connected MCP servers: comis_tools.mcp.<server>.<tool>(args). */
  readonly mcp: McpNamespace;
  /**
   * Every tool: name, capability and a one-line summary (cheap to enumerate),
   * then the allowlisted MCP tools with their descriptions and input schemas
   * (asked of the servers once, before the run, when the script calls describe()).
   */
  describe(): Array<ToolSummary | McpToolSummary>;
  /** One tool in full, with the JSON Schemas of its parameters and result (loaded on demand). */
  describe(name: string): ToolDescription | undefined;
  // @generated:begin tool-method-types
  // @generated:end tool-method-types
  /** Calls a tool by name; the capability socket decides whether it is allowed. */
  invoke(tool: string, params?: Record<string, unknown>): Promise<unknown>;
}
// @api-types:end

// @generated:begin tool-table
const TOOLS: ToolSummary[] = [];

// Full schemas stay a string until describe(name) asks for one (progressive disclosure).
const SCHEMAS_JSON = '{}';
// @generated:end tool-table
let schemas: Record<string, { params: Record<string, unknown>; result: Record<string, unknown> }> | undefined;

/** A tool call that the capability socket refused or that failed daemon-side. */
export class ComisToolError extends Error {
  readonly code: string;
  readonly tool: string | undefined;
  constructor(code: string, message: string, tool?: string) {
    super(message);
    this.name = 'ComisToolError';
    this.code = code;
    this.tool = tool;
  }
}

// jq runs in the jail on the ref alone: no environment, the payload on stdin,
// and no module or file access from the expression.
// @generated:begin jq-policy
// Placeholder that refuses every filter; the emitter writes the table of ../../resultref/slice-policy.ts here.
const JQ_FORBIDDEN = /^/;
// @generated:end jq-policy
const SLICE_TIMEOUT_MS = 10_000;
const SLICE_MAX_OUTPUT = 8 * 1024 * 1024;

// @generated:begin inline-payload
// Where the data of each data tool's inline result is (the tool table's inlinePayload).
const INLINE_PAYLOAD: Record<string, 'value' | 'content'> = {};
// @generated:end inline-payload

function runTool(file: string, args: string[], inputPath: string | undefined, what: string): Promise<string> {
  return new Promise((resolve, reject) => {
    // The payload goes to stdin straight from the file: never held in this process.
    const input = inputPath === undefined ? 'ignore' : fs.openSync(inputPath, 'r');
    const child = cp.spawn(file, args, { env: {}, stdio: [input, 'pipe', 'pipe'] });
    if (typeof input === 'number') fs.closeSync(input);
    const out: Buffer[] = [];
    let size = 0;
    let err = '';
    let failure: ComisToolError | undefined;
    const timer = setTimeout(() => {
      failure = new ComisToolError('slice_timeout', what + ' took longer than ' + SLICE_TIMEOUT_MS + ' ms');
      child.kill('SIGKILL');
    }, SLICE_TIMEOUT_MS);
    child.stdout!.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > SLICE_MAX_OUTPUT) {
        failure ??= new ComisToolError('slice_too_large', what + ' output exceeds ' + SLICE_MAX_OUTPUT + ' bytes');
        child.kill('SIGKILL');
      } else out.push(chunk);
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      err = (err + chunk.toString('utf8')).slice(-2000);
    });
    child.on('error', (e) => {
      failure ??= new ComisToolError('slice_failed', what + ': ' + e.message);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      if (failure) return reject(failure);
      if (code === 0 || (code === 1 && file === 'grep')) return resolve(Buffer.concat(out).toString('utf8'));
      reject(new ComisToolError('slice_failed', what + ': ' + err.trim().split('\n').slice(-3).join(' ')));
    });
  });
}

/** grep -n -E over a file, as ResultRef.grep and the inline .grep() both run it. */
async function grepFile(pattern: string, file: string): Promise<Array<{ line: number; text: string }>> {
  const out = await runTool('grep', ['-n', '-E', '-e', String(pattern), file], undefined, 'grep');
  return out
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => {
      const i = l.indexOf(':');
      return { line: Number(l.slice(0, i)), text: l.slice(i + 1) };
    });
}

/** jq -c over a file (each JSONL line one input), as ResultRef.jq and the inline .jq() both run it. */
async function jqFile(expr: string, file: string): Promise<unknown> {
  if (JQ_FORBIDDEN.test(expr)) throw new ComisToolError('jq_refused', 'jq may only transform this ref: no modules, files or environment');
  const out = await runTool('jq', ['-c', expr], file, 'jq');
  const values = out
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as unknown);
  return values.length === 1 ? values[0] : values;
}

/**
 * A high-volume result kept on disk under the run's results/ directory.
 * read/grep/jq slice it here in the jail; sql/jsonpath ask DuckDB outside.
 * Only what you print re-enters the caller's context.
 */
export class ResultRef {
  readonly type = 'ResultRef' as const;
  readonly ref: string;
  readonly kind: 'json' | 'jsonl' | 'csv' | 'text';
  readonly bytes: number;
  readonly rows?: number;
  readonly schema?: string[];
  readonly preview: string;
  readonly expiresAt: number;
  /** web_fetch only: where the page came from and what it was (the content itself is the payload). */
  readonly url?: string;
  readonly finalUrl?: string;
  readonly status?: number;
  readonly contentType?: string;
  readonly title?: string;
  readonly truncated?: boolean;
  readonly untrusted?: true;

  constructor(handle: {
    ref: string;
    kind: ResultRef['kind'];
    bytes: number;
    rows?: number;
    schema?: string[];
    preview: string;
    expiresAt: number;
    url?: string;
    finalUrl?: string;
    status?: number;
    contentType?: string;
    title?: string;
    truncated?: boolean;
    untrusted?: true;
  }) {
    this.ref = handle.ref;
    this.kind = handle.kind;
    this.bytes = handle.bytes;
    if (handle.rows !== undefined) this.rows = handle.rows;
    if (handle.schema !== undefined) this.schema = handle.schema;
    this.preview = handle.preview;
    this.expiresAt = handle.expiresAt;
    if (handle.url !== undefined) this.url = handle.url;
    if (handle.finalUrl !== undefined) this.finalUrl = handle.finalUrl;
    if (handle.status !== undefined) this.status = handle.status;
    if (handle.contentType !== undefined) this.contentType = handle.contentType;
    if (handle.title !== undefined) this.title = handle.title;
    if (handle.truncated !== undefined) this.truncated = handle.truncated;
    if (handle.untrusted === true) this.untrusted = true;
  }

  /** Host-independent path of the payload inside the jail. */
  get path(): string {
    return path.join(process.env.COMIS_WORKSPACE || process.cwd(), this.ref);
  }

  private live(): string {
    if (Date.now() >= this.expiresAt) throw new ComisToolError('ref_expired', 'this ResultRef has expired; fetch it again');
    return this.path;
  }

  /** Lines offset..offset+limit (0-based) of the payload, joined with newlines. */
  async read(offset: number = 0, limit?: number): Promise<string> {
    const file = this.live();
    const out: string[] = [];
    let line = 0;
    let rest = '';
    const end = limit === undefined ? Infinity : offset + limit;
    for await (const chunk of fs.createReadStream(file, { encoding: 'utf8', highWaterMark: 1 << 16 })) {
      const parts = (rest + chunk).split('\n');
      rest = parts.pop() as string;
      for (const p of parts) {
        if (line >= offset && line < end) out.push(p);
        line++;
      }
      if (line >= end) return out.join('\n');
    }
    if (rest !== '' && line >= offset && line < end) out.push(rest);
    return out.join('\n');
  }

  /** Lines matching a POSIX extended regular expression (grep -E), with 1-based line numbers. */
  async grep(pattern: string): Promise<Array<{ line: number; text: string }>> {
    return grepFile(pattern, this.live());
  }

  /** A jq filter over the payload (each JSONL line is one input). One output → that value; else an array of outputs. */
  async jq(expr: string): Promise<unknown> {
    // Refused before anything else, even on an expired handle.
    if (JQ_FORBIDDEN.test(expr)) throw new ComisToolError('jq_refused', 'jq may only transform this ref: no modules, files or environment');
    return jqFile(expr, this.live());
  }

  /** One read-only DuckDB SELECT (read the payload with read_json_auto/read_csv over this.ref). */
  sql(query: string): Promise<Array<Record<string, unknown>> | { error: string }> {
    return invoke('ref_sql', { ref: this.ref, query }) as Promise<Array<Record<string, unknown>> | { error: string }>;
  }

  /** A $-rooted JSONPath extraction (DuckDB json_extract; no eval). */
  jsonpath(expr: string): Promise<unknown> {
    return invoke('ref_jsonpath', { ref: this.ref, expr });
  }

  toJSON(): Record<string, unknown> {
    return {
      type: 'ResultRef',
      ref: this.ref,
      kind: this.kind,
      bytes: this.bytes,
      rows: this.rows,
      schema: this.schema,
      preview: this.preview,
      expiresAt: this.expiresAt,
      url: this.url,
      finalUrl: this.finalUrl,
      status: this.status,
      contentType: this.contentType,
      title: this.title,
      truncated: this.truncated,
      untrusted: this.untrusted,
    };
  }
}

/** Runs `work` on a private temp file holding `text` (the jail's own /tmp), removed after. */
async function withPayloadFile<T>(text: string, work: (file: string) => Promise<T>): Promise<T> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'comis-inline-'));
  try {
    const file = path.join(dir, 'payload');
    fs.writeFileSync(file, text, { mode: 0o600 });
    return await work(file);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function inlineRefusal(method: string): ComisToolError {
  return new ComisToolError('inline_result', '.' + method + '() runs DuckDB over a ResultRef; this result came back inline (under the 15,000-byte threshold): use .jq() or plain code on it');
}

/**
 * The payload of each inline data result, snapshotted when it arrived as the
 * bytes a ResultRef of it would hold (a string as is, anything else as JSON):
 * its methods answer over this, whatever the script did to the value since.
 * Held beside the value, not on it, so the value serialises unchanged.
 */
const inlineTexts = new WeakMap<object, string>();

function inlineText(value: object): string {
  const text = inlineTexts.get(value);
  if (text === undefined) throw new TypeError('not an inline comis_tools result: call the method on the result itself');
  return text;
}

// The methods of every inline result: one set of functions on a shared prototype, not five
// closures and five defineProperty per result (that was most of what the SDK spent per `read`).
const inlineSlices: InlineSlices & ThisType<object> = {
  async read(offset = 0, limit?: number) {
    const lines = inlineText(this).split('\n');
    if (lines[lines.length - 1] === '') lines.pop(); // a final newline ends the last line, as in ResultRef.read
    return lines.slice(offset, limit === undefined ? undefined : offset + limit).join('\n');
  },
  async grep(pattern: string) {
    return withPayloadFile(inlineText(this), (file) => grepFile(pattern, file));
  },
  async jq(expr: string) {
    if (JQ_FORBIDDEN.test(expr)) throw new ComisToolError('jq_refused', 'jq may only transform this ref: no modules, files or environment');
    return withPayloadFile(inlineText(this), (file) => jqFile(expr, file));
  },
  sql: () => Promise.reject(inlineRefusal('sql')),
  jsonpath: () => Promise.reject(inlineRefusal('jsonpath')),
};

/** A prototype that adds the inline methods to `base`: non-enumerable, so for..in, JSON.stringify and console.log see the data only. */
function slicesPrototype(base: object): object {
  const proto = Object.create(base) as object;
  for (const [name, fn] of Object.entries(inlineSlices)) Object.defineProperty(proto, name, { value: fn, enumerable: false, writable: true, configurable: true });
  return proto;
}
// An array result keeps Array.prototype behind the methods (Array.isArray, map, spread are as before).
const INLINE_OBJECT = slicesPrototype(Object.prototype);
const INLINE_ARRAY = slicesPrototype(Array.prototype);

/** Gives an inline data result the ResultRef methods over its payload, as it is now. */
function attachSlices(value: object, payload: unknown): void {
  inlineTexts.set(value, typeof payload === 'string' ? payload : (JSON.stringify(payload) ?? 'null'));
  Object.setPrototypeOf(value, Array.isArray(value) ? INLINE_ARRAY : INLINE_OBJECT);
}

function wrap(value: unknown, tool?: string): unknown {
  if (value && typeof value === 'object' && (value as { type?: unknown }).type === 'ResultRef') return new ResultRef(value as ConstructorParameters<typeof ResultRef>[0]);
  const where = tool === undefined ? undefined : INLINE_PAYLOAD[tool];
  if (where && value && typeof value === 'object') attachSlices(value, where === 'value' ? value : (value as { content?: unknown }).content);
  return value;
}

interface Pending {
  resolve: (value: unknown) => void;
  reject: (error: Error) => void;
  tool: string | undefined;
}
let connection: net.Socket | undefined;
let buffered = '';
let nextId = 1;
const pending = new Map<number, Pending>();

function failAll(error: Error): void {
  for (const entry of pending.values()) entry.reject(error);
  pending.clear();
}

/**
 * The error of a call the socket refused or that failed daemon-side. It is made in the socket's
 * data handler, whose frames (node:net and stream internals) say nothing of where the script made
 * the call, so none are captured: that capture was most of what the SDK spent on a refused call
 * (about 4 µs of it; a refused call now costs the SDK about as much as an answered one).
 */
function replyError(error: { code: string; message: string } | undefined, tool: string | undefined): ComisToolError {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return new ComisToolError(error?.code ?? 'error', error?.message ?? 'tool call failed', tool);
  } finally {
    Error.stackTraceLimit = limit;
  }
}

function connect(): net.Socket {
  if (connection) return connection;
  const socketPath = process.env.COMIS_ORCH_SOCKET;
  if (!socketPath || !process.env.COMIS_CAP_LEASE) {
    throw new ComisToolError('lease_absent', 'COMIS_ORCH_SOCKET and COMIS_CAP_LEASE are not set: comis_tools works inside `comis orchestrate` only.');
  }
  const socket = net.createConnection(socketPath);
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    buffered += chunk;
    let newline = buffered.indexOf('\n');
    while (newline !== -1) {
      const line = buffered.slice(0, newline);
      buffered = buffered.slice(newline + 1);
      newline = buffered.indexOf('\n');
      if (line.trim() === '') continue;
      const reply = JSON.parse(line) as { id: number; ok: boolean; result?: unknown; error?: { code: string; message: string } };
      const entry = pending.get(reply.id);
      if (!entry) continue;
      pending.delete(reply.id);
      if (pending.size === 0) socket.unref();
      if (reply.ok) entry.resolve(wrap(reply.result, entry.tool));
      else entry.reject(replyError(reply.error, entry.tool));
    }
  });
  socket.on('error', (err: Error) => failAll(new ComisToolError('socket_error', 'capability socket: ' + err.message)));
  socket.on('close', () => {
    connection = undefined;
    failAll(new ComisToolError('socket_closed', 'the capability socket closed'));
  });
  socket.unref();
  connection = socket;
  return socket;
}

/** The capability socket's request frame limit: a bigger request is refused here, with its size, instead of closing the socket. */
const MAX_FRAME_BYTES = Number(process.env.COMIS_FRAME_LIMIT) || 64 * 1024; // the runner sets it when the socket takes more (a durable run's checkpoint)

// A lone call (nothing else in flight: the script awaits one call at a time) is written at once,
// with nothing scheduled (a tick per call was about 1 µs of the script's CPU). A call made while
// others are in flight corks the socket until the tick's other callbacks ran, so calls made
// together leave in one write after the first (Promise.all of several from idle: two writes).
let corkedSocket: net.Socket | undefined;

function uncorkBatch(): void {
  corkedSocket?.uncork();
  corkedSocket = undefined;
}

// The bearer, read from the environment once (each process.env read is a lookup in the C++ environment).
let bearer: string | undefined;

function call(method: string, params: unknown, tool?: string): Promise<unknown> {
  const id = nextId++;
  bearer ??= process.env.COMIS_CAP_LEASE;
  const frame = JSON.stringify({ id, bearer, method, params }) + '\n';
  // A UTF-8 byte is at most 3 per UTF-16 unit: a short frame needs no byte count.
  if (frame.length * 3 > MAX_FRAME_BYTES && Buffer.byteLength(frame) > MAX_FRAME_BYTES) {
    return Promise.reject(new ComisToolError('frame_too_large', (tool ?? method) + ': the request is ' + Buffer.byteLength(frame) + ' bytes, over the capability socket limit of ' + MAX_FRAME_BYTES + ' bytes', tool));
  }
  const socket = connect();
  return new Promise((resolve, reject) => {
    // The socket holds the process open while a call is in flight (unref'd when the last one is answered).
    if (pending.size === 0) socket.ref();
    else if (!corkedSocket) {
      corkedSocket = socket;
      socket.cork();
      process.nextTick(uncorkBatch);
    }
    pending.set(id, { resolve, reject, tool });
    socket.write(frame);
  });
}

function invoke(tool: string, params?: Record<string, unknown>): Promise<unknown> {
  return call('tool.invoke', { tool, args: params ?? {} }, tool);
}

let outwardOrdinal = 0;

/**
 * An outward send (message_*): the operation id is the second argument (the
 * upstream form, `message_send(args, "report-send")`), else `operationId` in
 * the arguments, else `<run id>:msg:<ordinal>` (deterministic: the n-th send
 * of a run always carries the same key).
 */
// eslint-disable-next-line @typescript-eslint/no-unused-vars -- called by the generated tool-methods region (message_*)
function invokeOutward(tool: string, params: Record<string, unknown> | undefined, operationId?: string): Promise<unknown> {
  const ordinal = ++outwardOrdinal;
  const args: Record<string, unknown> = { ...(params ?? {}) };
  if (operationId !== undefined) args.operationId = operationId;
  else if (args.operationId === undefined) args.operationId = (process.env.COMIS_RUN_ID || 'run') + ':msg:' + ordinal;
  return invoke(tool, args);
}

/** What every MCP tool returns, as describe(name) gives its result schema. */
const MCP_RESULT_SCHEMA: Record<string, unknown> = {
  type: 'object',
  description: 'McpResult (data, untrusted), or a ResultRef over 15,000 bytes',
  properties: {
    type: { const: 'McpResult' },
    source: { type: 'string' },
    isError: { type: 'boolean' },
    text: { type: 'string' },
    content: { type: 'array', items: { type: 'object' } },
    structuredContent: {},
    truncated: { type: 'boolean' },
    untrusted: { const: true },
  },
  required: ['type', 'source', 'isError', 'content', 'untrusted'],
};

let mcpDigest: McpToolSummary[] | undefined;
/** The MCP tools the runner wrote before the run (COMIS_MCP_TOOLS), read once; none when it did not. */
function mcpTools(): McpToolSummary[] {
  if (mcpDigest) return mcpDigest;
  const file = process.env.COMIS_MCP_TOOLS;
  let list: unknown = [];
  try {
    if (file) list = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    list = [];
  }
  mcpDigest = Array.isArray(list) ? (list as McpToolSummary[]) : [];
  return mcpDigest;
}

function describe(): Array<ToolSummary | McpToolSummary>;
function describe(name: string): ToolDescription | undefined;
function describe(name?: string): Array<ToolSummary | McpToolSummary> | ToolDescription | undefined {
  if (name === undefined) return [...TOOLS.map((tool) => ({ ...tool })), ...mcpTools().map((tool) => JSON.parse(JSON.stringify(tool)) as McpToolSummary)];
  const summary = TOOLS.find((tool) => tool.name === name);
  if (!summary) {
    const mcpTool = mcpTools().find((tool) => tool.name === name && tool.unavailable !== true);
    if (!mcpTool) return undefined;
    const copy = JSON.parse(JSON.stringify(mcpTool)) as McpToolSummary;
    return { ...copy, params: copy.inputSchema ?? {}, result: MCP_RESULT_SCHEMA };
  }
  schemas ??= JSON.parse(SCHEMAS_JSON);
  const full = schemas![name]!;
  return { ...summary, params: full.params, result: full.result };
}

/**
 * Property names the MCP proxy never turns into a call: thenables (so
 * `await comis_tools.mcp.server` calls nothing), JSON, prototypes, Node's
 * inspect, and every symbol. They read as undefined.
 */
const MCP_INERT = new Set([
  'then',
  'catch',
  'finally',
  'toJSON',
  'constructor',
  'prototype',
  '__proto__',
  'inspect',
  'valueOf',
  'toString',
  'toLocaleString',
  'hasOwnProperty',
  'isPrototypeOf',
  'propertyIsEnumerable',
  'asymmetricMatch',
  '$$typeof',
  'nodeType',
  'length',
  'name',
  'call',
  'apply',
  'bind',
]);
const mcpInert = (key: string | symbol): key is symbol => typeof key === 'symbol' || MCP_INERT.has(key) || key.startsWith('__');

/** A proxy with nothing of its own: no keys, no prototype, not writable; `get` alone answers. */
function inertProxy<T extends object>(get: (key: string) => unknown): T {
  return new Proxy(Object.create(null) as T, {
    get: (_target, key) => (mcpInert(key) ? undefined : get(key)),
    has: () => false,
    ownKeys: () => [],
    getOwnPropertyDescriptor: () => undefined,
    set: () => false,
    defineProperty: () => false,
    deleteProperty: () => false,
    getPrototypeOf: () => null,
    setPrototypeOf: () => false,
  });
}

let mcpCatalog: Promise<McpToolInfo[]> | undefined;
function mcpDescribe(): Promise<McpToolInfo[]> {
  // Cached for the run; a failure is not (a later call asks again).
  mcpCatalog ??= (call('mcp.describe', {}, 'mcp') as Promise<McpToolInfo[]>).catch((err: unknown) => {
    mcpCatalog = undefined;
    throw err;
  });
  return mcpCatalog;
}

// Each server's proxy and each tool's function are made once: `comis_tools.mcp.<server>.<tool>(args)`
// in a loop is then two map lookups and the call, with no closure or name built per call.
const mcpServers = new Map<string, { readonly [tool: string]: McpTool }>();
function mcpServer(server: string): { readonly [tool: string]: McpTool } {
  const tools = new Map<string, McpTool>();
  return inertProxy<{ readonly [tool: string]: McpTool }>((tool) => {
    let fn = tools.get(tool);
    if (!fn) {
      const name = 'mcp.' + server + '.' + tool;
      fn = (args?: Record<string, unknown>) => call('mcp', { server, tool, args: args ?? {} }, name) as Promise<McpResult | ResultRef>;
      tools.set(tool, fn);
    }
    return fn;
  });
}
const mcp: McpNamespace = inertProxy<McpNamespace>((server) => {
  if (server === 'describe') return mcpDescribe;
  let tools = mcpServers.get(server);
  if (!tools) {
    tools = mcpServer(server);
    mcpServers.set(server, tools);
  }
  return tools;
});

export const comis_tools: ComisTools = {
  mcp,
  describe,
  // @generated:begin tool-methods
  // @generated:end tool-methods
  invoke,
};
