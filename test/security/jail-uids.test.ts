/**
 * Attack battery, jail uids (issue 10, hole 6). As root every workspace's jail
 * runs as its own uid from the store's registry:
 * - two workspaces whose OLD uids (200000 + FNV-1a mod 100000) collide, as a
 *   plan's child ids can be chosen to make them, get different uids, and one
 *   agent holding processes no longer starves the other's `maxProcesses`
 *   (control: the same pair of jails on the old shared uid does starve);
 * - a uid granted to a user in /etc/subuid (a temp file, injected) is never
 *   allocated (control: the old derivation lands in that grant).
 * Not root, the jail runs as the caller's uid and there is nothing to allocate:
 * these tests are skipped there, by name.
 */
import { chownSync, existsSync, mkdirSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { loadConfig, resolveAgent, type ResolvedAgent } from '../../src/lib/config/load.js';
import { isRoot } from '../../src/lib/jail/host.js';
import { prepareWritableDir } from '../../src/lib/jail/mounts.js';
import { fnv1a, isReservedId, jailUidPolicy, readReservedIds, type HostIdSources } from '../../src/lib/jail/uid-registry.js';
import { runOrchestrate } from '../../src/lib/orchestrate/runner.js';
import { prepareAgentJail } from '../../src/lib/orchestrate/workspace.js';
import { lookupJailUid } from '../../src/lib/store/jail-uids.js';
import { openStore } from '../../src/lib/store/store.js';
import { tempDir } from '../helpers/temp.js';
import { pidsOfUid, python, runInJail, until } from '../jail/helpers.js';

const root = isRoot();
const NOT_ROOT = "not root: the jail runs as the caller's own uid, no uid is allocated";

/** The derivation this registry replaced. */
const oldUid = (path: string): number => 200_000 + (fnv1a(path) % 100_000);

/** Two coordinator-child workspace paths under `home` whose old uids collide: what an attacker choosing child ids would aim for. */
function collidingChildWorkspaces(home: string): [string, string] {
  const seen = new Map<number, string>();
  const base = join(realpathSync(home), 'workspaces');
  for (let i = 0; ; i++) {
    const ws = join(base, `default--c${i}`);
    const prior = seen.get(oldUid(ws));
    if (prior) return [prior, ws];
    seen.set(oldUid(ws), ws);
  }
}

const MAX_PROCS = 16;
const HOLD = `
import os, time
for i in range(11):
    if os.fork() == 0:
        time.sleep(120); os._exit(0)
open('holding', 'w').close()
print('holding', flush=True)
time.sleep(120)
`;
const FORK10 = `
import os, time
kids, err = [], None
for i in range(10):
    try:
        pid = os.fork()
    except OSError as e:
        err = e.errno; break
    if pid == 0:
        time.sleep(30); os._exit(0)
    kids.append(pid)
print(len(kids), err, flush=True)
for k in kids: os.kill(k, 9)
`;

async function agentAt(home: string, id: string, workspace: string): Promise<ResolvedAgent> {
  const base = resolveAgent(await loadConfig({ home }));
  const config = structuredClone(base.config);
  config.autonomy.limits.maxProcesses = MAX_PROCS;
  return { id, config, workspace };
}

function idFiles(subuid: string): HostIdSources {
  const dir = tempDir('comis-ids-');
  const files = { subuid: join(dir, 'subuid'), subgid: join(dir, 'subgid'), passwd: join(dir, 'passwd'), group: join(dir, 'group') };
  writeFileSync(files.subuid, subuid);
  for (const f of [files.subgid, files.passwd, files.group]) writeFileSync(f, '');
  return { ...files, nssHasId: () => false };
}

describe('jail uids come from the registry', () => {
  it.skipIf(!root)(`two agents whose old uids collide get different uids, and one holding processes does not starve the other (${root ? 'root' : NOT_ROOT})`, async () => {
    const home = tempDir('comis-uids-');
    const [wsA, wsB] = collidingChildWorkspaces(home);
    expect(oldUid(wsA)).toBe(oldUid(wsB)); // the collision the old code had

    // Positive control: both jails on the old, shared uid. B's forks fail while A holds.
    const shared = oldUid(wsA);
    const ctlA = join(tempDir(), 'a');
    const ctlB = join(tempDir(), 'b');
    for (const d of [ctlA, ctlB]) {
      mkdirSync(d);
      prepareWritableDir(d, shared);
    }
    const py = python();
    let starved = '';
    await runInJail({
      command: py.cmd(HOLD),
      mounts: py.mounts,
      limits: { memoryMb: 1024, maxProcesses: MAX_PROCS, fileSizeMb: 16, tmpSizeMb: 16 },
      ws: { path: ctlA, hostUid: shared },
      during: async (p, out) => {
        await until(() => out.stdout().includes('holding'), 20_000, 'A holds its processes');
        const b = await runInJail({ command: py.cmd(FORK10), mounts: py.mounts, limits: { memoryMb: 1024, maxProcesses: MAX_PROCS, fileSizeMb: 16, tmpSizeMb: 16 }, ws: { path: ctlB, hostUid: shared } });
        starved = `${b.code} ${b.stdout.trim()} ${b.stderr.trim()}`;
        p.kill();
      },
    });
    // B either could not start at all (bwrap cannot fork) or stopped short with EAGAIN.
    expect(starved).not.toMatch(/^0 10 None/);
    expect(starved).toMatch(/ 11|Resource temporarily unavailable|Cannot fork|fork/i);

    // Now through the runner: the registry gives each workspace its own uid.
    const agentA = await agentAt(home, 'default--a', wsA);
    const agentB = await agentAt(home, 'default--b', wsB);
    const abort = new AbortController();
    const runA = runOrchestrate({ source: HOLD, displayName: 'hold.py', language: 'py', agent: agentA, home, sessionKey: 's', signal: abort.signal, timeoutMs: 120_000 });
    await until(() => existsSync(join(wsA, 'holding')), 30_000, 'A holds its processes');
    const b = await runOrchestrate({ source: FORK10, displayName: 'fork.py', language: 'py', agent: agentB, home, sessionKey: 's' });
    abort.abort();
    await runA;
    expect(b.public.outcome).toBe('success');
    expect(b.public.stdout.trim()).toBe('10 None');
    const store = openStore({ home, readonly: true });
    const uidA = lookupJailUid(store.db, wsA);
    const uidB = lookupJailUid(store.db, wsB);
    store.close();
    expect(uidB).toBeDefined();
    expect(uidB).not.toBe(uidA);
    expect(pidsOfUid(uidA!)).toEqual([]);
  });

  it.skipIf(root)(`not root: the jail runs as the caller and nothing is allocated${root ? ' [root: see the tests above]' : ''}`, async () => {
    const home = tempDir('comis-uids-');
    const agent = resolveAgent(await loadConfig({ home }));
    const plan = await prepareAgentJail(agent, home);
    expect(plan.hostUid).toBe(process.getuid!());
    expect(existsSync(join(home, 'comis.db'))).toBe(false); // the store is not even opened
  });

  it.skipIf(!root)(`the same workspace keeps its uid across runs (${root ? 'root' : NOT_ROOT})`, async () => {
    const home = tempDir('comis-uids-');
    const agent = resolveAgent(await loadConfig({ home }));
    const first = await prepareAgentJail(agent, home);
    const second = await prepareAgentJail(agent, home);
    expect(second.hostUid).toBe(first.hostUid);
    expect(second.workspaceReal).toBe(first.workspaceReal);
  });

  it.skipIf(!root)(`on the caller's connection (one per run), the registry gives the same uid and leaves the connection open (${root ? 'root' : NOT_ROOT})`, async () => {
    const home = tempDir('comis-uids-');
    const agent = resolveAgent(await loadConfig({ home }));
    const own = await prepareAgentJail(agent, home);
    const store = openStore({ home, sweep: false });
    let asked = 0;
    const shared = await prepareAgentJail(agent, home, {
      store: async () => {
        asked += 1;
        return store;
      },
    });
    expect(asked).toBe(1);
    expect(shared.hostUid).toBe(own.hostUid);
    // Still open for the run's record: the caller closes it.
    expect(store.db.open).toBe(true);
    expect(lookupJailUid(store.db, shared.workspaceReal)).toBe(shared.hostUid);
    // A second workspace on the same connection gets a uid of its own.
    const other = await agentAt(home, 'other', join(realpathSync(home), 'workspaces', 'other'));
    const plan2 = await prepareAgentJail(other, home, { store: async () => store });
    expect(plan2.hostUid).not.toBe(shared.hostUid);
    store.close();
  });

  it.skipIf(!root)(`the uid a used workspace belongs to is only a guess until the registry answers, and the script runs only as the registry's uid (${root ? 'root' : NOT_ROOT})`, async () => {
    const home = tempDir('comis-uids-');
    const agent = resolveAgent(await loadConfig({ home }));
    // The script leaves a file of its own and counts its starts in the workspace.
    const script = (name: string): string => `const fs = require('fs'); fs.writeFileSync('/workspace/${name}', 'x'); fs.appendFileSync('/workspace/starts', '${name} '); console.log('ok');`;
    const run = (name: string): ReturnType<typeof runOrchestrate> => runOrchestrate({ source: script(name), displayName: `${name}.js`, language: 'js', agent, home, sessionKey: 's' });
    const ownerOf = (name: string): number => statSync(join(realpathSync(agent.workspace), name)).uid;
    // A new workspace (root's): the registry is asked before the spawn.
    const ra = await run('a');
    expect(ra.public.stderrTail ?? '').toBe('');
    expect(ra.public.outcome).toBe('success');
    const first = ownerOf('a');
    const ws = realpathSync(agent.workspace);
    const setRow = (uid: number): void => {
      const store = openStore({ home, sweep: false });
      store.db.prepare('UPDATE jail_uids SET uid = ? WHERE workspace = ?').run(uid, ws);
      store.close();
    };
    // Used since: the guess (its owner) is confirmed, and the same jail goes on.
    expect((await run('b')).public.outcome).toBe('success');
    expect(ownerOf('b')).toBe(first);
    // The row changed by hand: the workspace belongs to a uid the registry no longer gives it. Refused
    // (as when the registry was read before the spawn), and the jail started on the guess ran nothing.
    const moved = jailUidPolicy().pick([first])!;
    setRow(moved);
    await expect(run('c')).rejects.toThrow(new RegExp(`owned by uid ${first}, neither comis nor this workspace's jail uid ${moved}`));
    expect(readFileSync(join(ws, 'starts'), 'utf8')).toBe('a b ');
    // A workspace still owned by its legacy uid, with a range that holds it and the row's uid: the guess
    // (the legacy uid) is wrong but the hand-over is allowed; the jail starts again as the registry's uid.
    const legacy = oldUid(ws);
    const range = { min: legacy - 1, max: legacy };
    const reserved = readReservedIds();
    if (isReservedId(legacy, reserved) || isReservedId(legacy - 1, reserved)) return; // this host grants them: nothing to show
    agent.config = structuredClone(agent.config);
    agent.config.skills.execSandbox.jailUidRange = range;
    chownSync(ws, legacy, legacy);
    setRow(legacy - 1);
    rmSync(join(ws, 'starts')); // the earlier runs' uid's: not the new uid's to append to
    expect((await run('d')).public.outcome).toBe('success');
    expect(ownerOf('d')).toBe(legacy - 1);
    expect(statSync(ws).uid).toBe(legacy - 1);
    expect(readFileSync(join(ws, 'starts'), 'utf8')).toBe('d ');
  });

  it.skipIf(!root)(`a uid granted in /etc/subuid is never allocated, though the old derivation lands in the grant (${root ? 'root' : NOT_ROOT})`, async () => {
    const home = tempDir('comis-uids-');
    // useradd's usual grants for four users: 100000-362143, over the whole old range.
    const grants = idFiles('alice:100000:65536\nbob:165536:65536\ncarol:231072:65536\ndave:296608:65536\n');
    const reserved = readReservedIds(grants);
    const agent = resolveAgent(await loadConfig({ home }));
    const ws = realpathSync(home) + '/workspaces/default';
    // Positive control: the old uid of this very workspace belongs to a user's grant.
    expect(isReservedId(oldUid(ws), reserved)).toBe(true);

    // A configured range that overlaps the grants: the registry steps over every one.
    agent.config = structuredClone(agent.config);
    agent.config.skills.execSandbox.jailUidRange = { min: 200_000, max: 370_000 };
    const plan = await prepareAgentJail(agent, home, { hostIdSources: grants });
    expect(plan.hostUid).toBeGreaterThanOrEqual(362_144); // past the last grant
    expect(plan.hostUid).toBeLessThanOrEqual(370_000);
    expect(isReservedId(plan.hostUid, reserved)).toBe(false);
    // However often it is asked (random starts), the policy never lands in a grant.
    const policy = jailUidPolicy({ min: 200_000, max: 370_000 }, grants);
    for (let i = 0; i < 200; i++) expect(isReservedId(policy.pick([])!, reserved)).toBe(false);

    // And the jail really runs as it: a file it creates is owned by that uid on the host.
    const r = await runInJail({ command: ['/bin/sh', '-c', 'echo hi > /workspace/made && echo done'], ws: { path: plan.workspaceReal, hostUid: plan.hostUid } });
    expect(r.stdout.trim()).toBe('done');
    expect(statSync(join(plan.workspaceReal, 'made')).uid).toBe(plan.hostUid);

    // The default range, with a grant over its first ids: skipped too.
    const agent2 = await agentAt(home, 'other', join(realpathSync(home), 'workspaces', 'other'));
    const start = 0x7000_0000;
    const plan2 = await prepareAgentJail(agent2, home, { hostIdSources: idFiles(`mallory:${start}:1000\n`) });
    expect(plan2.hostUid).toBeGreaterThanOrEqual(start + 1000);
  });
});
