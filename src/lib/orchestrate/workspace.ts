/**
 * What a run's jail is given of the host, decided before anything runs: the
 * agent's workspace (screened, created, made the jail's), the host uid the
 * jail runs as (from the store's registry, as root), and the user-configured
 * read-only binds (`execSandbox.readOnlyAllowPaths`, screened).
 *
 * Security property: a config value cannot hand the jail — that is, the
 * model-written script, running as the jail uid — the host root, system
 * directories, `$HOME`, comis's own state (config, store, logs), another
 * agent's workspace, or a directory that another user could swap for a
 * link; and two workspaces never share a jail uid.
 */
import { chmodSync, existsSync, lstatSync, mkdirSync, realpathSync, unlinkSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, isAbsolute, join, resolve as resolvePath } from 'node:path';

import type { ResolvedAgent } from '../config/load.js';
import { configPath, storePath, workspacesDir } from '../config/paths.js';
import { ComisError } from '../errors.js';
import { inside, prepareWritableDir, realOr, screenBindSource } from '../jail/mounts.js';
import { RESERVED_TARGETS } from '../jail/plan.js';
import type { JailMount } from '../jail/types.js';
import { cachedNssLookup } from '../jail/nss-cache.js';
import { DEFAULT_HOST_ID_SOURCES, DEFAULT_JAIL_UID_RANGE, fnv1a, jailUidPolicy, type HostIdSources } from '../jail/uid-registry.js';

export interface WorkspaceScreenContext {
  agentId: string;
  /** `$COMIS_HOME`. */
  comisHome: string;
  /** The invoking user's home (default: os.homedir()). */
  home?: string;
}

/** Never a workspace, nor inside one, nor an ancestor of one: system trees and secrets. */
const SYSTEM_TREES: [string, string][] = [
  ['/etc', 'host configuration (/etc)'],
  ['/usr', 'system programs (/usr)'],
  ['/bin', 'system programs (/bin)'],
  ['/sbin', 'system programs (/sbin)'],
  ['/lib', 'system libraries (/lib)'],
  ['/lib32', 'system libraries (/lib32)'],
  ['/lib64', 'system libraries (/lib64)'],
  ['/libx32', 'system libraries (/libx32)'],
  ['/boot', 'the host /boot'],
  ['/dev', 'host devices (/dev)'],
  ['/proc', 'the host /proc'],
  ['/sys', 'the host /sys'],
  ['/run', 'host runtime state and daemon sockets (/run)'],
  ['/var/run', 'host runtime state and daemon sockets (/var/run)'],
  ['/var/lib', 'system state (/var/lib)'],
  ['/var/log', 'system logs (/var/log)'],
  ['/var/spool', 'system spools (/var/spool)'],
];

/** Never a workspace itself nor an ancestor of one, but a directory inside is fine. */
const SHARED_ROOTS: [string, string][] = [
  ['/', 'the host root'],
  ['/root', "root's home (/root)"],
  ['/home', 'the directory of all homes (/home)'],
  ['/var', 'the host /var'],
  ['/srv', 'the host /srv'],
  ['/opt', 'the host /opt'],
  ['/mnt', 'the host /mnt'],
  ['/media', 'the host /media'],
  ['/tmp', 'the shared /tmp'],
  ['/var/tmp', 'the shared /var/tmp'],
];

const HOME_SECRETS = ['.ssh', '.aws', '.gnupg', '.config', '.netrc', '.kube', '.docker', '.local'];

function refuser(agentId: string, path: string): (why: string) => never {
  return (why) => {
    throw new ComisError('CONFIG_INVALID', `Refusing agents.${agentId}.workspace = ${path}: ${why}.`, {
      hint: `Nothing was run. Point agents.${agentId}.workspace at a directory of its own (default $COMIS_HOME/workspaces/${agentId}) that holds only what scripts may change.`,
      details: { agentId, key: `agents.${agentId}.workspace`, path },
    });
  };
}

