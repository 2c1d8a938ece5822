import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import * as yaml from 'yaml';
import { describe, expect, it } from 'vitest';

import { LeaseRegistry } from '../../src/lib/capabilities/lease.js';
import { loadConfig, resolveAgent } from '../../src/lib/config/load.js';
import { runPlan } from '../../src/lib/coordinator/coordinator.js';
import type { CoordinatorEvent } from '../../src/lib/coordinator/events.js';
import { parsePlanText } from '../../src/lib/coordinator/plan.js';
import { mintRunLease, renewRunLease } from '../../src/lib/orchestrate/phases/lease.js';
import { runOrchestrate, SLOT_WAIT_RENEWS_LEASE_MS, type OrchestrateEvent } from '../../src/lib/orchestrate/runner.js';
import { tempDir } from '../helpers/temp.js';

async function setup() {
  const home = tempDir('comis-pipe-');
  return { home, lead: resolveAgent(await loadConfig({ home })) };
}

function plan(text: string) {
  return parsePlanText(text, join(tempDir(), 'plan.yaml'), yaml);
}

/** A child whose summary is its script's own start and end (ms since the epoch), `ms` apart. */
const timed = (id: string, ms: number) => `  - id: ${id}\n    language: js\n    inline: "const t0 = Date.now(); setTimeout(() => console.log('SUMMARY: ' + t0 + ' ' + Date.now()), ${ms})"\n`;

describe('runPlan pipelining', () => {
  it('prepares the next child while the jails run, and never runs more than `concurrency` scripts at once', async () => {
    const { home, lead } = await setup();
    const ids = ['a', 'b', 'c', 'd', 'e', 'f'];
    // Run dirs under $COMIS_HOME/runs, sampled while the plan runs: a prepared child has one before its spawn.
    const samples: { at: number; dirs: number }[] = [];
    const runs = join(home, 'runs');
    const sampler = setInterval(() => {
      let dirs = 0;
      try {
        dirs = readdirSync(runs).length;
      } catch {
        /* not yet created */
      }
      samples.push({ at: Date.now(), dirs });
    }, 5);
    const res = await runPlan({ plan: plan(`children:\n${ids.map((id) => timed(id, 400)).join('')}`), lead, home, sessionKey: 's-p', concurrency: 2 });
    clearInterval(sampler);
    expect(res.totals.done).toBe(ids.length);
    const spans = res.children.map((c) => c.summary.split(' ').map(Number) as [number, number]);
    // Every instant where a script starts: how many scripts run then (a script's own clock, inside its jail).
    const overlap = Math.max(...spans.map(([s]) => spans.filter(([s2, e2]) => s2 <= s && s < e2).length));
    expect(overlap).toBeGreaterThanOrEqual(2); // positive control: the two slots were used at once
    expect(overlap).toBeLessThanOrEqual(2);
    // While both slots were busy in the middle of the first two scripts, a third run dir existed: the next child was prepared.
    const [[sa, ea], [sb, eb]] = spans as [[number, number], [number, number]];
    const busy = samples.filter((x) => x.at > Math.max(sa, sb) + 100 && x.at < Math.min(ea, eb) - 100);
    expect(busy.length).toBeGreaterThan(0);
    expect(Math.max(...busy.map((x) => x.dirs))).toBe(3);
  }, 60_000);

  it('at concurrency 1 a summary child still starts only after the child before it finished', async () => {
    const { home, lead } = await setup();
    const events: CoordinatorEvent[] = [];
    const p = plan(`children:\n${timed('a', 200)}  - id: b\n    language: js\n    include_parent_history: summary\n    inline: "console.log('SUMMARY: ' + require('fs').readFileSync('parent_summary.md', 'utf8').includes('[a] done'))"\n`);
    const res = await runPlan({ plan: p, lead, home, sessionKey: 's-s', concurrency: 1, onEvent: (e) => events.push(e) });
    expect(res.children.find((c) => c.childId === 'b')!.summary).toBe('true');
    const idx = (pred: (e: CoordinatorEvent) => boolean) => events.findIndex(pred);
    expect(idx((e) => e.type === 'child:finished' && e.childId === 'a')).toBeLessThan(idx((e) => e.type === 'child:started' && e.childId === 'b'));
  }, 60_000);

  it("a prepared child's progress counts from its spawn, not from its wait for the slot", async () => {
    const { home, lead } = await setup();
    const progress: { runId: string; elapsedMs: number }[] = [];
    const started = new Map<string, string>();
    const p = plan(`children:\n${timed('first', 1500)}${timed('second', 400)}`);
    await runPlan({
      plan: p,
      lead,
      home,
      sessionKey: 's-g',
      concurrency: 1,
      progressIntervalMs: 100,
      onEvent: (e) => {
        if (e.type === 'child:started') started.set(e.runId, e.childId);
        if (e.type === 'session:sub_agent_progress') progress.push({ runId: e.runId, elapsedMs: e.elapsedMs });
      },
    });
    const second = progress.filter((x) => started.get(x.runId) === 'second');
    expect(second.length).toBeGreaterThan(0); // positive control: it did report
    // It waited ~1.5 s for the slot; its first report comes ~100 ms after its spawn.
    expect(second[0]!.elapsedMs).toBeLessThan(1000);
  }, 60_000);

  it("a child's bookkeeping that throws fails the plan, as before (not an unhandled rejection)", async () => {
    const { home, lead } = await setup();
    // `b` never ends by itself: it is prepared while `a` runs and takes the slot as `a` ends.
    const p = plan(`children:\n${timed('a', 10)}  - id: b\n    language: js\n    inline: "setInterval(() => {}, 1000)"\n`);
    const onEvent = (e: CoordinatorEvent): void => {
      if (e.type === 'child:finished' && e.childId === 'a') throw new Error('renderer broke');
    };
    await expect(runPlan({ plan: p, lead, home, sessionKey: 's-t', concurrency: 1, onEvent })).rejects.toThrow('renderer broke');
    // No child outlives the plan: `b` was stopped and its run ended (its run dir is gone) before runPlan returned.
    expect(readdirSync(join(home, 'runs'))).toEqual([]);
  }, 60_000);

  it('a child waiting for its slot when the plan is stopped is cancelled without ever being spawned', async () => {
    const { home, lead } = await setup();
    const events: CoordinatorEvent[] = [];
    const controller = new AbortController();
    const p = plan(`children:\n  - id: long\n    language: js\n    inline: "setInterval(() => {}, 1000)"\n${timed('next', 10)}${timed('last', 10)}`);
    const res = await runPlan({
      plan: p,
      lead,
      home,
      sessionKey: 's-a',
      concurrency: 1,
      signal: controller.signal,
      onEvent: (e) => {
        events.push(e);
        // By the time the first jail runs, `next` is prepared and waits for the slot.
        if (e.type === 'child:started' && e.childId === 'long') setTimeout(() => controller.abort(), 500);
      },
    });
    expect(res.outcome).toBe('interrupted');
    const by = Object.fromEntries(res.children.map((c) => [c.childId, c]));
    expect(by.long!.state).toBe('cancelled');
    expect(by.next!.state).toBe('cancelled');
    expect(by.last!.state).toBe('cancelled');
    expect(events.filter((e) => e.type === 'child:started').map((e) => (e as { childId: string }).childId)).toEqual(['long']);
    // `next` got as far as its run (a run id), which was then refused its jail.
    expect(by.next!.runId).toMatch(/^r-/);
  }, 60_000);
});

