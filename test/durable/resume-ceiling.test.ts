/**
 * A resumed run's lease and surface are attenuated exactly like the first
 * run's, and never past it: the resume runs under today's config narrowed to
 * what the original run held (pinned with its bytes). A config narrowed
 * between the timeout and `--resume` applies to the resumed run; a config
 * widened in between does not. The script reaches its tools through computed
 * names, so pre-flight lets it run and the socket's gate is what answers.
 * Run `npm run build` first.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { parseJson } from '../helpers/cli.js';
import { mcpConfigYaml } from '../helpers/mcp.js';
import { makeHome } from '../helpers/orchestrate.js';

function config(o: { wide: boolean }): string {
  const yaml = mcpConfigYaml({ default: o.wide ? ['edge'] : [] }).replace('    autonomy:\n', `    autonomy:\n      write: ${o.wide}\n      durability:\n        enabled: true\n        orchestrateResume: true\n`);
  return o.wide ? yaml : `${yaml}    skills:\n      toolPolicy:\n        deny: ["grep"]\n`;
}

const PROBE = `import { comis_tools } from './comis_tools.js';
const last = await comis_tools.resume();
const name = (s) => s.split('').reverse().join('');
const attempt = async (label, f) => { try { await f(); return label + ':ok'; } catch (e) { return label + ':' + (e.code ?? e.name); } };
const out = [
  await attempt('write', () => comis_tools[name('etirw')]({ path: 'w' + Date.now() + '.txt', content: 'x' })),
  await attempt('grep', () => comis_tools[name('perg')]({ pattern: 'x' })),
  await attempt('mcp', () => comis_tools.mcp[name('egde')].ping({})),
];
console.log((last ? 'resumed ' : 'first ') + out.join(' '));
if (!last) { await comis_tools.checkpoint({ s: 1 }); await new Promise((r) => setTimeout(r, 120000)); }
`;

const WIDE = 'write:ok grep:ok mcp:ok';
// A tool the policy drops is not even in the run's SDK (a TypeError), and the gate would refuse it.
const NARROW = 'write:surface_disabled grep:TypeError mcp:mcp_not_allowed';

function timeOut(h: ReturnType<typeof makeHome>, script: string): { runId: string; stdout: string } {
  const first = h.run(['orchestrate', script, '--timeout-ms', '12000', '--json']);
  expect(first.status, first.stderr).toBe(1);
  const r = parseJson(first.stdout).result;
  expect(r.failureClass).toBe('timeout');
  expect(r.resumable).toMatchObject({ checkpoint: true });
  return r;
}

describe('a resumed run is attenuated like the first, never past it', () => {
  it('caps narrowed in config between the timeout and --resume: the resumed run has the narrower ones', () => {
    const h = makeHome(config({ wide: true }));
    const script = h.script('probe.mjs', PROBE);
    const first = timeOut(h, script);
    expect(first.stdout).toBe(`first ${WIDE}\n`);
    writeFileSync(join(h.home, 'config.yaml'), config({ wide: false }));
    const resumed = h.run(['orchestrate', '--resume', first.runId, '--json']);
    expect(resumed.status, resumed.stderr).toBe(0);
    const r = parseJson(resumed.stdout).result;
    expect(r.stdout).toBe(`resumed ${NARROW}\n`);
    expect(r.leaseId).not.toBe((first as { leaseId?: string }).leaseId);
  });

  it('caps widened in config between the timeout and --resume: the resumed run still has only the original ones', () => {
    const h = makeHome(config({ wide: false }));
    const script = h.script('probe.mjs', PROBE);
    const first = timeOut(h, script);
    expect(first.stdout).toBe(`first ${NARROW}\n`);
    writeFileSync(join(h.home, 'config.yaml'), config({ wide: true }));
    // Positive control: a new run under the widened config does get the wider surface.
    const fresh = h.run(['orchestrate', h.script('fresh.mjs', PROBE.replace('await comis_tools.resume()', '({ state: 0 })')), '--json']);
    expect(parseJson(fresh.stdout).result.stdout).toBe(`resumed ${WIDE}\n`);
    const resumed = h.run(['orchestrate', '--resume', first.runId, '--json']);
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(parseJson(resumed.stdout).result.stdout).toBe(`resumed ${NARROW}\n`);
  });
});
