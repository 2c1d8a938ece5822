// The bodies bench/web-fetch.mjs fetches, and a server of them. Run as a program it serves them on
// 127.0.0.1 (an ephemeral port, printed as one line `port <n>`) until its stdin ends: the "local
// server" of the bench in a process of its own, as a web server is, so neither the comis process
// nor the baseline's shares an event loop with it.
import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';

export const MB = 1024 * 1024;
const line = 'lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor\n';
const text = line.repeat(Math.ceil(MB / line.length)).slice(0, MB);
const csv = `id,name,note\n${Array.from({ length: Math.ceil(MB / 48) }, (_, i) => `${i},item-${i},${'x'.repeat(30)}`).join('\n')}\n`.slice(0, MB);
const para = `<p>${'lorem ipsum dolor sit amet '.repeat(20)}</p>\n`;
// JSON and JSONL (BENCH_CASES=json,jsonl): data kinds not streamed like a clean CSV. Clean ASCII
// bodies that round-trip exactly (these do) are scanned once (web/json-fast.ts); others are parsed,
// sanitized value by value and written back (a tree before json-fast does that to these too).
const rows = Array.from({ length: Math.ceil(MB / 60) }, (_, i) => ({ id: i, name: `item-${i}`, note: 'x'.repeat(24) }));
const jsonl = `${rows.map((r) => JSON.stringify(r)).join('\n')}\n`;
const json = JSON.stringify({ rows });
export const html = `<!doctype html><html><head><title>Big</title></head><body><article>${para.repeat(Math.ceil(MB / para.length))}</article></body></html>`;
/** Path -> [content type, body]: bytes, not strings, so a server does not re-encode 1 MB per request inside the measured time. */
export const bodies = {
  '/page.txt': ['text/plain', Buffer.from(text)],
  '/data.csv': ['text/csv', Buffer.from(csv)],
  '/page.html': ['text/html', Buffer.from(html)],
  '/data.jsonl': ['application/x-ndjson', Buffer.from(jsonl)],
  '/data.json': ['application/json', Buffer.from(json)],
};

/** Answers a request for one of `bodies` (a 2-byte `ok` for any other path); true when it did. */
export function servePage(req, res) {
  const path = new URL(req.url, 'http://x').pathname;
  const [type, body] = bodies[path] ?? ['text/plain', Buffer.from('ok')];
  res.writeHead(200, { 'content-type': type });
  res.end(body);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const server = createServer(servePage);
  server.listen(0, '127.0.0.1', () => process.stdout.write(`port ${server.address().port}\n`));
  process.stdin.on('end', () => server.close(() => process.exit(0)));
  process.stdin.resume();
}
