#!/usr/bin/env node
// The comis entry point. Kept tiny on purpose: every command loads its own
// dependencies inside run(); `--version` and `--help` answer without loading oclif, and
// plain `comis orchestrate` invocations skip oclif too (same flag table; any
// help, unknown flag or usage error goes through the oclif command).
import { readFileSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const argv = process.argv.slice(2);
const userAgent = () => `comis/${JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).version} ${process.platform}-${process.arch} node-${process.version}`;
// `comis --help` to a pipe: the text oclif rendered at build time (scripts/build-manifest.mjs), for
// exactly the case it was rendered for (no terminal, default width, no forced color); else oclif.
const rootHelp = () => {
  if (process.stdout.isTTY || process.env.OCLIF_COLUMNS || process.env.FORCE_COLOR !== undefined) return undefined;
  try {
    return readFileSync(new URL('../dist/help/root.txt', import.meta.url), 'utf8');
  } catch {
    return undefined;
  }
};
// A fast path's bundle (scripts/build-*-bundle.mjs) while it is current: every dist file it was
// built from has the size its list (the .json beside it) records and none is newer than the
// bundle. Else undefined (missing, or dist rebuilt without it by `npm run build:fast`, or an
// edited dist file), and the modules themselves load. Plain path strings: a run stats ~140 inputs.
const currentBundle = (name) => {
  try {
    const dist = fileURLToPath(new URL('../dist/', import.meta.url));
    const path = `${dist}cli/${name}`;
    const builtAt = statSync(path).mtimeMs;
    const list = JSON.parse(readFileSync(path.replace(/\.c?js$/, '.json'), 'utf8'));
    for (const [file, size] of Object.entries(list.inputs)) {
      const stat = statSync(dist + file);
      if (stat.size !== size || stat.mtimeMs > builtAt) return undefined;
    }
    return { path, list };
  } catch {
    return undefined;
  }
};
let help;
if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-v')) {
  process.stdout.write(`${userAgent()}\n`);
} else if (argv.length === 1 && argv[0] === '--help' && (help = rootHelp()) !== undefined) {
  process.stdout.write(help.replace('{{userAgent}}', userAgent()));
} else {
  let done = false;
  if (argv[0] === 'orchestrate' && !argv.includes('--help') && !argv.includes('-h')) {
    // One bundled script with a V8 code cache while it is current, else the modules (see orchestrate-bundle.ts).
    const { loadFastOrchestrate } = await import('../dist/cli/orchestrate-bundle.js');
    done = await (await loadFastOrchestrate(currentBundle('fast-orchestrate.bundle.cjs')))(argv.slice(1));
  } else if (argv[0] === 'skill' && argv[1] === 'scan') {
    // Plain paths with --format, --fail-on, --json (see fast-skill-scan.ts); anything else goes to oclif.
    // One bundled script with a V8 code cache while it is current, else the modules (see skill-scan-bundle.ts).
    const { loadFastSkillScan } = await import('../dist/cli/skill-scan-bundle.js');
    done = await (await loadFastSkillScan(currentBundle('fast-skill-scan.bundle.cjs')))(argv.slice(2));
  } else if ((argv[0] === 'explain' && argv[1] === '--last') || (argv[0] === 'jail' && argv[1] === 'probe') || argv[0] === 'fleet') {
    // Exactly `explain --last` / `jail probe` / `fleet [--since X]`, each with an optional trailing --json (see fast-commands.ts).
    const { tryFastCommand } = await import('../dist/cli/fast-commands.js');
    done = await tryFastCommand(argv);
  }
  if (!done) {
    const { execute } = await import('@oclif/core');
    await execute({ dir: import.meta.url });
  }
}
