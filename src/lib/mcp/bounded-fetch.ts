/**
 * The fetch the Streamable HTTP transport uses: the global fetch, with every
 * response body cut off past `maxBytes` (an error, never a silent truncation)
 * and no redirect followed (an operator-configured endpoint that redirects
 * elsewhere is an error, not a new destination).
 */
export function boundedFetch(maxBytes: number): (url: string | URL, init?: RequestInit) => Promise<Response> {
  return async (url, init) => {
    const res = await fetch(url, { ...init, redirect: 'manual' });
    if (res.status >= 300 && res.status < 400) throw new Error(`the server redirected (HTTP ${res.status}); configure its final URL`);
    if (!res.body) return res;
    let seen = 0;
    const limited = res.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          seen += chunk.byteLength;
          if (seen > maxBytes) {
            const err = new Error(`the server sent a response over ${maxBytes} bytes`);
            err.name = 'McpOutputTooLargeError';
            controller.error(err);
            return;
          }
          controller.enqueue(chunk);
        },
      }),
    );
    return new Response(limited, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}
