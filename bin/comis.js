#!/usr/bin/env node
// The comis entry point. Kept tiny on purpose: every command loads its own
// dependencies inside run(); `--version` answers without loading oclif, and
// plain `comis orchestrate` invocations skip oclif too (same flag table; any
// help, unknown flag or usage error goes through the oclif command).
import { readFileSync } from 'node:fs';

const argv = process.argv.slice(2);
if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-v')) {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  process.stdout.write(`comis/${pkg.version} ${process.platform}-${process.arch} node-${process.version}\n`);
} else {
  let done = false;
  if (argv[0] === 'orchestrate' && !argv.includes('--help') && !argv.includes('-h')) {
    const { tryFastOrchestrate } = await import('../dist/cli/fast-orchestrate.js');
    done = await tryFastOrchestrate(argv.slice(1));
  }
  if (!done) {
    const { execute } = await import('@oclif/core');
    await execute({ dir: import.meta.url });
  }
}
