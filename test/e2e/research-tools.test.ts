/**
 * The research tools through the whole surface: memory_search / memory_get
 * from TS and Python in a real `comis orchestrate`, `explain` tallying the
 * new tools like any tool, and pre-flight naming orch:web when a run's lease
 * would not hold it (a coordinator child that did not ask for it).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { loadConfig, resolveAgent } from '../../src/lib/config/load.js';
import { runOrchestrate } from '../../src/lib/orchestrate/runner.js';
import { parseJson } from '../helpers/cli.js';
import { runComisAsync, startFakeSearch } from '../helpers/fake-search.js';
import { makeHome } from '../helpers/orchestrate.js';

describe('memory tools end to end', () => {
  it('TS and Python: memory_search ranks the notes under memory/, memory_get reads one; explain tallies memory_search, memory_get and web_search', async () => {
    const fake = await startFakeSearch('searxng', [{ title: 'Runbook', url: 'https://example.org/runbook', snippet: 'x' }]);
    const h = makeHome(`agents:\n  default:\n    web:\n      search:\n        provider: searxng\n        baseUrl: ${fake.baseUrl}\n`);
    const mem = join(h.workspace(), 'memory');
    mkdirSync(join(mem, 'ops'), { recursive: true });
    writeFileSync(join(mem, 'ops', 'deploy.md'), '# Deploy\n\nThe deployment runbook: drain, ship, verify.\n');
    writeFileSync(join(mem, 'misc.md'), '# Misc\n\nNothing about that.\n');
    const ts = h.script(
      'mem.ts',
      `import { comis_tools } from './comis_tools.js';
const found = await comis_tools.memory_search({ query: 'deployment runbook' });
if ('type' in found) throw new Error('unexpected ResultRef');
const top = found.matches[0]!;
const page = await comis_tools.memory_get({ path: top.path });
const web = await comis_tools.web_search({ query: 'runbook' });
console.log(JSON.stringify({ top: [top.path, top.line, top.snippet], lines: 'totalLines' in page ? page.totalLines : null, web: Array.isArray(web) ? web.length : -1 }));
`,
    );
    const res = await runComisAsync(['orchestrate', ts, '--json'], { home: h.home });
    const body = parseJson(res.stdout);
    expect(body.status, res.stdout + res.stderr).toBe('ok');
    expect(JSON.parse(body.result.stdout)).toEqual({ top: ['memory/ops/deploy.md', 3, 'The deployment runbook: drain, ship, verify.'], lines: 3, web: 1 });
    const explained = parseJson((await runComisAsync(['explain', '--last', '--json'], { home: h.home })).stdout);
    const calls = explained.result.orchestrate[0].toolCalls.map((t: { tool: string; capability: string; decision: string; count: number }) => [t.tool, t.capability, t.decision, t.count]);
    expect(calls).toEqual([
      ['memory_get', 'orch:read', 'allow', 1],
      ['memory_search', 'orch:read', 'allow', 1],
      ['web_search', 'orch:web', 'allow', 1],
    ]);
    const py = h.script('mem.py', `import comis_tools\nr = comis_tools.memory_search({"query": "runbook"})\nprint(r["matches"][0]["path"], r["indexed"], r["pending"])\n`);
    const pyRes = await runComisAsync(['orchestrate', py, '--json'], { home: h.home });
    const pyBody = parseJson(pyRes.stdout);
    expect(pyBody.status, pyRes.stdout + pyRes.stderr).toBe('ok');
    // The second run finds the index current: nothing re-read.
    expect(pyBody.result.stdout).toBe('memory/ops/deploy.md 0 0\n');
  });

  it('pre-flight names orch:web when the run would not hold it (a child that asked only for orch:read)', async () => {
    const home = makeHome().home;
    const agent = resolveAgent(await loadConfig({ home }));
    const source = `import { comis_tools } from './comis_tools.js';\nawait comis_tools.web_search({ query: 'x' });\n`;
    const refused = runOrchestrate({ source, displayName: 'w.mjs', language: 'js', agent, home, sessionKey: 's', requestedCaps: ['orch:read'] });
    await expect(refused).rejects.toMatchObject({ code: 'CAPABILITY_DENIED', details: { missingCapabilities: ['orch:web'], tools: ['web_search'] } });
    await expect(refused).rejects.toThrow(/needs orch:web/);
  });
});
