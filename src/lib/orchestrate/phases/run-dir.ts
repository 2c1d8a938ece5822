/**
 * Phase 3, run directory and SDK: the agent's workspace and jail uid, the
 * run's private directory under $COMIS_HOME/runs (outside the workspace; the
 * jail sees it read-only), the SDK and the script in it, and the tool context
 * the socket's tools work in (results store, byte budget, the run-ended signal).
 */
import { chmodSync, copyFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import type { ResolvedAgent } from '../../config/load.js';
import { HeldRoot } from '../../confine/index.js';
import type { AgentSurface } from '../../policy/surface.js';
import { createResultStore, type ResultStore } from '../../resultref/materialize.js';
import type { ToolContext } from '../../tools/context.js';
import { prepareRunDir, type RunDirectory } from '../run-dir.js';
import type { PreparedScript } from '../transpile.js';
import { prepareAgentJail } from '../workspace.js';
import { JAIL_WORKSPACE } from './constants.js';

const SDK_NAMES = ['comis_tools.ts', 'comis_tools.js', 'comis_tools.d.ts', 'comis_tools.py'];

/**
 * Puts the SDK into the run directory: the copy pre-generated at build
 * (dist/sdk, byte-identical to `comis sdk emit`), else emitted on the spot.
 * An agent whose tool policy or role drops tools gets its own SDK, emitted
 * from the table without them, so describe() and the types never offer a
 * tool the socket would deny by policy.
 */
async function installSdk(dir: string, mode: number, home: string, tools?: readonly string[]): Promise<void> {
  const prebuilt = new URL('../../../sdk/', import.meta.url);
  if (!tools && SDK_NAMES.every((n) => existsSync(new URL(n, prebuilt)))) {
    for (const n of SDK_NAMES) {
      copyFileSync(new URL(n, prebuilt), join(dir, n));
      chmodSync(join(dir, n), mode);
    }
    return;
  }
  const { sdkForTools } = await import('../sdk-cache.js');
  for (const [name, content] of await sdkForTools(home, tools)) writeFileSync(join(dir, name), content, { mode });
}

export type AgentJail = Awaited<ReturnType<typeof prepareAgentJail>>;

/** The agent's jail (workspace, uid, read-only mounts): the first thing created on the host for a run. */
export async function openAgentJail(agent: ResolvedAgent, home: string, surface: AgentSurface, store?: () => Promise<import('../../store/store.js').Store>): Promise<AgentJail> {
  // As root, each workspace gets its own stable unprivileged uid (so agents never share a process count).
  // The workspace and readOnlyAllowPaths are screened, and (as root) the uid comes from the store's registry
  // (on the caller's connection when it passes one): for a workspace a run has used, confirmed while its
  // gated jail is set up (agentJail.confirmUid, see releaseWhenReady).
  const agentJail = await prepareAgentJail(agent, home, { ...(store ? { store } : {}), deferRegistry: true });
  // bwrap cannot create the results/ mount point inside a read-only workspace bind.
  if (surface.role === 'coordinator') mkdirSync(join(agentJail.workspaceReal, 'results'), { recursive: true, mode: 0o755 });
  return agentJail;
}

/** The run directory, empty: the jail binds its directories, and {@link installRunFiles} fills them before the script may run. */
export async function openRunDir(home: string, runId: string): Promise<RunDirectory> {
  return prepareRunDir(home, runId, { root: process.getuid?.() === 0 });
}

/**
 * The SDK and the script, into the run directory's SDK directory, which the jail binds read-only:
 * written while a gated jail is set up (the bind shows them), before it may exec the script.
 */
export async function installRunFiles(dir: RunDirectory, home: string, surface: AgentSurface, script: PreparedScript): Promise<void> {
  await installSdk(dir.sdkDir, dir.fileMode, home, surface.dropped.size > 0 ? surface.tools : undefined);
  writeFileSync(join(dir.sdkDir, script.fileName), script.code, { mode: dir.fileMode });
}

/** The context every tool of the run works in; `runEnded` is aborted by cleanup. */
export function toolContext(runId: string, agent: ResolvedAgent, agentJail: AgentJail, dir: RunDirectory, runEnded: AbortSignal): ToolContext & { results: ResultStore } {
  const limits = agent.config.autonomy.limits;
  const root = process.getuid?.() === 0;
  const budget = { remainingBytes: limits.resultRunMb * 1024 * 1024 };
  const results = createResultStore(dir.resultsDir, { budget, maxFileBytes: limits.resultFileMb * 1024 * 1024, ended: runEnded });
  // The workspace root is opened on the first file call and held until the run ends (no open/close per call).
  const workspaceRoot = new HeldRoot(agentJail.workspaceReal);
  if (runEnded.aborted) workspaceRoot.close();
  else runEnded.addEventListener('abort', () => workspaceRoot.close(), { once: true });
  return {
    runId,
    agentId: agent.id,
    workspaceReal: agentJail.workspaceReal,
    workspaceRoot,
    jail: { uid: agentJail.hostUid, gid: root ? agentJail.hostUid : (process.getgid?.() ?? agentJail.hostUid) },
    jailWorkspace: JAIL_WORKSPACE,
    writesDir: dir.writesDir,
    maxReadBytes: limits.resultFileMb * 1024 * 1024,
    budget,
    results,
    runEnded,
  };
}
