/**
 * Every code example of seed 000 ("the orchestrate tool") runs as written through
 * `comis orchestrate`. The snippets are in examples/seed/, copied verbatim from the seed,
 * fragments included: most of them use `comis_tools` without the import line (the seed's
 * "may import"), and the SDK is there anyway. The only change a test makes is the host:
 * `https://example.com` becomes a node http server on 127.0.0.1 that web_fetch reaches through
 * `web.fetch.allowPrivate` (nothing leaves the machine); the search provider is a fake SearXNG,
 * the MCP server `myserver` is the repo's SDK-built fixture server, the Telegram API a fake on
 * 127.0.0.1 speaking its wire shape. (The research example and the fetch → transform → send one
 * have their own tests: research-example.test.ts, message.test.ts.)
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { parseJson, repoRoot } from '../helpers/cli.js';
import { requireDuckDbInCi, skipWithoutDuckDb } from '../helpers/duckdb.js';
import { runComisAsync, startFakeSearch } from '../helpers/fake-search.js';
import { EDGE_ENTRY } from '../helpers/mcp.js';
import { startFakeTelegram, type FakeTelegram } from '../helpers/message-fakes.js';
import { makeHome } from '../helpers/orchestrate.js';
import { startWebServer, type WebServer } from '../helpers/web-server.js';

const TG_TOKEN = '515151:seed-snippet-telegram-token';
let web: WebServer;
let tg: FakeTelegram;
beforeAll(async () => {
  web = await startWebServer();
  tg = await startFakeTelegram(TG_TOKEN);
});
afterAll(async () => {
  await web.close();
  await tg.close();
});

/** The seed's snippet, verbatim but for its host. */
function snippet(name: string): string {
  const text = readFileSync(join(repoRoot, 'examples', 'seed', name), 'utf8');
  expect(text).toMatch(/https:\/\/example\.com|comis_tools\.(mcp|write)/);
  return text.replaceAll('https://example.com', web.url('').replace(/\/$/, ''));
}

function config(extra = ''): string {
  return `${extra}agents:\n  default:\n    autonomy:\n      write: true\n      message:\n        origin: telegram/chat123\n      mcp:\n        allow: ["myserver.mytool"]\n    web:\n      fetch:\n        allowPrivate: ["127.0.0.1:${web.port}"]\n`;
}

async function run(home: string, script: string, env: Record<string, string> = {}): Promise<{ result: any; stderr: string }> {
  const res = await runComisAsync(['orchestrate', script, '--json'], { home, env });
  const body = parseJson(res.stdout);
  expect(body.status, res.stdout + res.stderr).toBe('ok');
  expect(body.result.outcome, `${body.result.stdout}\n${res.stderr}`).toBe('success');
  return { result: body.result, stderr: res.stderr };
}

const tally = (result: any): string[] => result.toolCalls.map((t: { tool: string; decision: string; count: number }) => `${t.tool}:${t.decision}:${t.count}`).sort();

describe("seed 000's examples, as written (examples/seed/)", { timeout: 180_000 }, () => {
  it('discovery: describe, read, grep, memory_search, web_search, web_fetch in one script', async () => {
    const search = await startFakeSearch('searxng', (q) => [{ title: `About ${q}`, url: web.url('/page.html'), snippet: 'release notes' }]);
    const h = makeHome(config().replace('    web:\n', `    web:\n      search:\n        provider: searxng\n        baseUrl: ${search.baseUrl}\n`));
    const ws = h.workspace();
    writeFileSync(join(ws, 'notes.md'), '# Notes\nTODO: ship it\n');
    mkdirSync(join(ws, 'memory'));
    writeFileSync(join(ws, 'memory', 'ops.md'), '# Deployment runbook\nRoll out canary first.\n');
    const { result } = await run(h.home, h.script('discovery.ts', snippet('discovery.ts')));
    expect(tally(result)).toEqual(['grep:allow:1', 'memory_search:allow:1', 'read:allow:1', 'web_fetch:allow:1', 'web_search:allow:1']);
    expect(search.requests.map((r) => r.query.get('q'))).toEqual(['comisai release notes']);
    expect(web.requests).toContain('/');
  });

  it('ResultRef: web_fetch a big JSON page, then .jq, .grep and .read slice it in the jail', async () => {
    const h = makeHome(config());
    const { result } = await run(h.home, h.script('resultref.ts', snippet('resultref.ts')));
    expect(result.resultRefs.count).toBe(1);
    const ids = JSON.parse(result.stdout) as number[];
    expect(ids.length).toBeGreaterThan(100);
    expect(ids.slice(0, 3)).toEqual([0, 1, 2]);
    expect(result.stdout.length).toBeLessThan(result.resultRefs.bytes / 4);
  });

  it.skipIf(skipWithoutDuckDb)('SQL: .sql over a fetched JSONL with rows.ref, and .jsonpath', async () => {
    requireDuckDbInCi();
    const h = makeHome(config());
    const { result } = await run(h.home, h.script('sql.ts', snippet('sql.ts')));
    const top = JSON.parse(result.stdout) as { id: number; price: number }[];
    expect(top).toHaveLength(5);
    expect(top.every((r) => r.price > 100)).toBe(true);
    expect(top.map((r) => r.price)).toEqual([...top.map((r) => r.price)].sort((a, b) => b - a));
    expect(tally(result)).toEqual(['ref_jsonpath:allow:1', 'ref_sql:allow:1', 'web_fetch:allow:1']);
  });

  for (const file of ['mcp.ts', 'mcp.py']) {
    it(`MCP (${file}): comis_tools.mcp.myserver.mytool({query: "hello"}) on an allowlisted server`, async () => {
      const server = `mcp:\n  servers:\n    myserver:\n      command: ${JSON.stringify(process.execPath)}\n      args: ${JSON.stringify([EDGE_ENTRY])}\n      startupTimeoutMs: 30000\n`;
      const h = makeHome(config(server));
      const { result } = await run(h.home, h.script(file, snippet(file)));
      expect(result.stdout).toContain('mytool answered: hello');
      expect(tally(result)).toEqual(['mcp:myserver.mytool:allow:1']);
    });
  }

  it('write + message_send to the origin channel (telegram/chat123)', async () => {
    const h = makeHome(config(`channels:\n  telegram:\n    type: telegram\n    tokenEnv: TELEGRAM_BOT_TOKEN\n    baseUrl: ${tg.baseUrl}\n`));
    const before = tg.calls.length;
    const { result } = await run(h.home, h.script('write-message.ts', snippet('write-message.ts')), { TELEGRAM_BOT_TOKEN: TG_TOKEN });
    // write() lands in the run's own results/writes/ (run-ephemeral, reaped at run end): its proof is the allowed call.
    expect(tg.calls.slice(before)).toEqual([{ method: 'sendMessage', body: { chat_id: 'chat123', text: 'Done.' } }]);
    expect(tally(result)).toEqual(['message_send:allow:1', 'write:allow:1']);
  });

  it('Python: web_fetch a big page, .grep and .read in the jail, print the head', async () => {
    const h = makeHome(config());
    const { result } = await run(h.home, h.script('web-fetch.py', snippet('web-fetch.py')));
    expect(result.resultRefs.count).toBe(1);
    expect(result.stdout.split('\n').length).toBeLessThanOrEqual(42);
    expect(result.stdout).toContain('"id": 0,');
  });
});
