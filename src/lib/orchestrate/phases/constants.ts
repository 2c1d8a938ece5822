/** The runner's fixed numbers and jail paths (shared by its phases; re-exported by runner.ts). */
export const MAX_TIMEOUT_MS = 600_000;
export const STDERR_TAIL_CHARS = 2_000;
export const JAIL_WORKSPACE = '/workspace';
export const JAIL_RUN_DIR = '/run/comis';
export const JAIL_SOCKET = '/run/comis-cap/cap.sock';
/**
 * comis's own timer fires this long after the deadline: it is the second
 * line. The first is the supervisor the jail starts under, which kills at
 * the deadline whatever this process's event loop is doing.
 */
export const SECOND_LINE_GRACE_MS = 2_000;
/**
 * A stdout flood the script's own runtime could not hold: at least this many
 * bytes (one full pipe buffer) reached comis and the script then died of a
 * fatal signal (see `classifyExit` in phases/classify.ts).
 */
export const STDOUT_FLOOD_MIN_BYTES = 64 * 1024;
