import type { HeldRoot, Identity } from '../confine/index.js';
import type { ResultStore } from '../resultref/materialize.js';

/**
 * What a daemon-side tool knows of the run it serves. Tools never see the
 * lease bearer, the store or the socket.
 */
export interface ToolContext {
  runId: string;
  agentId: string;
  /** Real (symlink-free) host path of the agent workspace. */
  workspaceReal: string;
  /**
   * The workspace root held open for the run (`read` and `memory_*` resolve under it without
   * reopening it per call); closed when the run ends. Absent: each call opens `workspaceReal`.
   */
  workspaceRoot?: HeldRoot;
  /**
   * The run's jail identity on the host (its host uid and gid). The tools
   * act with its view: what the jail uid cannot search or read, they refuse,
   * even when comis runs as root.
   */
  jail: Identity;
  /** The workspace path as the jailed script sees it. */
  jailWorkspace: string;
  /** Host path of this run's results/writes area (not writable by the jail). */
  writesDir: string;
  /** Largest file `read` loads whole. */
  maxReadBytes: number;
  /** Bytes this run may still write into its results area (shared by writes and ResultRefs). */
  budget: { remainingBytes: number };
  /** Where high-volume returns are materialized as ResultRefs (absent: always inline). */
  results?: ResultStore;
  /**
   * Aborted when the run ends, whatever ended it: tool work still running for it
   * (a grep worker thread, a call waiting for a worker slot) stops then, so
   * nothing of a run outlives it.
   */
  runEnded?: AbortSignal;
}
