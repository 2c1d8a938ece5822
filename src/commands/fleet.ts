import { existsSync } from 'node:fs';

import { Flags } from '@oclif/core';

import { BaseCommand } from '../cli/base-command.js';
import type { FleetReport } from '../lib/obs/fleet.js';
import { redactSecrets } from '../lib/redact/output-guard.js';

export default class Fleet extends BaseCommand {
  static override summary = 'Store-wide findings over a time window: failures by class, denied capabilities, efficiency.';

  static override description = `Each finding is {code, severity, subject?, count, detail, hint}, ordered by severity (error, warning, info), then count:
  orchestrate_failed       failed runs, one finding per failure class
  capability_denied        the capabilities most often denied (top 5), with the usual tool and reason
  runs_resumable/orphaned  durable runs left resumable or orphaned (only once durability records them)
  orchestrate_efficiency   run count and the summed estSavedTokens of the window (counts only)
Content-free: counts, closed enums and names only, safe to paste into a review. Exit code 0 whenever the report was built.`;

  static override examples = [
    { description: 'The last 24 hours', command: '<%= config.bin %> <%= command.id %>' },
    { description: 'The last 30 days, as JSON (schema: docs/schemas/fleet.schema.json)', command: '<%= config.bin %> <%= command.id %> --since 30d --json' },
    { description: 'Since a date', command: '<%= config.bin %> <%= command.id %> --since 2025-01-01' },
  ];

  static override flags = {
    since: Flags.string({ description: 'Window start: a duration back from now (90m, 24h, 30d, 2w) or an ISO date.', default: '24h' }),
  };

  async run(): Promise<FleetReport> {
    const { flags } = await this.parse(Fleet);
    const { comisHome, storePath } = await import('../lib/config/paths.js');
    const { fleet, emptyFleet } = await import('../lib/obs/fleet.js');
    const home = comisHome();
    let report: FleetReport;
    if (existsSync(storePath(home))) {
      const { openStore } = await import('../lib/store/store.js');
      const store = openStore({ home });
      try {
        // Every command that opens the store delivers what a crash left in the outbox (a probe otherwise).
        const { hasPending } = await import('../lib/store/outbox.js');
        if (hasPending(store.db)) await (await import('../lib/orchestrate/outbox-sweep.js')).sweepOnOpen(store);
        report = fleet(store.db, { since: flags.since });
      } finally {
        store.close();
      }
    } else {
      report = emptyFleet({ since: flags.since });
    }
    if (!this.jsonEnabled()) {
      const { renderFleetText } = await import('../lib/obs/render.js');
      process.stdout.write(redactSecrets(renderFleetText(report)));
    }
    return report;
  }
}
