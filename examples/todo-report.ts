// Chains two tools in one jailed run: grep the workspace for TODOs, then read
// the file with the most of them. Only the final report is printed, so only it
// comes back to the caller; the intermediate results stay in the jail.
import { comis_tools, ResultRef } from './comis_tools.js';

const hits = await comis_tools.grep({ pattern: 'TODO', glob: '**/*.md' });
// A large result would come back as a ResultRef to slice in place; this one is small.
const matches = hits instanceof ResultRef ? ((await hits.jq('{path, line}')) as { path: string }[]) : hits.matches;
const perFile = new Map<string, number>();
for (const m of matches) perFile.set(m.path, (perFile.get(m.path) ?? 0) + 1);
const [busiest] = [...perFile.entries()].sort((a, b) => b[1] - a[1]);

console.log(`${matches.length} TODOs in ${perFile.size} files`);
if (busiest) {
  const file = await comis_tools.read({ path: busiest[0], limit: 3 });
  if (!(file instanceof ResultRef)) {
    console.log(`busiest: ${busiest[0]} (${busiest[1]}); first ${file.lines} of ${file.totalLines} lines:`);
    console.log(file.content);
  }
}
