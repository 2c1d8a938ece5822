/**
 * The body of `comis explain` once its arguments are parsed, shared by the
 * oclif command and bin/comis.js's fast path for `explain --last`.
 */
import { existsSync } from 'node:fs';

import { ComisError } from '../lib/errors.js';
import type { ExplainReport } from '../lib/obs/explain.js';
import { redactSecrets } from '../lib/redact/output-guard.js';

/** `key` undefined: the newest session (`--last`). Human text goes to stdout unless `json`. */
export async function explainMain(input: { key?: string; limit: number }, json: boolean): Promise<ExplainReport> {
  const { comisHome, storePath } = await import('../lib/config/paths.js');
  const home = comisHome();
  if (!existsSync(storePath(home))) {
    throw new ComisError('NOT_FOUND', input.key === undefined ? 'No sessions are recorded yet.' : `No session or run "${input.key.slice(0, 120)}": no runs are recorded yet.`, {
      hint: 'Runs are recorded by `comis orchestrate`; run a script first.',
      details: { newestSessions: [] },
    });
  }
  const { openStore } = await import('../lib/store/store.js');
  const { explain } = await import('../lib/obs/explain.js');
  const store = openStore({ home });
  let report: ExplainReport;
  try {
    // Every command that opens the store delivers what a crash left in the outbox (a probe otherwise).
    const { hasPending } = await import('../lib/store/outbox.js');
    if (hasPending(store.db)) await (await import('../lib/orchestrate/outbox-sweep.js')).sweepOnOpen(store);
    report = explain(store.db, input.key === undefined ? { last: true } : { key: input.key }, { limit: input.limit });
  } finally {
    store.close();
  }
  if (!json) {
    const { renderExplainText } = await import('../lib/obs/render.js');
    const { outStyle } = await import('./color.js');
    process.stdout.write(redactSecrets(renderExplainText(report, outStyle())));
  }
  return report;
}
