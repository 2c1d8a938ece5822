/**
 * A script's `tools/call` on a stdio server, sent on comis's own transport
 * beside the SDK's Client rather than through `Client.callTool`.
 *
 * Why: on the hot path the SDK spends, per call, an async wrapper, a promise
 * with five closures, a timeout record, a zod check of every incoming message
 * (`isJSONRPCResultResponse`) and a zod parse of the result; for a fresh comis
 * that is most of the MCP client's share of a call. Here a call is one pending
 * entry, one timer and one write, and the reply is matched by id before the
 * SDK sees it.
 *
 * What stays the SDK's: everything else. Calls use negative ids, which the
 * SDK (counting up from 0) never sends; any other message, and a reply to a
 * negative id nobody waits for any more, goes on to the SDK's own handler as
 * before. The result is checked by the same function the SDK path uses
 * (fast-reply.ts); an error reply becomes the SDK's `McpError`; past the
 * timeout the call fails with the SDK's timeout error and the server gets the
 * same `notifications/cancelled`; when the transport closes every pending
 * call fails. Tools whose results the SDK checks further (an output schema, a
 * required task) are not called here (client-manager.ts).
 */
import type { CallToolResult, JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

import type { ReapedStdioTransport } from './stdio-transport.js';

/** The SDK's `McpError.fromError`: an error reply (or a timeout) as the SDK would reject the call with it. */
type McpErrorOf = (code: number, message: string, data?: unknown) => Error;

/** JSON-RPC's RequestTimeout, the SDK's `ErrorCode.RequestTimeout`. */
const REQUEST_TIMEOUT = -32001;
/** The SDK's `ErrorCode.ConnectionClosed`. */
const CONNECTION_CLOSED = -32000;

interface Pending {
  resolve: (result: CallToolResult) => void;
  reject: (err: unknown) => void;
  timer: NodeJS.Timeout;
}

/** A reply to a request: `{id, result}` or `{id, error}`, no method. */
interface Reply {
  id?: unknown;
  method?: unknown;
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
}

export type DirectToolCall = (tool: string, args: Record<string, unknown>, timeoutMs: number) => Promise<CallToolResult>;

/**
 * Installs the direct path on a connected transport (after `Client.connect`,
 * whose handlers it wraps) and returns the call function.
 */
export function directToolCalls(transport: ReapedStdioTransport, check: (result: unknown) => CallToolResult, mcpError: McpErrorOf): DirectToolCall {
  const pending = new Map<number, Pending>();
  let lastId = 0;

  const sdkMessage = transport.onmessage;
  transport.onmessage = (message: JSONRPCMessage) => {
    const reply = message as Reply;
    const p = typeof reply.id === 'number' && reply.id < 0 && reply.method === undefined ? pending.get(reply.id) : undefined;
    if (p === undefined) {
      sdkMessage?.(message);
      return;
    }
    pending.delete(reply.id as number);
    clearTimeout(p.timer);
    if (reply.error !== undefined) {
      p.reject(mcpError(reply.error.code, reply.error.message, reply.error.data));
      return;
    }
    let result: CallToolResult;
    try {
      result = check(reply.result);
    } catch (err) {
      p.reject(err);
      return;
    }
    p.resolve(result);
  };
  const sdkClose = transport.onclose;
  transport.onclose = () => {
    sdkClose?.();
    for (const p of pending.values()) {
      clearTimeout(p.timer);
      p.reject(mcpError(CONNECTION_CLOSED, 'Connection closed'));
    }
    pending.clear();
  };

  return (tool, args, timeoutMs) =>
    new Promise<CallToolResult>((resolve, reject) => {
      const id = --lastId;
      const timer = setTimeout(() => {
        pending.delete(id);
        const err = mcpError(REQUEST_TIMEOUT, 'Request timed out', { timeout: timeoutMs });
        // As the SDK does: the server may stop the work; a failed notice changes nothing for the call.
        transport.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: String(err) } }).catch(() => undefined);
        reject(err);
      }, timeoutMs);
      pending.set(id, { resolve, reject, timer });
      transport.send({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: tool, arguments: args } }).catch((err: unknown) => {
        if (pending.delete(id)) {
          clearTimeout(timer);
          reject(err);
        }
      });
    });
}
