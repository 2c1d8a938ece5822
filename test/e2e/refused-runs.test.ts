/**
 * Runs refused before they start (comis exits 4) are recorded as `refused`,
 * through the built bin/comis.js in an isolated COMIS_HOME: the error output
 * is exactly what it was before the refusal was recorded, and `explain --last`
 * (text and --json, valid against the published schema) and `fleet` show the
 * refusal with its content-free reason. Run `npm run build:fast` first.
 */
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';

import { describe, expect, it } from 'vitest';

import { LeaseRegistry } from '../../src/lib/capabilities/lease.js';
import { loadConfig, resolveAgent } from '../../src/lib/config/load.js';
import { RunRefusedError, runOrchestrate } from '../../src/lib/orchestrate/runner.js';
import { parseJson } from '../helpers/cli.js';
import { makeHome } from '../helpers/orchestrate.js';
import { schemaValidator } from '../obs/schema.js';
import { tempDir } from '../helpers/temp.js';

const validateExplain = schemaValidator('explain');
const validateFleet = schemaValidator('fleet');

const WRITE = `import { comis_tools } from './comis_tools.js';\nawait comis_tools.write({ path: 'x.md', content: 'y' });\nconsole.log('ran');\n`;
const GREP = `import { comis_tools } from './comis_tools.js';\nconsole.log((await comis_tools.grep({ pattern: 'x' })).matches.length);\n`;

interface Case {
  name: string;
  config?: string;
  script: string;
  args?: string[];
  /** stderr, byte for byte, as comis printed it before refusals were recorded. */
  stderr: (home: string) => string;
  refusal: { code: string; reason: string; capabilities: string[]; tools: string[] };
  next: RegExp;
}

const CASES: Case[] = [
  {
    name: 'an assistant agent',
    config: 'agents:\n  helper:\n    autonomy:\n      profile: assistant\n',
    script: "console.log('ran');\n",
    args: ['--agent', 'helper'],
    stderr: (home) =>
      'Error [CAPABILITY_DENIED]: Agent "helper" has profile assistant, which holds no capabilities and does not get the orchestrate tool.\n' +
      `Hint: Nothing was run. Set agents.helper.autonomy.profile: standard (or unattended, max) in ${join(home, 'config.yaml')}, or use another agent.\n`,
    refusal: { code: 'CAPABILITY_DENIED', reason: 'profile_no_orchestrate', capabilities: [], tools: [] },
    next: /agents\.helper\.autonomy\.profile: standard/,
  },
  {
    name: 'the write surface off',
    script: WRITE,
    stderr: () => 'Error [CAPABILITY_DENIED]: The script calls comis_tools.write, but the write surface of agent "default" is off.\n' + 'Hint: Nothing was run. Set agents.default.autonomy.write: true in config.yaml to turn it on.\n',
    refusal: { code: 'CAPABILITY_DENIED', reason: 'surface_disabled', capabilities: ['orch:write'], tools: ['write'] },
    next: /agents\.default\.autonomy\.write: true/,
  },
  {
    name: 'a tool-policy deny',
    config: 'agents:\n  default:\n    skills:\n      toolPolicy:\n        deny: [grep]\n',
    script: GREP,
    stderr: (home) =>
      'Error [CAPABILITY_DENIED]: The script calls comis_tools.grep, which the tool policy of agent "default" denies (explicit_deny: "grep" in agents.default.skills.toolPolicy.deny).\n' +
      `Hint: Nothing was run. Change agents.default.skills.toolPolicy (or autonomy.role) in ${join(home, 'config.yaml')}, or remove the call.\n`,
    refusal: { code: 'CAPABILITY_DENIED', reason: 'explicit_deny', capabilities: [], tools: ['grep'] },
    next: /skills\.toolPolicy\.deny/,
  },
  {
    name: 'a coordinator calling write',
    config: 'agents:\n  lead:\n    autonomy:\n      role: coordinator\n      write: true\n',
    script: WRITE,
    args: ['--agent', 'lead'],
    stderr: (home) =>
      'Error [CAPABILITY_DENIED]: The script calls comis_tools.write, which the tool policy of agent "lead" denies (role_coordinator: agents.lead.autonomy.role is coordinator, which has no write, message or other mutating tool).\n' +
      `Hint: Nothing was run. Change agents.lead.skills.toolPolicy (or autonomy.role) in ${join(home, 'config.yaml')}, or remove the call.\n`,
    refusal: { code: 'CAPABILITY_DENIED', reason: 'role_coordinator', capabilities: [], tools: ['write'] },
    next: /coordinator/,
  },
  {
    name: 'an approval with no terminal',
    config: 'agents:\n  default:\n    autonomy:\n      approvals: true\n',
    script: GREP,
    stderr: () => 'Error [APPROVAL_REQUIRED]: Agent "default" requires approval for each run, and there is no terminal to ask on.\nHint: Pass --yes to approve the run non-interactively.\n',
    refusal: { code: 'APPROVAL_REQUIRED', reason: 'approval_required', capabilities: ['orch:read'], tools: ['grep'] },
    next: /--yes/,
  },
];

