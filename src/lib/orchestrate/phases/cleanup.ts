/**
 * Phase 9, cleanup: runs whatever the earlier phases did or threw (the driver
 * calls it from its `finally`), over whatever of the run exists. The leases
 * are revoked, tool work still running stops, the socket closes, every
 * DuckDB child and MCP server is gone, kept results are copied out, and the
 * run directory and the workspace are cleaned without following a link.
 */
import { cpSync, renameSync } from 'node:fs';

import type { CapSocket } from '../../capsocket/server.js';
import type { RunDirectory } from '../run-dir.js';
import { removeTree, stripWorkspace } from '../run-dir.js';
import type { StdoutCollector } from './collect.js';
import type { RunLease } from './lease.js';
import type { RunServices } from './socket.js';

/** What of the run exists so far; cleanup handles each part that does. */
export interface RunParts {
  lease: RunLease;
  runEnded: AbortController;
  stdout?: StdoutCollector;
  workspaceReal?: string;
  dir?: RunDirectory;
  services?: RunServices;
  socket?: CapSocket;
  durable?: { run: { close(): void } };
}

export async function cleanupRun(parts: RunParts, keepResultsDir?: string): Promise<void> {
  parts.stdout?.close();
  parts.durable?.run.close();
  parts.lease.registry.revoke(parts.lease.assembly.lease.leaseId);
  parts.runEnded.abort();
  await parts.socket?.close();
  await parts.services?.close();
  if (keepResultsDir && parts.dir) {
    try {
      // Moved, when it can be (same filesystem, no kept files there yet): one rename instead of a
      // copy of every file and a removal of every original. Else copied, merging into what is kept.
      renameSync(parts.dir.resultsDir, keepResultsDir);
    } catch {
      try {
        cpSync(parts.dir.resultsDir, keepResultsDir, { recursive: true, errorOnExist: true, force: false, verbatimSymlinks: true });
      } catch {
        /* keeping is best effort: the run's outcome stands */
      }
    }
  }
  // The jail is gone (exited resolves only then). Neither step follows a link the jail left.
  if (parts.dir) await removeTree(parts.dir.path).catch(() => undefined); // a leftover is swept by the next comis process
  if (parts.workspaceReal) await stripWorkspace(parts.workspaceReal).catch(() => undefined);
  // The stale run dirs' sweep the run started (its first of the process) is done too.
  await parts.dir?.swept;
}
