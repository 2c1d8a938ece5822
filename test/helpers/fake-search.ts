/**
 * Fakes of the paid search APIs, on 127.0.0.1, speaking their real wire
 * protocol over a real socket (node `http`):
 * - SearXNG: `GET /search?q=…&format=json` → `{query, number_of_results, results: [{url, title, content, engine, …}], …}`
 * - Brave Search API: `GET /res/v1/web/search?q=…&count=N` with `X-Subscription-Token` →
 *   `{type: "search", query: {original}, web: {type: "search", results: [{title, url, description, …}]}}`
 * - Tavily: `POST /search` with `Authorization: Bearer <key>` and JSON `{query, max_results}` →
 *   `{query, answer, images, results: [{title, url, content, score, raw_content}], response_time}`
 * Each records the requests it got. A key mismatch answers 401 as the real APIs do.
 *
 * The CLI runs through {@link runComisAsync}: spawnSync would block this
 * process's event loop, and with it the fake server the run talks to.
 */
import { spawn } from 'node:child_process';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

import { afterEach } from 'vitest';

import { comisBin, repoRoot, type CliResult } from './cli.js';

export interface FakeHit {
  title: string;
  url: string;
  snippet: string;
}

export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  body: string;
}

export interface FakeSearch {
  baseUrl: string;
  requests: RecordedRequest[];
  /** Replace what the next searches answer. */
  respond: (handler: (req: RecordedRequest, res: ServerResponse) => boolean | void) => void;
  close: () => Promise<void>;
}

export type FakeKind = 'searxng' | 'brave' | 'tavily';

const servers: Server[] = [];
afterEach(async () => {
  while (servers.length > 0) {
    const s = servers.pop()!;
    s.closeAllConnections();
    await new Promise<void>((r) => s.close(() => r()));
  }
});

function shape(kind: FakeKind, query: string, hits: FakeHit[]): unknown {
  if (kind === 'searxng') {
    return {
      query,
      number_of_results: hits.length,
      results: hits.map((h, i) => ({ url: h.url, title: h.title, content: h.snippet, engine: 'duckduckgo', engines: ['duckduckgo'], positions: [i + 1], score: 1 / (i + 1), category: 'general' })),
      answers: [],
      corrections: [],
      infoboxes: [],
      suggestions: [],
      unresponsive_engines: [],
    };
  }
  if (kind === 'brave') {
    return {
      type: 'search',
      query: { original: query, more_results_available: false },
      mixed: { type: 'mixed', main: hits.map((_, i) => ({ type: 'web', index: i, all: false })) },
      web: {
        type: 'search',
        family_friendly: true,
        results: hits.map((h) => ({ type: 'search_result', title: h.title, url: h.url, description: h.snippet, is_source_local: false, language: 'en', meta_url: { hostname: new URL(h.url).hostname } })),
      },
    };
  }
  return { query, follow_up_questions: null, answer: null, images: [], results: hits.map((h, i) => ({ title: h.title, url: h.url, content: h.snippet, score: 0.9 - i * 0.01, raw_content: null })), response_time: 0.42 };
}

/** A fake provider answering `hits` (for the query it got), checking `key` where the real API would. */
export async function startFakeSearch(kind: FakeKind, hits: FakeHit[] | ((query: string) => FakeHit[]), key?: string): Promise<FakeSearch> {
  const requests: RecordedRequest[] = [];
  let override: ((req: RecordedRequest, res: ServerResponse) => boolean | void) | undefined;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      const rec: RecordedRequest = { method: req.method ?? '', path: url.pathname, query: url.searchParams, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      requests.push(rec);
      if (override && override(rec, res) !== false) return;
      const json = (status: number, body: unknown): void => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      let query: string;
      if (kind === 'searxng') {
        if (rec.method !== 'GET' || rec.path !== '/search') return json(404, { error: 'not found' });
        if (url.searchParams.get('format') !== 'json') return json(403, { error: 'format not allowed' });
        query = url.searchParams.get('q') ?? '';
      } else if (kind === 'brave') {
        if (rec.method !== 'GET' || rec.path !== '/res/v1/web/search') return json(404, { error: 'not found' });
        if (key !== undefined && req.headers['x-subscription-token'] !== key) return json(401, { type: 'ErrorResponse', error: { code: 'SUBSCRIPTION_TOKEN_INVALID', status: 401 } });
        query = url.searchParams.get('q') ?? '';
      } else {
        if (rec.method !== 'POST' || rec.path !== '/search') return json(404, { detail: 'Not Found' });
        if (key !== undefined && req.headers.authorization !== `Bearer ${key}`) return json(401, { detail: { error: 'Unauthorized: missing or invalid API key.' } });
        try {
          query = (JSON.parse(rec.body) as { query: string }).query;
        } catch {
          return json(400, { detail: 'bad json' });
        }
      }
      const list = typeof hits === 'function' ? hits(query) : hits;
      json(200, shape(kind, query, list));
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    requests,
    respond: (handler) => {
      override = handler;
    },
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

/** `runComis`, without blocking this process (the fake servers live here). */
export function runComisAsync(args: string[], options: { home: string; env?: Record<string, string | undefined>; timeoutMs?: number }): Promise<CliResult> {
  const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: options.home, COMIS_HOME: options.home };
  for (const [k, v] of Object.entries(options.env ?? {})) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [comisBin, ...args], { env, cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 120_000);
    child.on('error', reject);
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}
