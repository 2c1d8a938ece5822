/**
 * `comis replay` / `comis orchestrate replay`: a durable run's pinned bytes
 * against its recording. Identical for a deterministic script (even when the
 * workspace changed since: the calls are answered from the recording), a
 * replay_divergence naming the call index for a script whose calls depend on
 * the time, and nothing acted on: no checkpoint rewritten, no durable row or
 * area added, the workspace read-only. Run `npm run build` first.
 */
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { parseJson } from '../helpers/cli.js';
import { makeHome } from '../helpers/orchestrate.js';
import { DURABLE_CONFIG } from './helpers.js';

const DETERMINISTIC = `import { comis_tools } from './comis_tools.js';
const r = await comis_tools.read({ path: 'notes.md' });
const g = await comis_tools.grep({ pattern: 'hello' });
await comis_tools.checkpoint({ lines: r.lines, hits: g.matches.length });
console.log('read ' + r.content.trim() + ' / ' + g.matches.length + ' hit');
`;

describe('comis replay', () => {
  it('a deterministic durable run replays identically, answered from the recording, in both spellings', () => {
    const h = makeHome(DURABLE_CONFIG);
    writeFileSync(join(h.workspace(), 'notes.md'), 'hello notes\n');
    const orig = h.run(['orchestrate', h.script('det.mjs', DETERMINISTIC), '--json']);
    expect(orig.status, orig.stderr).toBe(0);
    const { runId, stdout } = parseJson(orig.stdout).result;
    expect(stdout).toBe('read hello notes / 1 hit\n');
    // The workspace changes after the run: a replay still sees what the run saw.
    writeFileSync(join(h.workspace(), 'notes.md'), 'goodbye\n');
    const rep = h.run(['replay', runId]);
    expect(rep.status, rep.stderr).toBe(0);
    expect(rep.stdout).toBe(stdout);
    expect(rep.stderr).toMatch(new RegExp(`comis: replay of ${runId} identical: 3 calls answered from the recording, same output`));
    const json = h.run(['orchestrate', 'replay', runId, '--json']);
    expect(json.status, json.stderr).toBe(0);
    const report = parseJson(json.stdout).result;
    expect(report).toMatchObject({ runId, verdict: 'identical', recordedCalls: 3, stdoutMatches: true });
    expect(report.calls.map((c: { tool: string; match: boolean }) => `${c.tool}:${c.match}`)).toEqual(['read:true', 'grep:true', 'checkpoint:true']);
  });

  it('a script whose calls depend on the time diverges, and the replay names the call index', () => {
    const h = makeHome(DURABLE_CONFIG);
    writeFileSync(join(h.workspace(), 'notes.md'), 'hello\n');
    const script = h.script(
      'clock.mjs',
      `import { comis_tools } from './comis_tools.js';
await comis_tools.read({ path: 'notes.md' });
try { await comis_tools.checkpoint({ at: Date.now() }); } catch (e) { console.log('threw ' + e.code); }
console.log('end');`,
    );
    const orig = h.run(['orchestrate', script, '--json']);
    const { runId } = parseJson(orig.stdout).result;
    const rep = h.run(['replay', runId, '--json']);
    expect(rep.status).toBe(1);
    const report = parseJson(rep.stdout).result;
    expect(report).toMatchObject({ verdict: 'replay_divergence', divergence: { index: 1, tool: 'checkpoint', recordedTool: 'checkpoint', why: 'params' } });
    expect(report.calls.map((c: { match: boolean }) => c.match)).toEqual([true, false]);
    // The script saw the divergence as a tool error.
    expect(report.stdout).toBe('threw replay_divergence\nend\n');
    const human = h.run(['replay', runId]);
    expect(human.stderr).toContain('comis: replay_divergence at call 1: checkpoint with other params than recorded');
  });

  it('a replay acts on nothing: no checkpoint rewritten, no durable row or area added, and the workspace is read-only', () => {
    const h = makeHome(DURABLE_CONFIG);
    const ws = h.workspace();
    const script = h.script(
      'effects.mjs',
      `import { comis_tools } from './comis_tools.js';
import { writeFileSync } from 'node:fs';
await comis_tools.checkpoint({ step: 'sent' });
let wrote = 'wrote';
try { writeFileSync('/workspace/effect.txt', 'x'); } catch (e) { wrote = e.code; }
console.log(wrote);`,
    );
    const orig = h.run(['orchestrate', script, '--json']);
    expect(orig.status, orig.stderr).toBe(0);
    const { runId, stdout } = parseJson(orig.stdout).result;
    expect(stdout).toBe('wrote\n');
    const checkpoint = join(h.home, 'durable', runId, 'checkpoint.json');
    const before = { text: readFileSync(checkpoint, 'utf8'), mtime: statSync(checkpoint).mtimeMs, areas: readdirSync(join(h.home, 'durable')).sort() };
    writeFileSync(join(ws, 'effect.txt'), 'original');
    const rep = h.run(['replay', runId, '--json']);
    const report = parseJson(rep.stdout).result;
    // The checkpoint call was answered from the recording; the direct write hit a read-only workspace.
    expect(report.calls).toEqual([{ index: 0, tool: 'checkpoint', recordedTool: 'checkpoint', match: true }]);
    expect(report.stdout).toBe('EROFS\n');
    expect(report.verdict).toBe('output_differs');
    expect(readFileSync(join(ws, 'effect.txt'), 'utf8')).toBe('original');
    expect(readFileSync(checkpoint, 'utf8')).toBe(before.text);
    expect(statSync(checkpoint).mtimeMs).toBe(before.mtime);
    expect(readdirSync(join(h.home, 'durable')).sort()).toEqual(before.areas);
  });

  it('a run that is not durable cannot be replayed, with a clear error', () => {
    const h = makeHome();
    const res = h.run(['replay', 'r-0123456789ab']);
    expect(res.status).toBe(2);
    expect(res.stderr).toContain('No durable orchestrate run r-0123456789ab to replay');
  });
});
