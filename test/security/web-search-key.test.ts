/**
 * The search API key (a canary) never leaves comis in clear: not to the
 * jailed script (its environment, /proc, results, errors), not to stdout,
 * stderr, `explain`/`fleet` output, the store or the logs, even when the
 * provider echoes the key back in its results or in an error body.
 *
 * Positive controls: the fake provider really received the key (so comis
 * held and used it), the echoed key really reached comis (it comes back as
 * `[REDACTED]` where the provider put it), and the script reached every
 * attack line.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { parseJson } from '../helpers/cli.js';
import { runComisAsync, startFakeSearch } from '../helpers/fake-search.js';
import { makeHome } from '../helpers/orchestrate.js';

const KEY = 'BSA-CANARY-KEY-5e1f0c9a7b3d';

function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

describe('the web_search API key', () => {
  it('never reaches the script, its output, explain, fleet, the store or the logs, even when the provider echoes it', async () => {
    const fake = await startFakeSearch(
      'brave',
      (query) =>
        query === 'echo'
          ? [
              { title: `title with ${KEY}`, url: 'https://example.org/echo', snippet: `the key is ${KEY}.` },
              { title: 'url carries the key', url: `https://example.org/?k=${KEY}`, snippet: 'dropped' },
            ]
          : [{ title: 'plain', url: 'https://example.org/plain', snippet: 'plain' }],
      KEY,
    );
    fake.respond((req, res) => {
      if (req.query.get('q') !== 'fail') return false;
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { detail: `invalid token ${KEY}`, token: KEY } }));
      return true;
    });
    const h = makeHome(`agents:\n  default:\n    web:\n      search:\n        provider: brave\n        baseUrl: ${fake.baseUrl}\n        apiKeyEnv: COMIS_TEST_SEARCH_KEY\n`);
    const attack = (exitCode: number): string =>
      h.script(
        `key-${exitCode}.mjs`,
        `import { readdirSync, readFileSync } from 'node:fs';
import { comis_tools } from './comis_tools.js';
const out = { env: JSON.stringify(process.env) };
out.procs = readdirSync('/proc').filter((n) => /^\\d+$/.test(n)).map((p) => { try { return readFileSync('/proc/' + p + '/environ', 'latin1'); } catch (e) { return e.code; } }).join('|');
console.log('REACHED environment');
out.echo = await comis_tools.web_search({ query: 'echo', count: 5 });
console.log('REACHED echo');
try { await comis_tools.web_search({ query: 'fail' }); } catch (e) { out.fail = e.code + ' ' + e.message; }
console.log('REACHED fail');
console.log(JSON.stringify(out));
console.error('stderr ' + JSON.stringify(out));
process.exit(${exitCode});
`,
      );
    const env = { COMIS_TEST_SEARCH_KEY: KEY };
    const ok = await runComisAsync(['orchestrate', attack(0), '--json', '--session', 'key-session'], { home: h.home, env });
    const okBody = parseJson(ok.stdout);
    expect(okBody.status, ok.stdout + ok.stderr).toBe('ok');
    const failed = await runComisAsync(['orchestrate', attack(3), '--session', 'key-session'], { home: h.home, env });
    expect(failed.status).toBe(1);
    const human = await runComisAsync(['orchestrate', attack(0)], { home: h.home, env });
    expect(human.status).toBe(0);

    // Controls: the provider got the key on every search; the script reached every line; the echo came back redacted.
    expect(fake.requests.length).toBe(6);
    expect(fake.requests.every((r) => r.headers['x-subscription-token'] === KEY)).toBe(true);
    const stdout: string = okBody.result.stdout;
    expect(stdout).toContain('REACHED environment\nREACHED echo\nREACHED fail\n');
    const out = JSON.parse(stdout.trim().split('\n').at(-1)!);
    expect(out.echo).toEqual([{ title: 'title with [REDACTED]', url: 'https://example.org/echo', snippet: 'the key is [REDACTED].' }]);
    expect(out.fail).toMatch(/^search_failed web_search: brave at http:\/\/127\.0\.0\.1:\d+ answered HTTP 401 /);
    expect(failed.stderr).toContain('stderr {');

    const explain = await runComisAsync(['explain', 'key-session', '--json'], { home: h.home });
    const explainHuman = await runComisAsync(['explain', '--last'], { home: h.home });
    const fleet = await runComisAsync(['fleet', '--json'], { home: h.home });
    expect(explain.status).toBe(0);
    expect(parseJson(explain.stdout).result.orchestrate.length).toBe(2);
    const surfaces = [ok.stdout, ok.stderr, failed.stdout, failed.stderr, human.stdout, human.stderr, explain.stdout, explain.stderr, explainHuman.stdout, fleet.stdout, fleet.stderr];
    for (const text of surfaces) expect(text).not.toContain(KEY);
    const files = filesUnder(h.home);
    expect(files.some((f) => f.endsWith('comis.db'))).toBe(true);
    for (const file of files) expect(readFileSync(file).toString('latin1'), file).not.toContain(KEY);
  });
});
