/**
 * oclif's `command_not_found` hook: an unknown command is a USAGE error like
 * every other (exit 2, `Error [USAGE]: …` or the `--json` error envelope)
 * with a "Did you mean …?" hint, instead of oclif's bare
 * "command skil:scan:x not found". Registered in package.json (oclif.hooks).
 */
import type { Hook } from '@oclif/core';

import { ComisError } from '../../lib/errors.js';
import { nearest, suggestCommand } from '../../lib/suggest.js';
import { writeError } from '../output.js';

const hook: Hook.CommandNotFound = async function (opts) {
  const ids = opts.config.commands.filter((c) => !c.hidden).map((c) => c.id);
  const topics = new Set(opts.config.topics.map((t) => t.name));
  // With a space separator oclif joins every word before the first flag into the id.
  const words = opts.id.split(':').filter((w) => w !== '');
  // Name only what is unknown: the words up to the first that is no topic (`sdk emitt`, not `sdk emitt x`).
  let known = 0;
  while (known < words.length - 1 && topics.has(words.slice(0, known + 1).join(':'))) known++;
  const unknown = words.slice(0, known + 1).join(' ');
  let err: ComisError;
  if (unknown.startsWith('-')) {
    // `comis --jsn`: a flag where a command should be. Only --help and --version stand alone.
    const flag = nearest(unknown.split('=')[0]!, ['--help', '--version']);
    err = new ComisError('USAGE', `Unknown flag: ${unknown}`, {
      hint: `${flag ? `Did you mean \`comis ${flag}\`? ` : ''}A command comes first, then its flags: \`comis <command> --json\`. Run \`comis --help\` to see the commands.`,
    });
  } else {
    const meant = suggestCommand(words, ids);
    err = new ComisError('USAGE', `Unknown command: comis ${unknown}`, {
      hint: meant ? `Did you mean \`comis ${meant}\`? Run \`comis --help\` to see the commands.` : 'Run `comis --help` to see the commands.',
    });
  }
  const argv = opts.argv ?? [];
  const json = argv.includes('--json') || words.includes('--json');
  // writeError returns the exit code; this.exit throws oclif's ExitError, which exits quietly with it.
  this.exit(writeError(err, json));
};

export default hook;
