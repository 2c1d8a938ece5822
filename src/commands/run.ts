import { readFileSync } from 'node:fs';

import { Args, Flags } from '@oclif/core';

import { BaseCommand } from '../cli/base-command.js';
import { ORCHESTRATE_FLAGS as F } from '../cli/orchestrate-flags.js';
import { ComisError, ExitCode } from '../lib/errors.js';
import type { ChildDetail } from '../lib/coordinator/coordinator.js';
import type { CoordinatorEvent } from '../lib/coordinator/events.js';

export default class Run extends BaseCommand {
  static override ndjson = true;

  static override summary = 'Run a plan: a coordinator lead and its isolated child runs, with a live TUI.';

  static override description = `Each child of the plan is its own jailed orchestrate run, in its own workspace ($COMIS_HOME/workspaces/<lead>--<child>), with caps = lead caps ∩ requested caps. When a child ends, its full stdout is kept in its workspace and the lead receives only a bounded summary (the child's last "SUMMARY:" line, else the head and tail of its stdout) plus a ResultRef drill-in line.
On a terminal a live TUI shows one row per child; --no-tui (or no TTY) prints plain lines; --json prints the events as NDJSON, then the result. --follow <planRunId> tails a run another process is executing (read-only). See docs/commands/run.md.
Exit codes: 0 every child succeeded; 1 a child failed, timed out or was skipped, or the run was stopped; 2 usage, plan or config error; 3 no working sandbox.`;

  static override examples = [
    { description: 'Run a plan with the TUI', command: '<%= config.bin %> <%= command.id %> plan.yaml --concurrency 4' },
    { description: 'Events as NDJSON', command: '<%= config.bin %> <%= command.id %> plan.yaml --json' },
    { description: 'Watch a run from another terminal', command: '<%= config.bin %> <%= command.id %> --follow p-0123456789ab' },
  ];

  static override args = {
    plan: Args.string({ description: 'Path of the plan YAML (not with --follow).', required: false }),
  };

  static override flags = {
    concurrency: Flags.integer({ char: 'c', description: 'Children run at once (default: the plan, else 2).', min: 1, max: 64 }),
    tui: Flags.boolean({ description: 'Show the live TUI on a terminal (--no-tui: plain lines).', default: true, allowNo: true }),
    'progress-interval-ms': Flags.integer({ description: 'Interval of the progress fork events, in ms (default 30000).', min: 10 }),
    follow: Flags.string({ description: 'Tail the plan run with this id (read-only), as another process executes it.' }),
    agent: Flags.string({ char: F.agent.char, description: 'Lead agent (default: the plan, COMIS_AGENT, the default agent).', env: F.agent.env }),
    session: Flags.string({ char: F.session.char, description: F.session.description, env: F.session.env }),
  };

  /** NDJSON: the final envelope is one line, like the events before it. */
  protected override logJson(json: unknown): void {
    process.stdout.write(`${JSON.stringify(json)}\n`);
  }

  async run(): Promise<unknown> {
    const { args, flags } = await this.parse(Run);
    if ((args.plan === undefined) === (flags.follow === undefined)) {
      throw new ComisError('USAGE', 'Give a plan file, or --follow <planRunId>, but not both.', { hint: 'Run `comis run --help`.' });
    }
    const json = this.jsonEnabled();
    const useTui = !json && flags.tui && process.stdout.isTTY === true && process.stdin.isTTY === true;
    const controller = new AbortController();
    let interrupts = 0;
    const onSignal = (): void => {
      if (++interrupts > 1) process.exit(130);
      controller.abort();
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    let render: (e: CoordinatorEvent) => void;
    // A failed child's stderr tail: under its row (TUI), indented lines (plain), the result's children[] (--json).
    let renderDetail: ((d: ChildDetail) => void) | undefined;
    let closeTui = async (): Promise<void> => undefined;
    if (useTui) {
      const { startTui } = await import('../ui/render-tui.js');
      const tui = startTui({ onQuit: () => controller.abort(), follow: flags.follow !== undefined, title: flags.follow ?? args.plan });
      render = tui.onEvent;
      renderDetail = tui.onDetail;
      closeTui = tui.close;
    } else {
      const { createPlainRenderer, formatChildDetail, formatNdjson } = await import('../ui/line-renderers.js');
      render = json ? (e) => process.stdout.write(formatNdjson(e)) : createPlainRenderer((t) => process.stdout.write(t));
      if (!json) renderDetail = (d) => process.stdout.write(formatChildDetail(d));
    }
    try {
      const { executeFollow, executeRunPlan } = await import('../lib/coordinator/execute.js');
      if (flags.follow !== undefined) {
        const status = await executeFollow({ planRunId: flags.follow, onEvent: render, signal: controller.signal });
        this.setExitStatus(status === 'success' || status === 'running' ? ExitCode.OK : ExitCode.FAILURE);
        if (status === 'interrupted' && !json) {
          await closeTui();
          process.stderr.write(`comis: plan run ${flags.follow} was interrupted: the comis process running it is gone; its finished children stay recorded (comis explain shows them).\n`);
        }
        return { planRunId: flags.follow, status };
      }
      const result = await executeRunPlan({
        planFile: args.plan!,
        agent: flags.agent,
        session: flags.session,
        concurrency: flags.concurrency,
        progressIntervalMs: flags['progress-interval-ms'],
        onEvent: render,
        onChildDetail: renderDetail,
        signal: controller.signal,
        onWarning: (m) => this.addWarning(m),
      });
      await closeTui();
      if (result.outcome !== 'success') this.setExitStatus(ExitCode.FAILURE);
      if (!json) {
        process.stdout.write(`\n--- lead context (${result.leadContext.chars} chars, ${result.leadContext.file}) ---\n`);
        process.stdout.write(readFileSync(result.leadContext.file));
      }
      return result;
    } finally {
      await closeTui();
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    }
  }
}
