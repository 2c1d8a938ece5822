/**
 * web_fetch's own bounds as plain data, zod-free (like mcp-names.ts), so the
 * config schema and the tool share them without the tool's load path pulling
 * in the schema library.
 */

/** Clamp of web.fetch.timeoutMs: a value outside is brought inside, not refused. */
export const WEB_FETCH_TIMEOUT_BOUNDS = Object.freeze({ min: 1_000, max: 120_000, default: 30_000 });
