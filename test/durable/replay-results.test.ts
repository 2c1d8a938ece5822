/**
 * A durable run's MCP calls and ResultRef files in its replay: each MCP call
 * (comis_tools.mcp.<server>.<tool>(), the real edge fixture server over stdio)
 * is recorded like a table tool's call, and the replay answers it from the
 * recording without starting any server (the fixture logs every start); a
 * call with other arguments is a replay_divergence naming its index. A
 * ResultRef the run sliced in the jail is kept in the durable area and
 * restored into the replay's results area, so .read/.grep/.jq give the same
 * bytes even once the workspace file is changed or gone. Run `npm run build` first.
 */
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { parseJson } from '../helpers/cli.js';
import { mcpConfigYaml } from '../helpers/mcp.js';
import { makeHome } from '../helpers/orchestrate.js';
import { tempDir } from '../helpers/temp.js';
import { DURABLE_CONFIG } from './helpers.js';

const DURABLE = '    autonomy:\n      durability:\n        enabled: true\n        orchestrateResume: true\n';

function mcpDurableHome(): { h: ReturnType<typeof makeHome>; startLog: string } {
  const startLog = join(tempDir('comis-edge-log-'), 'starts');
  const yaml = mcpConfigYaml({ default: ['edge'] }, { edgeEnv: { EDGE_START_LOG: startLog } }).replace('    autonomy:\n', DURABLE);
  return { h: makeHome(yaml), startLog };
}

const starts = (log: string): number => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean).length : 0);

const MCP_SCRIPT = `import { comis_tools } from './comis_tools.js';
const listed = comis_tools.describe().filter((d) => d.server === 'edge').map((d) => d.tool).sort();
console.log('listed ' + listed.length + ' ' + listed.includes('echo'));
const e = await comis_tools.mcp.edge.echo({ message: 'hello from the jail' });
console.log(e.type + ' ' + e.text.includes('hello from the jail'));
const big = await comis_tools.mcp.edge.large({ n: 20000 });
console.log(big.type + ' ' + big.kind + ' ' + big.bytes);
console.log(await big.jq('.text | length'));
console.log(JSON.stringify((await big.grep('line 0000000000007')).map((m) => m.line)));
try { await comis_tools.mcp.edge.no_such_tool({}); } catch (err) { console.log('refused ' + err.code); }
`;

