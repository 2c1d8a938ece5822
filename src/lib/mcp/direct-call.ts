/**
 * A script's `tools/call` on a stdio server, sent on comis's own transport
 * beside the SDK's Client rather than through `Client.callTool`.
 *
 * Why: on the hot path the SDK spends, per call, an async wrapper, a promise
 * with five closures, a timeout record, a zod check of every incoming message
 * (`isJSONRPCResultResponse`) and a zod parse of the result; for a fresh comis
 * that is most of the MCP client's share of a call. Here a call is one pending
 * entry, one timer and one write, and the reply is matched by id before the
 * SDK sees it. The call timeout is one timer per server, not one per call:
 * Node keeps a list per timer duration and drops it once empty, so a timer
 * set and cleared on every call also makes and drops that list and moves it
 * in the timers' priority queue each time.
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
  /** performance.now() past which the call fails with the timeout. */
  deadline: number;
}

/** A reply to a request: `{id, result}` or `{id, error}`, no method. */
interface Reply {
  id?: unknown;
  method?: unknown;
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
}

export type DirectToolCall = (tool: string, args: Record<string, unknown>) => Promise<CallToolResult>;

/**
 * Installs the direct path on a connected transport (after `Client.connect`,
 * whose handlers it wraps) and returns the call function; each call fails
 * after `timeoutMs` (the server's call timeout) without a reply.
 */
export function directToolCalls(transport: ReapedStdioTransport, timeoutMs: number, check: (result: unknown) => CallToolResult, mcpError: McpErrorOf): DirectToolCall {
  /** The calls waiting, oldest first: with one timeout for all, also in the order of their deadlines. */
  const pending = new Map<number, Pending>();
  let lastId = 0;
  let timer: NodeJS.Timeout | undefined;

  /** Fails the calls past their deadline; set again for the oldest left, if any. */
  function sweep(): void {
    timer = undefined;
    const now = performance.now();
    for (const [id, p] of pending) {
      if (p.deadline > now) {
        arm(p.deadline - now);
        return;
      }
      pending.delete(id);
      const err = mcpError(REQUEST_TIMEOUT, 'Request timed out', { timeout: timeoutMs });
      // As the SDK does: the server may stop the work; a failed notice changes nothing for the call.
      transport.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: String(err) } }).catch(() => undefined);
      p.reject(err);
    }
  }
  // Unreferenced: it may stay set after the last reply (clearing it is the churn avoided above); a call waiting keeps comis up through the server's pipes.
  function arm(ms: number): void {
    timer = setTimeout(sweep, ms);
    timer.unref();
  }

  const sdkMessage = transport.onmessage;
  transport.onmessage = (message: JSONRPCMessage) => {
    const reply = message as Reply;
    const p = typeof reply.id === 'number' && reply.id < 0 && reply.method === undefined ? pending.get(reply.id) : undefined;
    if (p === undefined) {
      sdkMessage?.(message);
      return;
    }
    pending.delete(reply.id as number);
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
    clearTimeout(timer);
    for (const p of pending.values()) p.reject(mcpError(CONNECTION_CLOSED, 'Connection closed'));
    pending.clear();
  };

  return (tool, args) =>
    new Promise<CallToolResult>((resolve, reject) => {
      const id = --lastId;
      pending.set(id, { resolve, reject, deadline: performance.now() + timeoutMs });
      if (timer === undefined) arm(timeoutMs);
      transport.send({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: tool, arguments: args } }).catch((err: unknown) => {
        if (pending.delete(id)) reject(err);
      });
    });
}
