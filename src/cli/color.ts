/**
 * Whether human output is coloured, and the chalk-backed TextStyle when it is.
 * Precedence: `--no-color` / `--color` flags, then FORCE_COLOR (set and not 0/false
 * forces colour), then NO_COLOR (set and non-empty turns it off), then whether the
 * stream is a terminal. `--json` output is never coloured. chalk is loaded only
 * when colour is on, so piped runs and `--json` pay nothing for it.
 */
import { PLAIN_STYLE, type TextStyle } from '../lib/style.js';

export function colorWanted(stream: { isTTY?: boolean }, argv: readonly string[], env: NodeJS.ProcessEnv = process.env): boolean {
  if (argv.includes('--json')) return false;
  if (argv.includes('--no-color')) return false;
  if (argv.includes('--color')) return true;
  const force = env.FORCE_COLOR;
  if (force !== undefined) return !['0', 'false'].includes(force.toLowerCase());
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  return stream.isTTY === true;
}

let stdoutStyle: TextStyle = PLAIN_STYLE;
let stderrStyle: TextStyle = PLAIN_STYLE;

async function chalkStyle(): Promise<TextStyle> {
  const { Chalk } = await import('chalk');
  const c = new Chalk({ level: 1 });
  return { good: (t) => c.green(t), bad: (t) => c.red.bold(t), warn: (t) => c.yellow(t), dim: (t) => c.dim(t) };
}

/** Decides colour for stdout and stderr once per command (the base command's init, the fast paths). */
export async function setupColor(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const out = colorWanted(process.stdout, argv, env);
  const err = colorWanted(process.stderr, argv, env);
  const style = out || err ? await chalkStyle() : PLAIN_STYLE;
  stdoutStyle = out ? style : PLAIN_STYLE;
  stderrStyle = err ? style : PLAIN_STYLE;
}

/** The style for what a command writes to stdout. */
export function outStyle(): TextStyle {
  return stdoutStyle;
}

/** The style for what a command writes to stderr (errors, hints). */
export function errStyle(): TextStyle {
  return stderrStyle;
}
