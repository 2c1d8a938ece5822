/**
 * Phase 7, classify: the run's exit code and failure class, from facts the
 * script cannot forge (see {@link classifyExit}).
 */
import { constants as osConstants } from 'node:os';

import type { JailExit } from '../../jail/types.js';
import type { FailureClass } from '../../store/runs.js';
import type { RunVerdict } from './collect.js';
import { STDOUT_FLOOD_MIN_BYTES } from './constants.js';

/** Signals a runtime dies of when its memory runs out (V8 aborts; an mmap refused under RLIMIT_AS faults or traps). */
const MEMORY_DEATH_SIGNALS = new Set([5, 6, 7, 9, 11]); // SIGTRAP, SIGABRT, SIGBUS, SIGKILL, SIGSEGV

/** Fills `verdict` from the jail's exit: the exit code, and the failure class unless comis already set one. */
export function classifyRun(exit: JailExit, stdoutBytes: number, verdict: RunVerdict, limits: { workspaceMb: number; workspaceInodes: number }): void {
  // The supervisor's own SIGKILL at the deadline reads as 137, like a jail killed by comis's timer.
  verdict.exitCode = exit.code ?? (exit.signal ? 128 + (osConstants.signals[exit.signal] ?? 0) : null);
  if (exit.killedBy === 'quota' && !verdict.failureClass) {
    // No failure class of its own (the stored enum is closed): a non-zero exit that says why.
    verdict.failureClass = 'nonzero_exit';
    verdict.stderr += `\ncomis: the run was killed: its workspace passed autonomy.limits.workspaceMb (${limits.workspaceMb} MiB allocated) or workspaceInodes (${limits.workspaceInodes} entries), or held a directory comis could not measure.\n`;
  }
  verdict.failureClass ??= classifyExit(exit, stdoutBytes);
}

/**
 * The failure class of a run comis did not end itself (no timer, cap or
 * abort), from facts the script cannot forge: the supervisor's own death at
 * the deadline, bubblewrap's status pipe (`started`: it exec'd the command),
 * the exit code, and the bytes comis received. Never from the script's text.
 *
 * The one heuristic, `stdout_cap` for a flood the script's runtime could not
 * hold (node queues writes to a full pipe in its own heap until it dies): at
 * least {@link STDOUT_FLOOD_MIN_BYTES} of stdout arrived and the script then
 * died of a fatal signal. A script can trigger it on purpose, but gains
 * nothing: printing past the hard cap gets the same class.
 */
export function classifyExit(exit: { code: number | null; signal: NodeJS.Signals | null; killedBy?: 'kill' | 'quota' | 'deadline'; started: boolean }, stdoutBytes: number): FailureClass | undefined {
  if (exit.killedBy === 'deadline') return 'timeout';
  if (exit.code === 0 && !exit.signal) return undefined;
  if (!exit.started && !exit.killedBy) return 'spawn_fail';
  if (exit.code !== null && exit.code > 128 && MEMORY_DEATH_SIGNALS.has(exit.code - 128) && stdoutBytes >= STDOUT_FLOOD_MIN_BYTES && !exit.killedBy) return 'stdout_cap';
  return 'nonzero_exit';
}
