import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import * as yaml from 'yaml';
import { describe, expect, it } from 'vitest';

import { loadConfig, resolveAgent } from '../../src/lib/config/load.js';
import { runPlan, type ChildDetail } from '../../src/lib/coordinator/coordinator.js';
import type { CoordinatorEvent } from '../../src/lib/coordinator/events.js';
import { parsePlanText } from '../../src/lib/coordinator/plan.js';
import { tempDir } from '../helpers/temp.js';

async function setup(config?: string) {
  const home = tempDir('comis-coord-');
  if (config) writeFileSync(join(home, 'config.yaml'), config);
  const loaded = await loadConfig({ home });
  return { home, lead: resolveAgent(loaded) };
}

function plan(text: string) {
  return parsePlanText(text, join(tempDir(), 'plan.yaml'), yaml);
}

describe('runPlan', () => {
  it("a child inherits the lead's read-only binds, screened against every agent's workspace", async () => {
    // Agent a's workspace is outside $COMIS_HOME; the lead binds a directory in it read-only.
    const wsA = join(tempDir('comis-ws-parent-'), 'wsA');
    mkdirSync(join(wsA, 'out'), { recursive: true });
    const bind = (path: string): string => `defaultAgent: lead\nagents:\n  a:\n    workspace: ${JSON.stringify(wsA)}\n  lead:\n    skills:\n      execSandbox:\n        readOnlyAllowPaths: [${JSON.stringify(path)}]\n`;
    const p = plan(`children:\n  - id: c\n    language: js\n    inline: "console.log('ran')"\n`);
    const refused = await setup(bind(join(wsA, 'out')));
    const res = await runPlan({ plan: p, lead: refused.lead, home: refused.home, sessionKey: 's-bind' });
    expect(res.children[0]).toMatchObject({ state: 'failed', errorCode: 'CONFIG_INVALID' });
    expect(res.children[0]!.summary).toMatch(/readOnlyAllowPaths\[0\].*inside an agent's workspace/);
    // Control: a directory of ours beside it is bound and the child runs.
    const ours = join(tempDir('comis-ours-'), 'data');
    mkdirSync(ours);
    const ok = await setup(bind(ours));
    const ran = await runPlan({ plan: p, lead: ok.lead, home: ok.home, sessionKey: 's-bind-ok' });
    expect(ran.children[0]).toMatchObject({ state: 'done', summary: 'ran' });
  });

  it('an assistant lead gets no orchestrate: the plan is refused before any child runs', async () => {
    const { home, lead } = await setup('agents:\n  lead:\n    autonomy:\n      profile: assistant\n');
    const events: CoordinatorEvent[] = [];
    const p = plan(`children:\n  - id: a\n    language: js\n    inline: "console.log('ran')"\n`);
    await expect(runPlan({ plan: p, lead, home, sessionKey: 's-a', onEvent: (e) => events.push(e) })).rejects.toMatchObject({ code: 'CAPABILITY_DENIED', details: { profile: 'assistant' } });
    expect(events).toEqual([]);
  });

  it('runs a DAG with a failing, a timing-out and a writing child (children of a coordinator lead are workers)', async () => {
    const { home, lead } = await setup('agents:\n  lead:\n    autonomy:\n      profile: standard\n      role: coordinator\n      write: true\n');
    const events: CoordinatorEvent[] = [];
    const p = plan(`
children:
  - id: first
    language: js
    inline: "console.log('first ran'); console.log('SUMMARY: first is fine')"
    capabilities: [orch:read]
  - id: second
    language: py
    inline: "print('second after first')"
    dependsOn: [first]
  - id: broken
    language: js
    inline: "console.log('about to fail'); process.exit(3)"
  - id: after-broken
    language: js
    inline: "console.log('never')"
    dependsOn: [broken]
  - id: slow
    language: js
    inline: "setTimeout(() => {}, 60000)"
    timeoutMs: 500
  - id: writer
    language: js
    inline: "require('./comis_tools.js').comis_tools.write({ path: 'w.txt', content: 'x' }).then((r) => console.log('SUMMARY: wrote ' + r.path))"
    capabilities: [orch:read, orch:write]
`);
    const res = await runPlan({ plan: p, lead, home, sessionKey: 's-test', concurrency: 2, onEvent: (e) => events.push(e) });
    const by = Object.fromEntries(res.children.map((c) => [c.childId, c]));
    expect(by.first!.state).toBe('done');
    expect(by.first!.summary).toBe('first is fine');
    expect(by.second!.state).toBe('done');
    expect(by.broken!.state).toBe('failed');
    expect(by.broken!.failureClass).toBe('nonzero_exit');
    expect(by['after-broken']!.state).toBe('skipped');
    expect(by.slow!.state).toBe('timed_out');
    expect(by.writer!.state).toBe('done');
    expect(by.writer!.summary).toBe('wrote results/writes/w.txt');
    expect(by.writer!.grantedCaps).toEqual(['orch:read', 'orch:write']);
    expect(by.writer!.deniedCaps).toEqual([]);
    expect(by.first!.agentId).toBe('lead--first');
    expect(res.outcome).toBe('failure');
    // DAG order: second starts only after first finished.
    const idx = (pred: (e: CoordinatorEvent) => boolean) => events.findIndex(pred);
    expect(idx((e) => e.type === 'child:finished' && e.childId === 'first')).toBeLessThan(idx((e) => e.type === 'child:started' && e.childId === 'second'));
    // The full output is in the child's own workspace; the lead's context has only announcements.
    const ref = by.first!.resultRef!;
    expect(ref.path).toBe(join(home, 'workspaces', 'lead--first', 'comis-results', `${by.first!.runId}.stdout`));
    expect(readFileSync(ref.path, 'utf8')).toBe('first ran\nSUMMARY: first is fine\n');
    const leadContext = readFileSync(res.leadContext.file, 'utf8');
    expect(leadContext).toContain(`Full result (drill in with read/grep/jq): ${ref.ref} (${ref.bytes}B, text)`);
    expect(leadContext).toContain('[writer] done');
    expect(res.leadContext.chars).toBe(leadContext.length);
    expect(res.leadContext).not.toHaveProperty('text');
    // Events are content-free: no stdout text anywhere in them.
    expect(JSON.stringify(events)).not.toContain('first ran');
    expect(JSON.stringify(events)).not.toContain('first is fine');
  });

  it("keeps a failed child's stderr tail with its result: redacted, bounded, control characters visible, never in an event", async () => {
    const { home, lead } = await setup();
    const events: (CoordinatorEvent | ChildDetail)[] = [];
    // 3,000 filler chars first, so the 2,000-char bound shows; then a terminal attack and the lease bearer.
    const p = plan(`
children:
  - id: noisy
    language: js
    inline: |
      process.stderr.write('filler '.repeat(430) + '\\n');
      process.stderr.write('title \\x1b]0;pwned\\x07 clear \\x1b[2J bell \\x07 cr \\r bidi \\u202e tab\\tend\\n');
      process.stderr.write('lease ' + process.env.COMIS_CAP_LEASE + '\\n');
      process.stderr.write('last line\\n');
      process.exit(4);
  - id: fine
    language: js
    inline: "console.error('stderr of a child that succeeds'); console.log('ok')"
`);
    const res = await runPlan({ plan: p, lead, home, sessionKey: 's-tail', onEvent: (e) => events.push(e), onChildDetail: (d) => events.push(d) });
    const by = Object.fromEntries(res.children.map((c) => [c.childId, c]));
    expect(by.noisy!.state).toBe('failed');
    const tail = by.noisy!.stderrTail!;
    // The script demonstrably reached every line (the last one is there), and the lease was in its env.
    expect(tail.endsWith('last line')).toBe(true);
    expect(tail).toContain('lease [REDACTED]');
    expect(tail).toMatch(/lease \[REDACTED\]\n/);
    expect(tail).toContain('title \\x1b]0;pwned\\x07 clear \\x1b[2J bell \\x07 cr \\r bidi \\u{202e} tab\tend');
    expect(tail).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202e]/);
    expect(tail.length).toBeLessThanOrEqual(2000);
    expect(tail.length).toBeGreaterThan(1_900); // the tail of 3,000+ chars, not all of it
    // A child that succeeded keeps no stderr.
    expect(by.fine!.state).toBe('done');
    expect(by.fine!.stderrTail).toBeUndefined();
    // The live detail arrives right after the child's own child:finished, and only for the failed child.
    const details = events.filter((e): e is ChildDetail => e.type === 'child:detail');
    expect(details).toEqual([{ type: 'child:detail', childId: 'noisy', runId: by.noisy!.runId, stderrTail: tail }]);
    const finishedAt = events.findIndex((e) => e.type === 'child:finished' && e.childId === 'noisy');
    expect(events[finishedAt + 1]).toBe(details[0]);
    // The stored/NDJSON event stream stays content-free.
    const stream = JSON.stringify(events.filter((e) => e.type !== 'child:detail'));
    expect(stream).not.toContain('filler');
    expect(stream).not.toContain('pwned');
  });

  it('emits progress at the configured interval and stops at the child end', async () => {
    const { home, lead } = await setup();
    const events: CoordinatorEvent[] = [];
    const p = plan(`
children:
  - id: ticker
    language: js
    inline: |
      import { comis_tools } from './comis_tools.js';
      for (let i = 0; i < 3; i++) { await comis_tools.grep({ pattern: 'x' }); await new Promise((r) => setTimeout(r, 300)); }
      console.log('done');
    capabilities: [orch:read]
`);
    const res = await runPlan({ plan: p, lead, home, sessionKey: 's-p', progressIntervalMs: 100, onEvent: (e) => events.push({ ...e }) });
    expect(res.children[0]!.state).toBe('done');
    expect(res.children[0]!.stepsExecuted).toBe(3);
    const progress = events.filter((e) => e.type === 'session:sub_agent_progress');
    expect(progress.length).toBeGreaterThanOrEqual(2);
    const last = progress.at(-1)!;
    expect(Object.keys(last).sort()).toEqual(['agentId', 'elapsedMs', 'progressLine', 'runId', 'stepsExecuted', 'timestamp', 'type']);
    expect(last.runId).toBe(res.children[0]!.runId);
    // Nothing after the child's end.
    const endIdx = events.findIndex((e) => e.type === 'child:finished');
    expect(events.slice(endIdx).some((e) => e.type === 'session:sub_agent_progress')).toBe(false);
    const before = events.length;
    await new Promise((r) => setTimeout(r, 350));
    expect(events.length).toBe(before);
  });

  it('main_context ≈ Σ(child summaries): a 50 MB child grows the lead like a 1 KB one', async () => {
    const { home, lead } = await setup('agents:\n  default:\n    autonomy:\n      limits:\n        stdoutCapBytes: 67108864\n');
    const make = (bytes: number) =>
      plan(`
children:
  - id: big
    language: js
    inline: |
      const line = 'x'.repeat(1023) + '\\n';
      const n = ${bytes} / 1024;
      let buf = '';
      for (let i = 0; i < n; i++) { buf += line; if (buf.length >= 1 << 20) { process.stdout.write(buf); buf = ''; } }
      process.stdout.write(buf);
`);
    const small = await runPlan({ plan: make(1024), lead, home, sessionKey: 's-1' });
    const large = await runPlan({ plan: make(50 * 1024 * 1024), lead, home, sessionKey: 's-2' });
    expect(small.children[0]!.state).toBe('done');
    expect(large.children[0]!.state).toBe('done');
    expect(large.children[0]!.resultRef!.bytes).toBe(50 * 1024 * 1024);
    expect(statSync(large.children[0]!.resultRef!.path).size).toBe(50 * 1024 * 1024);
    expect(large.children[0]!.summary.length).toBeLessThanOrEqual(2000);
    expect(Math.abs(large.leadContext.chars - small.leadContext.chars)).toBeLessThanOrEqual(2000 + 50);
  });

  it('a child can read neither the lead workspace nor a sibling workspace', async () => {
    const { home, lead } = await setup();
    const leadWs = join(home, 'workspaces', 'default');
    const { mkdirSync } = await import('node:fs');
    mkdirSync(leadWs, { recursive: true });
    writeFileSync(join(leadWs, 'lead-secret.txt'), 'LEAD-SECRET-91');
    const p = plan(`
children:
  - id: keeper
    language: js
    inline: "require('fs').writeFileSync('sib.txt', 'SIBLING-SECRET-42'); console.log('kept')"
  - id: snoop
    language: js
    dependsOn: [keeper]
    capabilities: [orch:read]
    inline: |
      import { comis_tools } from './comis_tools.js';
      import { readFileSync, readdirSync } from 'node:fs';
      const tries = ['../default/lead-secret.txt', '../default--keeper/sib.txt', '${leadWs}/lead-secret.txt', '${join(home, 'workspaces', 'default--keeper', 'sib.txt')}'];
      for (const t of tries) {
        try { console.log('fs', readFileSync(t, 'utf8')); } catch (e) { console.log('fs-denied', e.code); }
        try { const r = await comis_tools.read({ path: t }); console.log('tool', JSON.stringify(r)); } catch (e) { console.log('tool-denied'); }
      }
      try { console.log('ls', readdirSync('..').join(',')); } catch (e) { console.log('ls-denied'); }
      console.log('SUMMARY: snooped');
`);
    const res = await runPlan({ plan: p, lead, home, sessionKey: 's-iso' });
    const snoop = res.children.find((c) => c.childId === 'snoop')!;
    expect(snoop.state).toBe('done');
    const out = readFileSync(snoop.resultRef!.path, 'utf8');
    expect(out).toContain('fs-denied');
    expect(out).not.toContain('LEAD-SECRET-91');
    expect(out).not.toContain('SIBLING-SECRET-42');
    expect(existsSync(join(home, 'workspaces', 'default--keeper', 'sib.txt'))).toBe(true);
  });

  it('include_parent_history: none by default; summary hands over only the bounded lead context', async () => {
    const { home, lead } = await setup();
    const p = plan(`
children:
  - id: a
    language: js
    inline: "console.log('RAW-OUTPUT-a'); console.log('SUMMARY: a says hi')"
  - id: fresh
    language: js
    dependsOn: [a]
    inline: "console.log('SUMMARY: ' + require('fs').existsSync('parent_summary.md'))"
  - id: informed
    language: js
    dependsOn: [a]
    include_parent_history: summary
    summaryMaxChars: 300
    inline: "const t = require('fs').readFileSync('parent_summary.md', 'utf8'); console.log('SUMMARY: ' + JSON.stringify({ len: t.length, hi: t.includes('a says hi'), raw: t.includes('RAW-OUTPUT') }))"
`);
    const res = await runPlan({ plan: p, lead, home, sessionKey: 's-h', concurrency: 1 });
    const by = Object.fromEntries(res.children.map((c) => [c.childId, c]));
    expect(by.fresh!.summary).toBe('false');
    const seen = JSON.parse(by.informed!.summary) as { len: number; hi: boolean; raw: boolean };
    expect(seen.hi).toBe(true);
    expect(seen.raw).toBe(false);
    expect(seen.len).toBeLessThanOrEqual(300);
  });
});
