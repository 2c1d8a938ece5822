import { Writable } from 'node:stream';

/**
 * Gives the protocol sole use of stdout. Returns a stream that writes to the
 * real stdout, and from then on sends anything else written through
 * `process.stdout` (a stray log line, a library's console output) to stderr,
 * where an MCP client keeps the server's diagnostics: one stray byte on
 * stdout would corrupt the JSON-RPC stream the client reads.
 */
export function takeStdoutForProtocol(): Writable {
  const realWrite = process.stdout.write.bind(process.stdout) as (chunk: Uint8Array | string, cb: (err?: Error | null) => void) => boolean;
  const protocol = new Writable({
    // The callback fires once the chunk is handed to the OS, so backpressure reaches the protocol writer.
    write(chunk: Buffer, _encoding, callback) {
      realWrite(chunk, (err) => callback(err ?? null));
    },
  });
  process.stdout.write = ((chunk: Uint8Array | string, encoding?: BufferEncoding | ((err?: Error | null) => void), cb?: (err?: Error | null) => void): boolean =>
    typeof encoding === 'function' ? process.stderr.write(chunk, encoding) : process.stderr.write(chunk, encoding, cb)) as typeof process.stdout.write;
  return protocol;
}