describe('runs refused before they start', () => {
  for (const c of CASES) {
    it(`${c.name}: exit 4 with the same error output, recorded as refused; explain --last shows it`, () => {
      const h = makeHome(c.config);
      const script = h.script('s.mjs', c.script);
      const res = h.run(['orchestrate', script, ...(c.args ?? [])]);
      expect(res.status).toBe(4);
      expect(res.stdout).toBe('');
      expect(res.stderr).toBe(c.stderr(h.home));

      const body = parseJson(h.run(['explain', '--last', '--json']).stdout);
      validateExplain(body);
      const report = body.result;
      expect(report.runCount).toBe(1);
      expect(report.sessionKey).toMatch(/^s-/);
      const [entry] = report.orchestrate;
      expect(entry).toMatchObject({ outcome: 'refused', leaseId: null, exitCode: null, toolCalls: [], refusal: c.refusal });
      expect(entry.failureClass).toBeUndefined();
      expect(report.likelyRootCause).toMatchObject({ code: 'orchestrate_failed', signal: 'refused', runId: entry.runId, affectedRuns: 1, refusal: c.refusal });
      expect(report.likelyRootCause.detail).toContain(`was refused before it started (${c.refusal.code}, ${c.refusal.reason}`);
      expect(report.likelyRootCause.nextSteps.join('\n')).toMatch(c.next);

      const text = h.run(['explain', '--last']);
      expect(text.status).toBe(0);
      expect(text.stdout).toContain('Verdict: orchestrate_failed [refused]');
      expect(text.stdout).toMatch(new RegExp(`${entry.runId}\\s+refused\\s+-\\s+-\\s+.*REFUSED ${c.refusal.code} \\(${c.refusal.reason}`));
      // The run id names it too.
      expect(parseJson(h.run(['explain', entry.runId, '--json']).stdout).result).toMatchObject({ scope: 'run', orchestrate: [{ runId: entry.runId, outcome: 'refused' }] });
    });
  }

  it('--json: the error envelope is unchanged; the refused run joins its --session; the positive control runs', () => {
    const h = makeHome();
    const script = h.script('w.mjs', WRITE);
    const res = h.run(['orchestrate', script, '--session', 'refusals', '--json']);
    expect(res.status).toBe(4);
    expect(res.stderr).toBe('');
    expect(parseJson(res.stdout)).toEqual({
      status: 'error',
      error: {
        code: 'CAPABILITY_DENIED',
        message: 'The script calls comis_tools.write, but the write surface of agent "default" is off.',
        hint: 'Nothing was run. Set agents.default.autonomy.write: true in config.yaml to turn it on.',
        details: { missingCapabilities: [], surface: 'write' },
      },
    });
    // A later successful run in the same session: the refusal stays the verdict, both are listed.
    const ok = h.run(['orchestrate', h.script('ok.mjs', "console.log('ran');"), '--session', 'refusals']);
    expect(ok.status).toBe(0);
    expect(ok.stdout).toBe('ran\n');
    const report = parseJson(h.run(['explain', 'refusals', '--json']).stdout).result;
    expect(report.orchestrate.map((e: { outcome: string }) => e.outcome)).toEqual(['refused', 'success']);
    expect(report.likelyRootCause.signal).toBe('refused');
  });

  it('fleet counts refused runs by reason, apart from failures', () => {
    const h = makeHome('agents:\n  default:\n    skills:\n      toolPolicy:\n        deny: [grep]\n');
    const write = h.script('w.mjs', WRITE);
    const grep = h.script('g.mjs', GREP);
    for (const s of [write, write, grep]) expect(h.run(['orchestrate', s]).status).toBe(4);
    expect(h.run(['orchestrate', h.script('f.mjs', 'process.exit(3);')]).status).toBe(1);
    const body = parseJson(h.run(['fleet', '--json']).stdout);
    validateFleet(body);
    const refused = body.result.findings.filter((f: { code: string }) => f.code === 'orchestrate_refused');
    expect(refused).toEqual([
      expect.objectContaining({ severity: 'warning', subject: 'surface_disabled', count: 2, detail: '2 runs refused before they started (surface_disabled).' }),
      expect.objectContaining({ severity: 'warning', subject: 'explicit_deny', count: 1 }),
    ]);
    const eff = body.result.findings.find((f: { code: string }) => f.code === 'orchestrate_efficiency');
    expect(eff.data).toMatchObject({ runs: 4, failedRuns: 1, refusedRuns: 3 });
    expect(body.result.findings.filter((f: { code: string }) => f.code === 'orchestrate_failed').map((f: { subject: string }) => f.subject)).toEqual(['nonzero_exit']);
    const text = h.run(['fleet']);
    expect(text.stdout).toMatch(/warning\s+orchestrate_refused\s+surface_disabled\s+2/);
  });

  it('a missing capability (a child asking for less than the script needs) is refused with the capability and the tool', async () => {
    // No orchestrate profile lacks a capability of the tool table, so the CLI cannot provoke it;
    // coordinator children can (requestedCaps), through the same runner.
    const h = makeHome();
    h.workspace();
    {
      const agent = resolveAgent(await loadConfig({ home: h.home }), 'default');
      const err = await runOrchestrate({
        source: GREP,
        displayName: 'g.mjs',
        language: 'js',
        agent,
        home: h.home,
        sessionKey: 's-child',
        requestedCaps: ['orch:web'],
        parentRunId: 'p-1',
        leaseRegistry: new LeaseRegistry(),
      }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RunRefusedError);
      const refused = err as RunRefusedError;
      expect(refused.code).toBe('CAPABILITY_DENIED');
      expect(refused.exitCode).toBe(4);
      expect(refused.details).toEqual({ missingCapabilities: ['orch:read'], tools: ['grep'] });
      expect(refused.refusal).toMatchObject({ sessionKey: 's-child', agentId: 'default', parentRunId: 'p-1', language: 'js', code: 'CAPABILITY_DENIED', reason: 'capability_missing', capabilities: ['orch:read'], tools: ['grep'] });
      expect(refused.refusal.runId).toMatch(/^r-[0-9a-f]{12}$/);
    }
  });
});

