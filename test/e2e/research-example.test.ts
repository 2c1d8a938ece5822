/**
 * Seed 000's "research in one turn", exactly as examples/research.ts and
 * examples/research.py write it, end to end through `comis orchestrate`:
 * a fake SearXNG on 127.0.0.1 (its real JSON shape) answers the search with
 * URLs of pages a node http server on 127.0.0.1 serves, which web_fetch
 * reaches through `web.fetch.allowPrivate` (nothing leaves the machine).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { parseJson, repoRoot } from '../helpers/cli.js';
import { runComisAsync, startFakeSearch } from '../helpers/fake-search.js';
import { makeHome } from '../helpers/orchestrate.js';

const closers: (() => void)[] = [];
afterEach(() => {
  while (closers.length > 0) closers.pop()!();
});

/**
 * An article of `paragraphs` short paragraphs: past web_fetch's 50,000-char cut, so each fetch
 * comes back as a ResultRef and the 60 lines the example prints are a small part of it.
 */
function article(n: number, paragraphs: number): string {
  const body = Array.from({ length: paragraphs }, (_, i) => `<p>Page ${n} paragraph ${i}: results stay out.</p>`).join('\n');
  return `<!doctype html><html><head><title>Page ${n}</title></head><body><article><h1>Page ${n} heading</h1>\n${body}\n<div style="display:none">HIDDEN-TRAP-${n}</div></article></body></html>`;
}

async function pagesServer(): Promise<{ origin: string; port: number; hits: string[] }> {
  const hits: string[] = [];
  const server = createServer((req, res) => {
    hits.push(req.url ?? '');
    const m = /^\/page-(\d+)$/.exec(req.url ?? '');
    if (!m) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(article(Number(m[1]), 3000));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  closers.push(() => {
    server.closeAllConnections();
    server.close();
  });
  const { port } = server.address() as AddressInfo;
  return { origin: `http://127.0.0.1:${port}`, port, hits };
}

async function setup(): Promise<{ h: ReturnType<typeof makeHome>; pages: Awaited<ReturnType<typeof pagesServer>>; searches: Awaited<ReturnType<typeof startFakeSearch>> }> {
  const pages = await pagesServer();
  const searches = await startFakeSearch('searxng', (q) => Array.from({ length: 5 }, (_, i) => ({ title: `Result ${i} for ${q}`, url: `${pages.origin}/page-${i}`, snippet: `About page ${i}.` })));
  const h = makeHome(`agents:\n  default:\n    web:\n      search:\n        provider: searxng\n        baseUrl: ${searches.baseUrl}\n      fetch:\n        allowPrivate: ["127.0.0.1:${pages.port}"]\n`);
  return { h, pages, searches };
}

function checkOutput(stdout: string): void {
  const parts = stdout.replace(/\n$/, '').split('\n---\n');
  expect(parts).toHaveLength(3);
  parts.forEach((part, i) => {
    expect(part).toContain(`Page ${i} heading`);
    expect(part).toContain(`Page ${i} paragraph 0:`);
    // Only the readable head (60 lines) of each page re-enters, never the hidden trap.
    expect(part).not.toContain(`Page ${i} paragraph 100:`);
    expect(part).not.toContain('HIDDEN-TRAP');
  });
}

describe('examples/research (seed 000, research in one turn)', () => {
  for (const file of ['research.ts', 'research.py']) {
    it(`${file}: search → jq the top URLs → fetch each → slice → print, as written`, async () => {
      const { h, pages, searches } = await setup();
      const res = await runComisAsync(['orchestrate', join(repoRoot, 'examples', file), '--json'], { home: h.home });
      const body = parseJson(res.stdout);
      expect(body.status, res.stdout + res.stderr).toBe('ok');
      checkOutput(body.result.stdout);
      expect(searches.requests.map((r) => r.query.get('q'))).toEqual(['comis autonomy model']);
      expect(pages.hits).toEqual(['/page-0', '/page-1', '/page-2']);
      const calls = body.result.toolCalls.map((t: { tool: string; decision: string; count: number }) => [t.tool, t.decision, t.count]);
      expect(calls).toEqual([
        ['web_fetch', 'allow', 3],
        ['web_search', 'allow', 1],
      ]);
      // The fetched pages stayed on disk: almost nothing of them re-entered.
      expect(body.result.resultRefs.count).toBe(3);
      expect(body.result.savings.savedRatio).toBeGreaterThanOrEqual(0.95);
    });
  }
});
