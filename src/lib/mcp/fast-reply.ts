/**
 * The two checks of a server's reply on the hot path of a script's MCP call,
 * each a shortcut in front of the SDK's own zod schema:
 *
 *  - {@link replyDeserializer}: a stdio line into a JSON-RPC message (the
 *    SDK's `deserializeMessage`, a union of four schemas, on every line);
 *  - {@link callToolResultSchema}: the `tools/call` result (the SDK's
 *    `CallToolResultSchema`, a union of five content schemas per part).
 *
 * Each recognizes by hand only the common reply (a result response; a result
 * of text parts), a strict subset of what the SDK's schema accepts and for
 * which that schema would return an equal value. Everything else goes through
 * the SDK's schema itself, so a malformed reply fails exactly as it did: the
 * same verdict, the same error. test/mcp/fast-reply.test.ts holds the
 * shortcuts to the schemas over valid, malformed and mutated replies.
 *
 * Loaded with the SDK (client-manager.ts, first connection); the SDK's zod
 * schemas and zod itself are passed in, so this module imports neither (the
 * run's bundle would otherwise load a second copy of each).
 */
import type { CallToolResult, JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import type { z } from 'zod/v4';

/** A plain JSON object (what JSON.parse gives for `{…}`). */
function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** Own keys of `o`, at most `max` of them counted (more: Infinity). */
function keyCount(o: object, max: number): number {
  let n = 0;
  for (const k in o) if (Object.hasOwn(o, k) && ++n > max) return Infinity;
  return n;
}

/**
 * `{jsonrpc: "2.0", id, result}` and nothing else, the id a string or a safe
 * integer, the result an object without `_meta`: JSONRPCResultResponseSchema
 * accepts it (the request and notification schemas, tried first, are strict
 * and need a method) and returns the same fields. Not with an own `__proto__`
 * key in the result (JSON.parse makes it a plain property; zod's copy of the
 * result drops it).
 */
function isPlainResultResponse(m: unknown): m is JSONRPCMessage {
  if (!isObject(m) || m.jsonrpc !== '2.0' || !isObject(m.result) || m.result._meta !== undefined || Object.hasOwn(m.result, '__proto__')) return false;
  const id = m.id;
  return (typeof id === 'string' || Number.isSafeInteger(id)) && keyCount(m, 3) === 3;
}

/** The transport's line parser: a plain result response as parsed, every other line through the SDK's `deserializeMessage`. */
export function replyDeserializer(sdkDeserialize: (line: string) => JSONRPCMessage): (line: string) => JSONRPCMessage {
  return (line) => {
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      return sdkDeserialize(line);
    }
    return isPlainResultResponse(parsed) ? parsed : sdkDeserialize(line);
  };
}

/**
 * `{content: [{type: "text", text}, …], isError?}` and nothing else (each
 * part exactly those two keys, `isError` a boolean when present):
 * CallToolResultSchema accepts it, its text schema matching each part first,
 * and returns an equal value.
 */
function isTextOnlyResult(r: unknown): r is CallToolResult {
  if (!isObject(r) || !Array.isArray(r.content)) return false;
  const keys = keyCount(r, 2);
  if (r.isError === undefined ? keys !== 1 : typeof r.isError !== 'boolean' || keys !== 2) return false;
  for (const part of r.content as unknown[]) {
    if (!isObject(part) || part.type !== 'text' || typeof part.text !== 'string' || keyCount(part, 2) !== 2) return false;
  }
  return true;
}

/**
 * The check of a `tools/call` result: a text-only result as it came, any
 * other through `CallToolResultSchema`, whose ZodError (thrown here, it
 * rejects the call as the SDK's own check did) is the call's error.
 */
export function callToolResultCheck(sdkSchema: z.ZodType<CallToolResult>): (result: unknown) => CallToolResult {
  return (r) => {
    if (isTextOnlyResult(r)) return r;
    const parsed = sdkSchema.safeParse(r);
    if (!parsed.success) throw parsed.error;
    return parsed.data;
  };
}

/** {@link callToolResultCheck} as the result schema the SDK's `callTool` asks for (a throw in a transform propagates, the same error). */
export function callToolResultSchema(zod: typeof z, sdkSchema: z.ZodType<CallToolResult>): z.ZodType<CallToolResult> {
  return zod.unknown().transform(callToolResultCheck(sdkSchema));
}