/** What {@link screenWorkspacePath} screens against: each path as written and, where it differs, resolved. */
interface ScreenLists {
  /** `$COMIS_HOME` as given and resolved (one entry when they are the same). */
  comis: Set<string>;
  trees: [string, string][];
  roots: [string, string][];
  stateList: [string, string][];
}

/** The lists a workspace is screened against (~40 realpaths), resolved once for the paths {@link screenWorkspace} screens. */
function screenLists(ctx: Required<WorkspaceScreenContext>): ScreenLists {
  const both = (list: [string, string][]): [string, string][] =>
    list.flatMap(([p, why]): [string, string][] => {
      const real = realOr(p);
      return real === p
        ? [[p, why]]
        : [
            [p, why],
            [real, why],
          ];
    });
  const home = resolvePath(ctx.home);
  const comis = resolvePath(ctx.comisHome);
  const trees = both([...SYSTEM_TREES, ...HOME_SECRETS.map((n): [string, string] => [join(home, n), `secrets and tokens (~/${n})`])]);
  const roots = both([...SHARED_ROOTS, [home, 'your home directory ($HOME)']]);
  // comis's own state: a jail that can write config.yaml turns on autonomy.write
  // for the next run. Only a directory of its own under $COMIS_HOME/workspaces is fine.
  const state: [string, string][] = [
    [comis, 'comis state, config and secrets ($COMIS_HOME)'],
    [configPath(comis), 'the comis config file'],
    [storePath(comis), 'the comis store'],
  ];
  return { comis: new Set([comis, realOr(comis)]), trees, roots, stateList: both(state) };
}

/** Refuses `candidate` (an absolute normalized path) when it is, holds or lies in something no jail may own. */
function screenWorkspacePath(candidate: string, lists: ScreenLists, refuse: (why: string) => never): void {
  const { comis, trees, roots, stateList } = lists;
  // What it IS first (the clearest reason), then what it lies in or holds.
  for (const [p, why] of [...stateList, ...roots, ...trees]) if (candidate === p) refuse(`it is ${why}`);
  for (const c of comis) {
    const wsRoot = workspacesDir(c);
    if (candidate === wsRoot) refuse('it is the directory of all agent workspaces ($COMIS_HOME/workspaces)');
    if (inside(candidate, c) && !inside(candidate, wsRoot)) refuse('it is inside comis state ($COMIS_HOME); only $COMIS_HOME/workspaces/<name> is for workspaces');
  }
  for (const [p, why] of [...stateList, ...roots, ...trees]) if (inside(p, candidate)) refuse(`it contains ${why}`);
  for (const [p, why] of trees) if (inside(candidate, p)) refuse(`it is inside ${why}`);
}

/** The path with its deepest existing ancestor resolved: where mkdir -p would really create it. */
function projectedRealPath(lexical: string): string {
  let existing = lexical;
  const rest: string[] = [];
  while (!existsSync(existing) && dirname(existing) !== existing) {
    rest.unshift(basename(existing));
    existing = dirname(existing);
  }
  return join(realOr(existing), ...rest);
}

/**
 * Refuses a real workspace path whose ancestors another user could change:
 * each must be owned by root or by comis's own uid, and not group- or
 * world-writable unless sticky (where others cannot rename what they do not own).
 */
function screenAncestors(real: string, refuse: (why: string) => never, what = 'the workspace'): void {
  const me = process.geteuid?.() ?? -1;
  for (let dir = dirname(real); ; dir = dirname(dir)) {
    const st = lstatSync(dir);
    if (st.uid !== 0 && st.uid !== me) refuse(`its ancestor ${dir} is owned by uid ${st.uid}, who could swap ${what} for a link`);
    if ((st.mode & 0o022) !== 0 && (st.mode & 0o1000) === 0) refuse(`its ancestor ${dir} is writable by other users (mode ${(st.mode & 0o7777).toString(8)}), who could swap ${what} for a link`);
    if (dir === '/') break;
  }
}