describe('coordinator children refused before they start', () => {
  it('a `comis run` child whose script calls the dark write surface is recorded as a refused run of the plan session (control: its sibling ran)', () => {
    const h = makeHome();
    const plan = join(tempDir('comis-plan-'), 'plan.yaml');
    writeFileSync(
      plan,
      'children:\n' +
        "  - id: writer\n    language: js\n    capabilities: [orch:read, orch:write]\n    inline: |\n      const { comis_tools } = require('./comis_tools.js');\n      comis_tools.write({ path: 'out.txt', content: 'x' }).then(() => console.log('SUMMARY: wrote'));\n" +
        '  - id: reader\n    language: js\n    inline: "console.log(\'SUMMARY: read ok\')"\n',
    );
    const res = h.run(['run', plan, '--session', 'plan-refusal', '--json']);
    const lines = res.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type?: string; childId?: string; state?: string; errorCode?: string });
    const finished = lines.filter((l) => l.type === 'child:finished');
    expect(finished.find((l) => l.childId === 'reader')).toMatchObject({ state: 'done' });
    expect(finished.find((l) => l.childId === 'writer')).toMatchObject({ state: 'failed', errorCode: 'CAPABILITY_DENIED' });
    const explained = parseJson(h.run(['explain', 'plan-refusal', '--json']).stdout).result;
    const refused = explained.orchestrate.filter((e: { outcome: string }) => e.outcome === 'refused');
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatchObject({ refusal: { code: 'CAPABILITY_DENIED', reason: 'surface_disabled', tools: ['write'] } });
    // The sibling is a real run of the same session.
    expect(explained.orchestrate.some((e: { outcome: string }) => e.outcome === 'success')).toBe(true);
  });
});
