/**
 * Phase 5, spawn: the script's command, environment and mounts, and the jail
 * started under its deadline supervisor. The script gets its lease bearer
 * and socket path in its environment; nothing else of comis.
 */
import type { JailedProcess } from '../../jail/types.js';
import type { AgentSurface } from '../../policy/surface.js';
import type { RunDirectory } from '../run-dir.js';
import { pythonImplicitSdkBoot, type ScriptLanguage } from '../transpile.js';
import { JAIL_RUN_DIR, JAIL_SOCKET, JAIL_WORKSPACE } from './constants.js';
import type { PreparedRun } from './prepare.js';
import type { AgentJail } from './run-dir.js';

export interface SpawnPhase {
  prepared: PreparedRun;
  language: ScriptLanguage;
  limits: Parameters<PreparedRun['jail']['spawnJail']>[0]['limits'] & { workspaceMb: number; workspaceInodes: number };
  runId: string;
  bearer: string;
  agentJail: AgentJail;
  dir: RunDirectory;
  socketPath: string;
  surface: AgentSurface;
  /** A replay: the workspace is bound read-only (the jail's /tmp is its only scratch). */
  readOnlyWorkspace?: boolean;
  /** More environment for the script (e.g. COMIS_MCP_TOOLS, the describe() digest of its MCP tools). */
  extraEnv?: Record<string, string>;
  /** The jail waits before its exec until released (see releaseWhenReady). */
  gated?: boolean;
}

export function spawnScript(p: SpawnPhase): JailedProcess {
  const { interpreter, script, jail } = p.prepared;
  const command =
    p.language === 'py'
      ? [interpreter.jailPath, ...(interpreter.args ?? []), '-E', '-s', '-B', ...(script.implicitSdk ? ['-c', pythonImplicitSdkBoot(JAIL_RUN_DIR, script.fileName)] : [`${JAIL_RUN_DIR}/${script.fileName}`])]
      : [interpreter.jailPath, ...(interpreter.args ?? []), ...script.nodeFlags, `${JAIL_RUN_DIR}/${script.fileName}`];
  const env: Record<string, string> = {
    ...p.extraEnv, // first: nothing in it replaces comis's own variables
    PATH: '/usr/local/bin:/usr/bin:/bin',
    HOME: '/tmp',
    LANG: 'C.UTF-8',
    TMPDIR: '/tmp',
    COMIS_CAP_LEASE: p.bearer,
    COMIS_ORCH_SOCKET: JAIL_SOCKET,
    COMIS_RUN_ID: p.runId,
    COMIS_WORKSPACE: JAIL_WORKSPACE,
  };
  if (p.language === 'py') {
    env.PYTHONPATH = JAIL_RUN_DIR;
    env.PYTHONDONTWRITEBYTECODE = '1';
    env.PYTHONUNBUFFERED = '1';
  }
  const { workspaceReal, hostUid, readOnlyMounts } = p.agentJail;
  return jail.spawnJail({
    command,
    mounts: [
      ...interpreter.mounts,
      ...readOnlyMounts,
      // A coordinator's own scripts mutate nothing: its workspace is read-only (heavy work goes to children).
      { kind: p.surface.role === 'coordinator' || p.readOnlyWorkspace ? 'ro' : 'rw', source: workspaceReal, target: JAIL_WORKSPACE },
      { kind: 'ro', source: p.dir.resultsDir, target: `${JAIL_WORKSPACE}/results` },
      { kind: 'ro', source: p.dir.sdkDir, target: JAIL_RUN_DIR },
      { kind: 'socket', source: p.socketPath, target: JAIL_SOCKET },
    ],
    cwd: JAIL_WORKSPACE,
    env,
    limits: p.limits,
    hostUid,
    // Counted as the host sees it (as root: every byte, whatever the jail's modes say).
    writableQuota: { hostPath: workspaceReal, maxBytes: p.limits.workspaceMb * 1024 * 1024, maxEntries: p.limits.workspaceInodes },
    stdin: 'ignore',
    deadlineMs: p.prepared.timeoutMs,
    ...(p.gated ? { gated: true } : {}),
  });
}

/** What failed between the spawn and the exec (the run's files, the store): the run ends with this error as it did when that work came before the spawn. */
export class BeforeExecFailure extends Error {
  constructor(readonly error: unknown) {
    super('the run failed before its jail could exec');
  }
}

/**
 * Every jail of a run is spawned gated: what the script needs only once it runs is done while
 * bubblewrap builds the jail, off the critical path, and the jail may exec only then. `install`
 * writes the run's files (SDK, script) into the directories the jail binds. As root, for a workspace
 * a run has used, the jail was spawned as the uid the workspace belongs to, and the store's registry
 * answers now (`agentJail.confirmUid`: loading SQLite overlaps the jail's set-up). The registry
 * agrees (every run but the rare one after a hand-edited row): the jail may exec. It says another uid:
 * the jail, which has run nothing, is killed, `onUidChange` moves what was handed to the old uid
 * (socket, tool context), and the jail starts again as the new one. Anything failed: the jail is
 * killed and the failure thrown as {@link BeforeExecFailure}.
 */
export async function releaseWhenReady(child: JailedProcess, p: { install: () => Promise<void>; agentJail: AgentJail; onUidChange: (uid: number) => void; respawn: () => JailedProcess }): Promise<JailedProcess> {
  let uid: number | undefined;
  try {
    await p.install();
    if (p.agentJail.confirmUid) uid = await p.agentJail.confirmUid();
  } catch (err) {
    child.kill();
    await child.exited;
    throw new BeforeExecFailure(err);
  }
  if (uid === undefined || uid === p.agentJail.hostUid) {
    child.release();
    return child;
  }
  child.kill();
  await child.exited;
  p.agentJail.hostUid = uid;
  p.onUidChange(uid);
  return p.respawn();
}
