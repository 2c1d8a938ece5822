import { existsSync } from 'node:fs';

import { Args, Flags } from '@oclif/core';

import { BaseCommand } from '../cli/base-command.js';
import { ComisError } from '../lib/errors.js';
import { redactSecrets } from '../lib/redact/output-guard.js';
import type { ExplainReport } from '../lib/obs/explain.js';

export default class Explain extends BaseCommand {
  static override summary = 'Explain a session (or one run): each orchestrate run, its tool calls, and the likely root cause.';

  static override description = `A content-free report read from the store: for each run of the session its runId, leaseId, outcome, duration, exit code, failure class, the tool calls folded from the audit events of the run's own lease ({tool, capability, decision, count}), and ResultRef counts and the savings estimate when the run materialized any.
The likelyRootCause verdict comes from fixed rules in a fixed precedence (spawn_fail > timeout > stdout_cap > deny > nonzero_exit): the same runs always give the same verdict. No script text, stdout, arguments, results or bearers are stored, so none can appear.
KEY is a session key or a run id (r-…). Exit codes: 0 report printed (whatever the verdict); 2 unknown key or usage error.`;

  static override examples = [
    { description: 'Explain the newest session', command: '<%= config.bin %> <%= command.id %> --last' },
    { description: 'Explain a session', command: '<%= config.bin %> <%= command.id %> s-m3x1k2-4f2a1c' },
    { description: 'One run, as JSON (schema: docs/schemas/explain.schema.json)', command: '<%= config.bin %> <%= command.id %> r-9f2c1e0a7b3d --json' },
  ];

  static override args = {
    key: Args.string({ description: 'Session key or run id.', required: false }),
  };

  static override flags = {
    last: Flags.boolean({ description: 'Explain the most recently updated session.', default: false }),
    limit: Flags.integer({ description: 'Report at most the newest N runs of the session (1-1000).', default: 200, min: 1, max: 1000 }),
  };

  async run(): Promise<ExplainReport> {
    const { args, flags } = await this.parse(Explain);
    if (flags.last === (args.key !== undefined)) {
      throw new ComisError('USAGE', flags.last ? 'Give either a KEY or --last, not both.' : 'Name a session key or run id, or pass --last.', {
        hint: 'Run `comis explain --last` for the newest session, or `comis explain <sessionKey>`.',
      });
    }
    const { comisHome, storePath } = await import('../lib/config/paths.js');
    const home = comisHome();
    if (!existsSync(storePath(home))) {
      throw new ComisError('NOT_FOUND', args.key === undefined ? 'No sessions are recorded yet.' : `No session or run "${args.key.slice(0, 120)}": no runs are recorded yet.`, {
        hint: 'Runs are recorded by `comis orchestrate`; run a script first.',
        details: { newestSessions: [] },
      });
    }
    const { openStore } = await import('../lib/store/store.js');
    const { explain } = await import('../lib/obs/explain.js');
    const store = openStore({ home });
    let report: ExplainReport;
    try {
      report = explain(store.db, args.key === undefined ? { last: true } : { key: args.key }, { limit: flags.limit });
    } finally {
      store.close();
    }
    if (!this.jsonEnabled()) {
      const { renderExplainText } = await import('../lib/obs/render.js');
      const { outStyle } = await import('../cli/color.js');
      process.stdout.write(redactSecrets(renderExplainText(report, outStyle())));
    }
    return report;
  }
}
