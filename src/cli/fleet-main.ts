/**
 * The body of `comis fleet` once its arguments are parsed, shared by the
 * oclif command and bin/comis.js's fast path (fast-commands.ts).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';

import type { FleetReport } from '../lib/obs/fleet.js';
import { redactSecrets } from '../lib/redact/output-guard.js';

/** Builds the report over `--since`; human text goes to stdout unless `json`. */
export async function fleetMain(input: { since: string }, json: boolean): Promise<FleetReport> {
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
      report = fleet(store.db, { since: input.since, rollupFile: join(home, 'cache', 'fleet-rollup.json') });
    } finally {
      store.close();
    }
  } else {
    report = emptyFleet({ since: input.since });
  }
  if (!json) {
    const { renderFleetText } = await import('../lib/obs/render.js');
    process.stdout.write(redactSecrets(renderFleetText(report)));
  }
  return report;
}
