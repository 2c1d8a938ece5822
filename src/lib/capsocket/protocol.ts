/**
 * The wire of the capability socket, shared by the server (server.ts) and
 * every handler behind it (dispatch, tools, resultref), so a tool that
 * reports an error imports the protocol, not the socket server.
 *
 * Newline-delimited JSON: a request `{id, bearer, method, params}` gets one
 * reply `{id, ok: true, result}` or `{id, ok: false, error: {code, message}}`.
 * The SDK runtimes (src/lib/sdk/runtime/) speak the client side of it.
 */

/** One request frame, as the server hands it to the handler. */
export interface CapRequest {
  id: string | number;
  method: string;
  params: unknown;
  bearer: unknown;
}

export interface CapErrorBody {
  code: string;
  message: string;
}

/** One reply frame; `id` is null when the request had no usable id. */
export type CapReply = { id: string | number | null; ok: true; result: unknown } | { id: string | number | null; ok: false; error: CapErrorBody };

/**
 * Error codes the socket itself answers with, before or instead of a
 * handler: frame-level abuse, a full connection, or a handler that threw
 * something other than a CapCallError (its detail stays daemon-side).
 */
export const CAP_SOCKET_ERRORS = {
  badFrame: 'bad_frame',
  badRequest: 'bad_request',
  busy: 'busy',
  frameTooLarge: 'frame_too_large',
  internal: 'internal',
} as const;

/**
 * Thrown by a handler to send a specific error code back to the script. It is
 * an answer, not a fault: the script gets its code and message, and nothing
 * reads a stack, so none is captured (about 2 µs of every refused call, more
 * than the gate's own checks).
 */
export class CapCallError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
      super(message);
    } finally {
      Error.stackTraceLimit = limit;
    }
    this.code = code;
    this.name = 'CapCallError';
  }
}

export type CapHandler = (request: CapRequest) => Promise<unknown>;
