import { Flags } from '@oclif/core';

import { BaseCommand } from '../cli/base-command.js';
import type { FleetReport } from '../lib/obs/fleet.js';

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
    const { fleetMain } = await import('../cli/fleet-main.js');
    return fleetMain({ since: flags.since }, this.jsonEnabled());
  }
}
