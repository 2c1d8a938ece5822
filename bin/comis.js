#!/usr/bin/env node
// The comis entry point. Kept tiny on purpose: every command loads its own
// dependencies inside run(); `--version` and `--help` answer without loading oclif, and
// plain `comis orchestrate` / `comis skill scan` invocations skip oclif too (same flag
// tables; any help, unknown flag or usage error goes through the oclif command).
//
// CommonJS (bin/package.json): an ES module entry, or the first import(), starts node's ES
// module loader, ~3.5 ms of every run. The `orchestrate` and `skill scan` fast paths require
// one CommonJS file (dist/cli/fast-entry.cjs, scripts/build-fast-entry.mjs) and run without it.
'use strict';
const { readFileSync, statSync } = require('node:fs');
const { join } = require('node:path');
const { pathToFileURL } = require('node:url');

const argv = process.argv.slice(2);
const dist = join(__dirname, '..', 'dist');
const userAgent = () => `comis/${JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')).version} ${process.platform}-${process.arch} node-${process.version}`;
// `comis --help` to a pipe: the text oclif rendered at build time (scripts/build-manifest.mjs), for
// exactly the case it was rendered for (no terminal, default width, no forced color); else oclif.
const rootHelp = () => {
  if (process.stdout.isTTY || process.env.OCLIF_COLUMNS || process.env.FORCE_COLOR !== undefined) return undefined;
  try {
    return readFileSync(join(dist, 'help', 'root.txt'), 'utf8');
  } catch {
    return undefined;
  }
};
// dist/cli/fast-entry.cjs while it is at least as new as the module it was bundled from (src/cli/fast-entry.ts);
// else (dist rebuilt by `npm run build:fast`, which does not bundle) that module itself, as an ES module.
const fastEntry = async () => {
  try {
    if (statSync(join(dist, 'cli', 'fast-entry.cjs')).mtimeMs >= statSync(join(dist, 'cli', 'fast-entry.js')).mtimeMs) return require('../dist/cli/fast-entry.cjs');
  } catch {
    /* no bundle: the module */
  }
  return import('../dist/cli/fast-entry.js');
};

const main = async () => {
  let help;
  if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-v')) {
    process.stdout.write(`${userAgent()}\n`);
    return;
  }
  if (argv.length === 1 && argv[0] === '--help' && (help = rootHelp()) !== undefined) {
    process.stdout.write(help.replace('{{userAgent}}', userAgent()));
    return;
  }
  let done = false;
  if (argv[0] === 'orchestrate' && !argv.includes('--help') && !argv.includes('-h')) {
    // One bundled script with a V8 code cache while it is current, else the modules (see orchestrate-bundle.ts).
    done = await (await fastEntry()).fastOrchestrate(argv.slice(1));
  } else if (argv[0] === 'skill' && argv[1] === 'scan') {
    // Plain paths with --format, --fail-on, --json (see fast-skill-scan.ts); anything else goes to oclif.
    // One bundled script with a V8 code cache while it is current, else the modules (see skill-scan-bundle.ts).
    done = await (await fastEntry()).fastSkillScan(argv.slice(2));
  } else if ((argv[0] === 'explain' && argv[1] === '--last') || (argv[0] === 'jail' && argv[1] === 'probe') || argv[0] === 'fleet') {
    // Exactly `explain --last` / `jail probe` / `fleet [--since X]`, each with an optional trailing --json (see fast-commands.ts).
    const { tryFastCommand } = await import('../dist/cli/fast-commands.js');
    done = await tryFastCommand(argv);
  }
  if (!done) {
    const { execute } = await import('@oclif/core');
    await execute({ dir: pathToFileURL(join(__dirname, '..', 'package.json')).href });
  }
};
// Once nothing is left to do (node emits 'beforeExit' only when the event loop is empty: every
// write, child and timer is done), exit at once with the same code instead of tearing the
// environment down: freeing the V8 heap page by page was 1-5 ms of every command on a machine
// where munmap is dear. 'exit' listeners still run; the store is closed by its users before this.
// Another 'beforeExit' listener (Ink unmounts an app still mounted on it) goes first: this one
// waits for the loop to empty again, or for node's own exit if that listener left nothing to do.
const exitWhenIdle = (code) => {
  if (process.listenerCount('beforeExit') > 0) process.once('beforeExit', exitWhenIdle);
  else process.exit(code);
};
process.once('beforeExit', exitWhenIdle);
main().catch((err) => {
  // As an uncaught error of an ES module entry: the stack to stderr, exit 1.
  process.exitCode = 1;
  process.stderr.write(`${err && err.stack ? err.stack : String(err)}\n`);
});
