// @generated:begin source-note
/**
 * The declarations of comis_tools.d.ts (the types JS scripts check against)
 * that are not generated: `comis sdk emit` replaces the api-types region
 * with the types of comis_tools_runtime.ts (plus the tool table's) and
 * copies the rest. Kept beside the runtime so a change to ResultRef or
 * ComisToolError there is made here too (a .ts file so tsc checks it).
 */
// @generated:end source-note
// @generated:begin api-types
import type * as runtime from './comis_tools_runtime.js';
import type { ComisTools } from './comis_tools_runtime.js';
// @generated:end api-types

/** A tool call that the capability socket refused or that failed daemon-side. */
export declare class ComisToolError extends Error {
  readonly code: string;
  readonly tool: string | undefined;
  constructor(code: string, message: string, tool?: string);
}

/**
 * A high-volume result kept on disk under the run's results/ directory.
 * read/grep/jq slice it in the jail; sql/jsonpath ask DuckDB outside.
 */
export declare class ResultRef {
  readonly type: 'ResultRef';
  readonly ref: string;
  readonly kind: 'json' | 'jsonl' | 'csv' | 'text';
  readonly bytes: number;
  readonly rows?: number;
  readonly schema?: string[];
  readonly preview: string;
  readonly expiresAt: number;
  readonly path: string;
  /** Lines offset..offset+limit (0-based) of the payload, joined with newlines. */
  read(offset?: number, limit?: number): Promise<string>;
  /** Lines matching a POSIX extended regular expression (grep -E), with 1-based line numbers. */
  grep(pattern: string): Promise<Array<{ line: number; text: string }>>;
  /** A jq filter over the payload (each JSONL line is one input). One output → that value; else an array of outputs. */
  jq(expr: string): Promise<unknown>;
  /** One read-only DuckDB SELECT (read the payload with read_json_auto/read_csv over this.ref). */
  sql(query: string): Promise<Array<Record<string, unknown>> | { error: string }>;
  /** A $-rooted JSONPath extraction (DuckDB json_extract; no eval). */
  jsonpath(expr: string): Promise<unknown>;
  toJSON(): Record<string, unknown>;
}

export declare const comis_tools: ComisTools;
// @generated:begin conformance
// tsc fails here when the runtime's classes drift from these declarations.
type Assert<T extends true> = T;
export type RuntimeConforms = Assert<runtime.ResultRef extends ResultRef ? (runtime.ComisToolError extends ComisToolError ? true : false) : false>;
// @generated:end conformance
