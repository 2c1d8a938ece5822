/** Shared by the durable-run tests. */
import { openStore } from '../../src/lib/store/store.js';

export const DURABLE_CONFIG = 'agents:\n  default:\n    autonomy:\n      durability:\n        enabled: true\n        orchestrateResume: true\n';

/** The content-free store row of a durable run (read-only: no sweep). */
export function durableRow(home: string, runId: string): Record<string, unknown> | undefined {
  const s = openStore({ home, readonly: true });
  try {
    return s.db.prepare('SELECT run_id, status, reason, resumed_by, checkpoint_ref FROM resumable_runs WHERE run_id = ?').get(runId) as Record<string, unknown> | undefined;
  } finally {
    s.close();
  }
}
