/**
 * Pre-flight names orch:web when a script calls web_fetch and the run does not
 * hold it, before any jail is built (the socket still denies a dynamic call).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { loadConfig, resolveAgent } from '../../src/lib/config/load.js';
import { footprintOf, scanJavaScript, scanPython } from '../../src/lib/orchestrate/preflight.js';
import { RunRefusedError, runOrchestrate } from '../../src/lib/orchestrate/runner.js';
import { tempDir } from '../helpers/temp.js';

const JS = `import { comis_tools } from './comis_tools.js';\nconst p = await comis_tools.web_fetch({ url: 'https://example.com/' });\nconsole.log(p.status);`;

describe('pre-flight and web_fetch', () => {
  it('the footprint of a web_fetch call is orch:web, in JS and Python', async () => {
    expect(footprintOf(await scanJavaScript(JS))).toEqual({ tools: ['web_fetch'], capabilities: ['orch:web'], parsed: true });
    expect(footprintOf(scanPython('import comis_tools\ncomis_tools.web_fetch({"url": "https://example.com/"})\n', 'python3'))).toEqual({ tools: ['web_fetch'], capabilities: ['orch:web'], parsed: true });
  });

  it('a run without orch:web is refused before the jail, naming orch:web and web_fetch (control: with it, the run starts)', async () => {
    const home = tempDir('comis-pre-');
    const agent = resolveAgent(await loadConfig({ home }));
    mkdirSync(agent.workspace, { recursive: true });
    let err: unknown;
    try {
      await runOrchestrate({ source: JS, displayName: 'w.mjs', language: 'js', agent, home, sessionKey: 's', requestedCaps: ['orch:read'] });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(RunRefusedError);
    const refused = err as RunRefusedError;
    expect(refused.code).toBe('CAPABILITY_DENIED');
    expect(refused.message).toContain('orch:web');
    expect(refused.details).toMatchObject({ missingCapabilities: ['orch:web'], tools: ['web_fetch'] });
    expect(refused.refusal).toMatchObject({ reason: 'capability_missing', capabilities: ['orch:web'], tools: ['web_fetch'] });
    // Control: holding orch:web, the same script runs (and its fetch is refused by the guard, not the pre-flight).
    const ok = await runOrchestrate({
      source: JS.replace('console.log(p.status);', '').replace('const p = await', 'try { await').replace('});\n', '}); } catch (e) { console.log(e.code); }\n'),
      displayName: 'w.mjs',
      language: 'js',
      agent,
      home,
      sessionKey: 's',
      requestedCaps: ['orch:read', 'orch:web'],
      webFetchDeps: { resolve: async () => [{ address: '10.0.0.1', family: 4 }], dial: (_o, cb) => cb(new Error('never dialled'), null) },
    });
    expect(ok.public.stdout).toBe('ssrf_blocked\n');
  }, 60_000);

  it('a tool policy denying group:web names web_fetch and the config entry', async () => {
    const home = tempDir('comis-pre-');
    writeFileSync(join(home, 'config.yaml'), 'agents:\n  default:\n    skills:\n      toolPolicy:\n        deny: ["group:web"]\n');
    const agent = resolveAgent(await loadConfig({ home }));
    mkdirSync(agent.workspace, { recursive: true });
    await expect(runOrchestrate({ source: JS, displayName: 'w.mjs', language: 'js', agent, home, sessionKey: 's' })).rejects.toThrow(/comis_tools\.web_fetch, which the tool policy of agent "default" denies/);
  }, 60_000);
});