/**
 * Screens, creates and returns the real path of an agent's configured
 * workspace. Refused (CONFIG_INVALID naming `agents.<id>.workspace` and why),
 * lexically, where mkdir would create it, and after resolving symlinks:
 * the host root, system trees (`/etc`, `/usr`, `/proc`, `/run`, `/var/lib`…)
 * and anything in or above them; `/root`, `/home`, `/tmp`, `/var`, `/srv`,
 * `/opt` and `$HOME` themselves or above them; `~/.ssh`, `~/.config` and
 * other secret dirs; `$COMIS_HOME`, anything holding it or its config or
 * store, and anything in it but `$COMIS_HOME/workspaces/<name>`; a
 * configured path that is itself a symlink; and one with an ancestor that
 * another user owns or can write. The workspace itself is made 0700.
 */
export function screenWorkspace(path: string, context: WorkspaceScreenContext): string {
  const ctx = { home: homedir(), ...context };
  const refuse = refuser(ctx.agentId, path);
  if (typeof path !== 'string' || path.length === 0 || path.includes('\0')) refuse('not a valid path');
  if (!isAbsolute(path)) refuse('it is not an absolute path');
  const lexical = resolvePath(path);
  const lists = screenLists(ctx);
  screenWorkspacePath(lexical, lists, refuse);
  const projected = projectedRealPath(lexical);
  screenWorkspacePath(projected, lists, refuse);
  let st = existsSync(lexical) || lexicalIsLink(lexical) ? lstatSync(lexical) : undefined;
  if (st?.isSymbolicLink()) refuse('it is a symlink; name the real directory');
  if (st && !st.isDirectory()) refuse('it is not a directory');
  if (!st) mkdirSync(projected, { recursive: true, mode: 0o700 });
  const real = realpathSync(projected);
  // What the mkdir created may resolve differently now ($COMIS_HOME itself, on a first run): resolved afresh then.
  screenWorkspacePath(real, st ? lists : screenLists(ctx), refuse);
  st = lstatSync(real);
  if (!st.isDirectory()) refuse('it is not a directory');
  screenAncestors(real, refuse);
  // A previous run may have planted a symlink or file where results/ is mounted: unlinked, never
  // recursively removed. Another run of this agent may race in the workspace at any moment: a
  // recursive removal by path decided by this lstat could meet a directory swapped in and then
  // unlink `results/<entry>` through a link swapped in for `results` (as root: anywhere on the host).
  // unlink takes only the name itself, and fails on a directory, which is a mount point as good.
  const resultsMount = join(real, 'results');
  try {
    if (!lstatSync(resultsMount).isDirectory()) unlinkSync(resultsMount);
  } catch {
    /* absent (bwrap creates the mount point), or a directory by now */
  }
  return real;
}

function lexicalIsLink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

/** Paths the jail builds itself: a user bind may neither be one of them, nor hold one, nor (for some) lie inside one. */
const JAIL_OWN_TARGETS = ['/', '/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/etc', '/proc', '/dev', '/dev/shm', '/tmp', '/run', '/workspace'];
/** Inside these nothing may be bound: the jail's own trees, and every tree of its system base (the jail refuses those targets itself). */
const JAIL_SEALED_TREES = ['/workspace', '/run', ...RESERVED_TARGETS];

/**
 * `execSandbox.readOnlyAllowPaths` as jail mounts: each entry passes
 * {@link screenBindSource} (refusing system dirs, `/root`, `~/.ssh` and other
 * secrets, `$COMIS_HOME`, ancestors of them, sockets and paths that do not
 * exist) and is bound read-only at the SAME path inside the jail, as
 * written in the config. A target the jail builds itself (`/tmp`,
 * `/workspace`, `/usr`…, or inside `/workspace`, `/run`, `/proc`, `/dev`,
 * `/etc`) is refused. Errors name `agents.<id>.skills.execSandbox.readOnlyAllowPaths[i]`.
 */
