/**
 * Whether an agent's orchestrate runs are durable: `orchestrateResume` inside
 * an enabled `autonomy.durability` block (schema.ts refuses it on its own).
 * Zod-free, so the run's hot path can ask.
 */
export function durableRuns(autonomy: { durability?: { enabled: boolean; orchestrateResume: boolean } | undefined }): boolean {
  return autonomy.durability?.enabled === true && autonomy.durability.orchestrateResume === true;
}
