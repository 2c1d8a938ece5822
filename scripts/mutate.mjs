#!/usr/bin/env node
// `npm run mutate [module...]`: runs Stryker on each pure security module in turn (all by
// default; see scripts/mutation-modules.mjs), then prints the mutation score per module from
// the JSON reports. Incremental: a second run re-tests only what changed.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { MUTATION_MODULES } from './mutation-modules.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const wanted = process.argv.slice(2);
const names = wanted.length > 0 ? wanted : Object.keys(MUTATION_MODULES);
for (const name of names) if (!MUTATION_MODULES[name]) throw new Error(`unknown module ${name}; known: ${Object.keys(MUTATION_MODULES).join(', ')}`);

for (const name of names) {
  process.stdout.write(`\n== ${name} (${MUTATION_MODULES[name].file})\n`);
  const r = spawnSync(join(root, 'node_modules/.bin/stryker'), ['run'], { cwd: root, stdio: 'inherit', env: { ...process.env, COMIS_MUTATE: name } });
  if (r.status !== 0) process.stdout.write(`stryker exited ${r.status} for ${name}\n`);
}

/** Stryker's score: killed + timeout over all valid mutants (no coverage / survived count against). */
function score(report) {
  const counts = {};
  for (const file of Object.values(report.files)) for (const m of file.mutants) counts[m.status] = (counts[m.status] ?? 0) + 1;
  const detected = (counts.Killed ?? 0) + (counts.Timeout ?? 0);
  const valid = detected + (counts.Survived ?? 0) + (counts.NoCoverage ?? 0);
  return { score: valid === 0 ? 100 : (100 * detected) / valid, counts };
}

process.stdout.write('\nmodule          score   killed timeout survived nocov\n');
for (const name of names) {
  const file = join(root, 'reports/mutation', `${name}.json`);
  if (!existsSync(file)) {
    process.stdout.write(`${name.padEnd(15)} (no report)\n`);
    continue;
  }
  const { score: s, counts } = score(JSON.parse(readFileSync(file, 'utf8')));
  process.stdout.write(
    `${name.padEnd(15)} ${s.toFixed(1).padStart(5)}%  ${String(counts.Killed ?? 0).padStart(6)} ${String(counts.Timeout ?? 0).padStart(7)} ${String(counts.Survived ?? 0).padStart(8)} ${String(counts.NoCoverage ?? 0).padStart(5)}\n`,
  );
}