export function readOnlyAllowMounts(paths: readonly string[], context: WorkspaceScreenContext & { workspaces?: readonly string[] }): JailMount[] {
  if (paths.length === 0) return [];
  const ctx = { home: homedir(), ...context };
  // Real paths of every agent's workspace (those that exist; one not made yet has nothing to bind).
  const workspaces = (ctx.workspaces ?? []).map((w) => realOr(resolvePath(w)));
  return paths.map((p, i) => {
    const key = `agents.${ctx.agentId}.skills.execSandbox.readOnlyAllowPaths[${i}]`;
    let source: string;
    try {
      source = screenBindSource(p, { comisHome: ctx.comisHome, home: ctx.home });
      // The path is resolved here and bound later (as root through a stage mount, which follows
      // links): each of its components must stay what it was until then. A jail rewrites its
      // workspace at any moment (another run of any agent may be running), and another user may
      // rewrite a directory they own or can write: either could swap a component for a link
      // between this check and the bind, and show the jail anything, unscreened.
      const workspace = workspaces.find((w) => w === source || inside(source, w) || inside(w, source));
      if (workspace !== undefined) {
        throw new ComisError(
          'INPUT_INVALID',
          `Refusing to bind ${p} into the jail: it ${workspace === source ? 'is' : inside(source, workspace) ? 'is inside' : 'holds'} an agent's workspace (${workspace}), which jails rewrite at any moment.`,
          {
            hint: 'Bind a directory no jail writes to; hand results between agents through a plan (comis run) instead.',
          },
        );
      }
      screenAncestors(
        source,
        (why) => {
          throw new ComisError('INPUT_INVALID', `Refusing to bind ${p} into the jail: ${why}.`, {
            hint: "Bind a directory whose every parent is root's or yours and writable by no one else.",
          });
        },
        'it',
      );
    } catch (err) {
      if (!(err instanceof ComisError)) throw err;
      throw new ComisError('CONFIG_INVALID', `${key}: ${err.message}`, { hint: `Nothing was run. ${err.hint ?? ''}`.trim(), details: { agentId: ctx.agentId, key, path: p } });
    }
    const target = resolvePath(p);
    const clash = JAIL_OWN_TARGETS.find((t) => t === target || inside(t, target)) ?? JAIL_SEALED_TREES.find((t) => inside(target, t));
    if (clash) {
      throw new ComisError('CONFIG_INVALID', `${key}: ${p} would be bound over the jail's own ${clash}.`, {
        hint: `Nothing was run. Entries are bound read-only at the same path inside the jail; use a path outside /tmp and ${JAIL_SEALED_TREES.join(', ')}.`,
        details: { agentId: ctx.agentId, key, path: p },
      });
    }
    return { kind: 'ro', source, target };
  });
}

export interface AgentJailPlan {
  /** Real path of the screened workspace, owned by the jail. */
  workspaceReal: string;
  /** The host uid the jail runs as: the registry's uid as root, our own otherwise. */
  hostUid: number;
  /** The screened `readOnlyAllowPaths` binds. */
  readOnlyMounts: JailMount[];
  /**
   * Only with {@link AgentJailOptions.deferRegistry}, as root, when `hostUid` is the uid the
   * workspace already belongs to (its last run's): the registry's own answer, read in the store,
   * for the caller to await before the jail may exec anything. When the registry says another uid,
   * the workspace has been checked and handed to it, and that uid is returned (the caller must
   * start its jail again with it).
   */
  confirmUid?: () => Promise<number>;
}

export interface AgentJailOptions {
  /** Test seam: the id databases the uid policy reads (default the host's /etc files and getent). */
  hostIdSources?: HostIdSources;
  /**
   * The caller's store connection (opened without the start-up sweeps), for the registry to use
   * instead of opening and closing one of its own; the caller keeps and closes it.
   */
  store?: () => Promise<import('../store/store.js').Store>;
  /**
   * As root, when the workspace already belongs to a uid the policy accepts, take it as the jail uid
   * without the store, and return {@link AgentJailPlan.confirmUid}: opening the store (loading SQLite)
   * then overlaps bubblewrap's set-up of a gated jail instead of delaying its spawn.
   */
  deferRegistry?: boolean;
}