describe('replay of MCP calls', { timeout: 180_000 }, () => {
  it('records each MCP call and tool list, and the replay answers them from the recording without starting a server', () => {
    const { h, startLog } = mcpDurableHome();
    const orig = h.run(['orchestrate', h.script('mcp.mjs', MCP_SCRIPT), '--json']);
    expect(orig.status, orig.stderr).toBe(0);
    const { runId, stdout } = parseJson(orig.stdout).result;
    expect(stdout).toMatch(/^listed \d+ true\nMcpResult true\nResultRef json \d+\n\d+\n\[\d+\]\nrefused unknown_tool\n$/);
    // Positive control: the original run started the real server (once: describe's digest and the calls share it).
    expect(starts(startLog)).toBe(1);
    const area = join(h.home, 'durable', runId);
    const recorded = readFileSync(join(area, 'calls.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    expect(recorded.map((c) => `${c.i}:${c.tool}`)).toEqual(['0:mcp:edge.echo', '1:mcp:edge.large']);
    expect(recorded[0].args).toEqual({ message: 'hello from the jail' });
    expect(statSync(join(area, 'calls.jsonl')).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(join(area, 'mcp-tools.json'), 'utf8')).edge.tools.map((t: { name: string }) => t.name)).toContain('echo');
    // The MCP ResultRef's file is kept with the run.
    expect(readdirSync(join(area, 'results')).filter((n) => n.startsWith('ref-'))).toHaveLength(1);
    // The content stays out of the store.
    const db = readFileSync(join(h.home, 'comis.db'));
    expect(db.includes('hello from the jail')).toBe(false);

    const rep = h.run(['replay', runId, '--json']);
    expect(rep.status, rep.stderr).toBe(0);
    const report = parseJson(rep.stdout).result;
    expect(report).toMatchObject({ verdict: 'identical', recordedCalls: 2, stdoutMatches: true, stdout });
    expect(report.calls).toEqual([
      { index: 0, tool: 'mcp:edge.echo', recordedTool: 'mcp:edge.echo', match: true },
      { index: 1, tool: 'mcp:edge.large', recordedTool: 'mcp:edge.large', match: true },
    ]);
    // No server process was started by the replay (nor by the human-readable one).
    expect(starts(startLog)).toBe(1);
    const human = h.run(['orchestrate', 'replay', runId]);
    expect(human.status, human.stderr).toBe(0);
    expect(human.stdout).toBe(stdout);
    expect(starts(startLog)).toBe(1);
  });

  it('an MCP call with other arguments than recorded is a replay_divergence naming its index, and starts no server', () => {
    const { h, startLog } = mcpDurableHome();
    writeFileSync(join(h.workspace(), 'notes.md'), 'hello\n');
    const script = h.script(
      'clock.mjs',
      `import { comis_tools } from './comis_tools.js';
await comis_tools.read({ path: 'notes.md' });
try { await comis_tools.mcp.edge.echo({ message: 'at ' + Date.now() }); console.log('echoed'); } catch (e) { console.log('threw ' + e.code); }
console.log('end');`,
    );
    const orig = h.run(['orchestrate', script, '--json']);
    expect(orig.status, orig.stderr).toBe(0);
    expect(parseJson(orig.stdout).result.stdout).toBe('echoed\nend\n');
    expect(starts(startLog)).toBe(1);
    const { runId } = parseJson(orig.stdout).result;
    const rep = h.run(['replay', runId, '--json']);
    expect(rep.status).toBe(1);
    const report = parseJson(rep.stdout).result;
    expect(report).toMatchObject({ verdict: 'replay_divergence', divergence: { index: 1, tool: 'mcp:edge.echo', recordedTool: 'mcp:edge.echo', why: 'params' } });
    expect(report.stdout).toBe('threw replay_divergence\nend\n');
    expect(h.run(['replay', runId]).stderr).toContain('comis: replay_divergence at call 1: mcp:edge.echo with other params than recorded');
    expect(starts(startLog)).toBe(1);
  });
});

describe('replay of ResultRef files', { timeout: 180_000 }, () => {
  const SLICES = `import { comis_tools } from './comis_tools.js';
const r = await comis_tools.read({ path: 'data.json' });
console.log(r.type + ' ' + r.kind + ' ' + r.bytes);
console.log(await r.read(0, 3));
console.log(JSON.stringify(await r.jq('[length, .[7].name]')));
console.log((await r.grep('item-0042')).length);
`;

  for (const change of ['changed', 'deleted'] as const) {
    it(`a run that sliced a ResultRef replays identically once the workspace file is ${change}`, () => {
      const h = makeHome(DURABLE_CONFIG);
      const items = Array.from({ length: 600 }, (_, i) => ({ id: i, name: `item-${String(i).padStart(4, '0')}`, note: 'x'.repeat(20) }));
      const file = join(h.workspace(), 'data.json');
      writeFileSync(file, JSON.stringify(items, null, 1));
      expect(statSync(file).size).toBeGreaterThan(15_000);
      const orig = h.run(['orchestrate', h.script('slices.mjs', SLICES), '--json']);
      expect(orig.status, orig.stderr).toBe(0);
      const { runId, stdout } = parseJson(orig.stdout).result;
      expect(stdout).toMatch(/^ResultRef json \d+\n\[\n \{\n {2}"id": 0,\n\[600,"item-0007"\]\n1\n$/);
      if (change === 'changed') writeFileSync(file, JSON.stringify([{ id: 1, name: 'other' }]));
      else rmSync(file);

      const rep = h.run(['replay', runId, '--json']);
      expect(rep.status, rep.stderr).toBe(0);
      expect(parseJson(rep.stdout).result).toMatchObject({ verdict: 'identical', stdoutMatches: true, stdout });
    });
  }

  it('without the kept file the replay cannot slice it (the restore is what makes it work)', () => {
    const h = makeHome(DURABLE_CONFIG);
    writeFileSync(join(h.workspace(), 'data.json'), JSON.stringify(Array.from({ length: 600 }, (_, i) => ({ id: i, name: `item-${i}`, note: 'x'.repeat(20) }))));
    const orig = h.run(['orchestrate', h.script('slices.mjs', SLICES), '--json']);
    expect(orig.status, orig.stderr).toBe(0);
    const { runId } = parseJson(orig.stdout).result;
    rmSync(join(h.home, 'durable', runId, 'results'), { recursive: true });
    const rep = h.run(['replay', runId, '--json']);
    expect(parseJson(rep.stdout).result.verdict).not.toBe('identical');
  });

  it('a call to a server the original run never reached is a replay_divergence at its index, not a server start', { timeout: 240_000 }, () => {
    const startLog = join(tempDir('comis-edge-log-'), 'starts');
    const yaml = mcpConfigYaml({ default: ['edge', 'everything'] }, { edgeEnv: { EDGE_START_LOG: startLog } }).replace('    autonomy:\n', DURABLE);
    const h = makeHome(yaml);
    writeFileSync(join(h.workspace(), 'which.txt'), 'edge\n');
    // The script reads its branch from the workspace itself (not through a tool), so the replay can take the other one.
    const script = h.script(
      'branch.mjs',
      `import { readFileSync } from 'node:fs';
import { comis_tools } from './comis_tools.js';
const which = readFileSync('which.txt', 'utf8').trim();
try {
  const r = which === 'edge' ? await comis_tools.mcp.edge.echo({ message: 'x' }) : await comis_tools.mcp.everything.echo({ message: 'x' });
  console.log('echoed ' + r.type);
} catch (e) { console.log('threw ' + e.code); }`,
    );
    const orig = h.run(['orchestrate', script, '--json']);
    expect(orig.status, orig.stderr).toBe(0);
    const { runId, stdout } = parseJson(orig.stdout).result;
    expect(stdout).toBe('echoed McpResult\n');
    expect(starts(startLog)).toBe(1);
    // Control: with the branch unchanged the replay is identical.
    expect(parseJson(h.run(['replay', runId, '--json']).stdout).result.verdict).toBe('identical');

    writeFileSync(join(h.workspace(), 'which.txt'), 'everything\n');
    const rep = h.run(['replay', runId, '--json']);
    expect(rep.status).toBe(1);
    const report = parseJson(rep.stdout).result;
    expect(report).toMatchObject({ verdict: 'replay_divergence', divergence: { index: 0, tool: 'mcp:everything', recordedTool: 'mcp:edge.echo', why: 'tool' } });
    expect(report.stdout).toBe('threw replay_divergence\n');
    expect(starts(startLog)).toBe(1);
  });
});
