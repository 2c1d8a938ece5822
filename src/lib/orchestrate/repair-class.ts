/**
 * Which failed runs the one-shot repair may try to fix (seed 000 "One-shot
 * repair"): a near miss the script's author can fix by rewriting it, never
 * a run that was stopped or that died of something a rewrite does not cure.
 *
 * A pure function of content-free facts (failure class, exit code, whether a
 * call was denied) and the redacted stderr tail. The recoverable classes are
 * tried in table order and the first whose pattern matches the tail wins.
 * Not repaired: timeout, stdout_cap, spawn_fail, a death by signal (exit
 * code above 128: a segfault, "Killed", an abort), any denied tool call,
 * and every other non-zero exit (a RangeError, a thrown Error, exit(3)).
 */

import type { RepairClass } from '../store/runs.js';

/** The recoverable classes, in matching order (the closed enum is stored: store/runs.ts). */
export { REPAIR_CLASSES, type RepairClass } from '../store/runs.js';

/** Why a failed run is not recoverable (content-free, for logs and tests). */
export type NotRecoverable = 'not_nonzero_exit' | 'signal_death' | 'denied_call' | 'no_match';

const RULES: readonly { cls: RepairClass; matches: (tail: string) => boolean }[] = [
  {
    cls: 'bad_import',
    matches: (t) => /\b(?:ImportError|ModuleNotFoundError|ERR_MODULE_NOT_FOUND)\b|Cannot find (?:module|package)\b/.test(t),
  },
  {
    cls: 'comis_tools_misuse',
    matches: (t) => /\bcomis_tools\b[^\n]*\bis not defined\b/.test(t) || (/\bcomis_tools\b/.test(t) && /\b(?:TypeError|AttributeError)\b|\bis not a function\b|\bhas no attribute\b/.test(t)),
  },
  { cls: 'syntax_error', matches: (t) => /\b(?:SyntaxError|IndentationError|TabError)\b/.test(t) },
  { cls: 'type_error', matches: (t) => /\bTypeError\b/.test(t) },
];

export interface FailedRunFacts {
  /** The run's failure class (undefined: it succeeded). */
  failureClass: string | undefined;
  exitCode: number | null;
  /** Whether any tool call of the run was denied at the socket. */
  denied: boolean;
  /** The stderr tail, already redacted. */
  stderrTail: string;
}

/** The recoverable class of a failed run, or why it is not recoverable. */
export function classifyRepair(run: FailedRunFacts): { recoverable: true; cls: RepairClass } | { recoverable: false; why: NotRecoverable } {
  if (run.failureClass !== 'nonzero_exit') return { recoverable: false, why: 'not_nonzero_exit' };
  if (run.exitCode === null || run.exitCode > 128) return { recoverable: false, why: 'signal_death' };
  if (run.denied) return { recoverable: false, why: 'denied_call' };
  for (const rule of RULES) if (rule.matches(run.stderrTail)) return { recoverable: true, cls: rule.cls };
  return { recoverable: false, why: 'no_match' };
}