describe('jail slot leases', () => {
  it('renewRunLease replaces both bearers for the same run and socket; the old one no longer authenticates', () => {
    let now = 1_000_000;
    const registry = new LeaseRegistry(() => now);
    const lease = mintRunLease('agent', ['orch:read'], 5_000, registry);
    const { runId } = lease;
    const old = lease.bearer;
    const oldId = lease.lease.leaseId;
    now += 5_000 + 30_000; // the first lease's last instant has passed
    expect(registry.authenticate(old, runId)).toBeUndefined();
    renewRunLease(lease, 'agent', ['orch:read'], 5_000);
    expect(lease.runId).toBe(runId);
    expect(lease.bearer).not.toBe(old);
    expect(registry.authenticate(lease.bearer, runId)?.leaseId).toBe(lease.lease.leaseId);
    expect(registry.isRevoked(oldId)).toBe(true);
    now -= 35_000; // even while it would still be in date
    expect(registry.authenticate(old, runId)).toBeUndefined();
  });

  it('a run that waited for its slot longer than its lease would have lasted still calls its tools', async () => {
    const home = tempDir('comis-slot-');
    const agent = resolveAgent(await loadConfig({ home }));
    mkdirSync(agent.workspace, { recursive: true });
    writeFileSync(join(agent.workspace, 'x.txt'), 'data\n');
    // The registry's clock jumps 10 minutes while the run waits for its slot (longer than timeout + 30 s).
    let skew = 0;
    const registry = new LeaseRegistry(() => Date.now() + skew);
    let released = 0;
    const jailSlot = async (): Promise<() => void> => {
      await new Promise((r) => setTimeout(r, SLOT_WAIT_RENEWS_LEASE_MS + 100));
      skew += 600_000;
      return () => released++;
    };
    const source = "const { comis_tools } = require('./comis_tools.js'); comis_tools.read({ path: 'x.txt' }).then((r) => console.log('read ok', JSON.stringify(r).includes('data')), (e) => console.log('read failed', e.code || e.message))";
    const started: string[] = [];
    const res = await runOrchestrate({
      source,
      displayName: 'w.js',
      language: 'js',
      agent,
      home,
      sessionKey: 's',
      timeoutMs: 20_000,
      leaseRegistry: registry,
      jailSlot,
      onEvent: (e: OrchestrateEvent) => e.type === 'run:started' && started.push(e.leaseId),
    });
    expect(res.public.stdout).toBe('read ok true\n');
    expect(started).toEqual([res.public.leaseId]);
    expect(registry.isRevoked(res.public.leaseId)).toBe(true);
    expect(released).toBe(1); // once, though the cleanup path frees it too
  }, 60_000);
});
