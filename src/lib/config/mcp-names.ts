/**
 * The name rules of MCP servers and tools, without zod: the gate checks names
 * on the hot path of every run (the allowlist is built before the jail
 * starts), and importing the config schema would load all of zod there.
 * `mcp-schema.ts` validates config with these same rules.
 */

/** A server name: lowercase identifier, so it is a valid JS property and Python attribute. */
export const MCP_SERVER_NAME_PATTERN = /^[a-z][a-z0-9_]{0,31}$/;
/** A tool name as MCP allows it (letters, digits, `_`, `-`, `.`), bounded. */
// At most 59 characters, so `mcp:<server>.<tool>` (an audit name) stays within the 96 the store keeps.
export const MCP_TOOL_NAME_PATTERN = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,58}$/;
/**
 * Property names a proxy must never turn into a call (thenables, JSON,
 * prototype, Node's inspect): a server or tool of this name cannot be reached.
 */
export const MCP_CONFUSABLE_NAMES: ReadonlySet<string> = new Set(['then', 'catch', 'finally', 'constructor', 'prototype', 'tojson', 'toJSON', 'inspect', 'valueOf', 'toString', 'describe', 'hasOwnProperty']);