/**
 * Everything of the host an agent's run gets, screened: see
 * {@link screenWorkspace}, {@link readOnlyAllowMounts}. As root, the jail
 * uid comes from the store's registry (`registerJailUid`): unique per
 * workspace real path, stable across runs, from
 * `execSandbox.jailUidRange`, skipping every subuid/subgid grant and every
 * account and group; the workspace is then chowned to it. Not root, the
 * jail runs as our own uid and the store is not touched.
 */
export async function prepareAgentJail(agent: ResolvedAgent, comisHome: string, options: AgentJailOptions = {}): Promise<AgentJailPlan> {
  const ctx = { agentId: agent.id, comisHome };
  const workspaceReal = screenWorkspace(agent.workspace, ctx);
  const sandbox = agent.config.skills.execSandbox;
  const readOnlyMounts = readOnlyAllowMounts(sandbox.readOnlyAllowPaths, { ...ctx, workspaces: [...(agent.agentWorkspaces ?? []), agent.workspace] });
  const root = process.geteuid?.() === 0;
  /** The workspace, checked to be comis's or `uid`'s (or its legacy uid's), made the jail's. */
  const handOver = (uid: number): void => {
    const owner = lstatSync(workspaceReal).uid;
    // Before the registry, a workspace's uid was 200000 + FNV-1a(real path) mod 100000: a workspace
    // still owned by exactly that uid is handed over (its files inside stay that uid's).
    const legacyUid = 200_000 + (fnv1a(workspaceReal) % 100_000);
    if (owner !== (process.geteuid?.() ?? -1) && owner !== uid && !(root && owner === legacyUid)) {
      refuser(agent.id, agent.workspace)(`it is owned by uid ${owner}, neither comis nor this workspace's jail uid ${uid}${root ? ' (chown it to root to hand it over)' : ''}`);
    }
    if (!root) chmodSync(workspaceReal, 0o700);
    prepareWritableDir(workspaceReal, uid);
  };
  if (!root) {
    const hostUid = process.getuid?.() ?? 65534;
    handOver(hostUid);
    return { workspaceReal, hostUid, readOnlyMounts };
  }
  // The name service's "nobody has this id" answers are cached while the files they stand on are unchanged (nss-cache.ts).
  const nss = options.hostIdSources ? undefined : cachedNssLookup(join(comisHome, 'cache', 'jail-nss.json'));
  const policy = jailUidPolicy(sandbox.jailUidRange ?? DEFAULT_JAIL_UID_RANGE, options.hostIdSources ?? (nss ? { ...DEFAULT_HOST_ID_SOURCES, nssHasId: nss.nssHasId } : DEFAULT_HOST_ID_SOURCES));
  const register = async (): Promise<number> => {
    const { registerJailUid } = await import('../store/jail-uids.js');
    let uid: number;
    if (options.store) {
      // The run's own connection: opened here, swept and recorded on once the jail is spawned.
      uid = registerJailUid((await options.store()).db, workspaceReal, policy);
    } else {
      const { openStore } = await import('../store/store.js');
      // Only the registry: the start-up sweeps run on the connection the run is recorded on, once the jail is spawned.
      const store = openStore({ home: comisHome, sweep: false });
      try {
        uid = registerJailUid(store.db, workspaceReal, policy);
      } finally {
        store.close();
      }
    }
    nss?.save();
    return uid;
  };
  // A workspace a run has used belongs to the uid the registry gave it then (handOver chowns it), which
  // the registry gives it again unless that uid has become unacceptable (checked here too) or the row
  // was changed by hand. That uid is the jail's until the registry, read while the jail is being set
  // up, confirms it; the caller lets nothing exec before. A new workspace (still root's) waits for the store.
  const owner = lstatSync(workspaceReal).uid;
  if (options.deferRegistry && owner !== 0 && policy.acceptable(owner)) {
    const plan: AgentJailPlan = { workspaceReal, hostUid: owner, readOnlyMounts };
    handOver(owner);
    plan.confirmUid = async () => {
      const uid = await register();
      if (uid !== owner) handOver(uid);
      return uid;
    };
    return plan;
  }
  const hostUid = await register();
  handOver(hostUid);
  return { workspaceReal, hostUid, readOnlyMounts };
}
