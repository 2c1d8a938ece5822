// Loaded with `node --import` by tests and benchmarks: records every module the
// process loads (ESM through a resolve hook, CommonJS through require.cache,
// the modules bundled into dist/cli/fast-*.bundle.cjs as they are
// evaluated) and writes the list to $COMIS_TRACE_IMPORTS at exit.
import { writeFileSync } from 'node:fs';
import { createRequire, register } from 'node:module';
import { MessageChannel } from 'node:worker_threads';

const out = process.env.COMIS_TRACE_IMPORTS;
const seen = new Set();
const { port1, port2 } = new MessageChannel();
port1.on('message', (url) => seen.add(url));
port1.unref();
register(
  'data:text/javascript,' +
    encodeURIComponent(`let port;
export function initialize(data) { port = data.port; }
export async function resolve(specifier, context, next) {
  const result = await next(specifier, context);
  port.postMessage(result.url);
  return result;
}`),
  import.meta.url,
  { data: { port: port2 }, transferList: [port2] },
);
const require = createRequire(import.meta.url);
process.on('exit', () => {
  for (const key of Object.keys(require.cache)) seen.add(key);
  // The dist modules a fast-path bundle evaluated, as their own files' URLs (src/cli/bundle-loader.ts).
  for (const url of globalThis[Symbol.for('comis.bundle.loaded')] ?? []) seen.add(url);
  if (out) writeFileSync(out, [...seen].join('\n'));
});
