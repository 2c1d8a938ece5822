/**
 * Lease revocation, inside ONE process: two runs with live capability
 * sockets and one registry, as a coordinator holds its children. A test
 * that spans two processes proves nothing here (the second process never
 * knew the first's bearer); this one keeps both sockets listening.
 *
 * Positive control: each bearer works on its own socket before revocation.
 */
import { createConnection } from 'node:net';
import { join } from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { mkdirSync, writeFileSync } from 'node:fs';

import { LeaseRegistry } from '../../src/lib/capabilities/lease.js';
import { loadConfig, resolveAgent } from '../../src/lib/config/load.js';
import { runOrchestrate, type OrchestrateEvent } from '../../src/lib/orchestrate/runner.js';
import { listenCapSocket, type CapSocket } from '../../src/lib/capsocket/server.js';
import { createDispatcher } from '../../src/lib/orchestrate/dispatch.js';
import { tempDir } from '../helpers/temp.js';

const open: CapSocket[] = [];
afterEach(async () => {
  while (open.length) await open.pop()!.close();
});

async function runSocket(registry: LeaseRegistry, runId: string): Promise<CapSocket> {
  const s = await listenCapSocket({
    dir: join(tempDir(), 'sock'),
    handler: createDispatcher({
      registry,
      socketId: runId,
      agentId: 'ag',
      surfaces: { write: false },
      tools: { read: () => ({ content: `served by ${runId}` }) },
      audit: () => undefined,
    }),
  });
  open.push(s);
  return s;
}

function call(path: string, bearer: string): Promise<{ ok: boolean; result?: unknown; error?: { code: string } }> {
  return new Promise((resolve, reject) => {
    const s = createConnection(path);
    let buf = '';
    s.on('error', reject);
    s.on('data', (d) => {
      buf += String(d);
      if (buf.includes('\n')) {
        s.destroy();
        resolve(JSON.parse(buf.split('\n')[0]!));
      }
    });
    s.on('connect', () => s.write(`${JSON.stringify({ id: 1, bearer, method: 'tool.invoke', params: { tool: 'read', args: { path: 'x' } } })}\n`));
  });
}

describe('lease revocation in one process', () => {
  it("a run's bearer is refused on its sibling's socket, and on its own socket once revoked, while both still listen", async () => {
    const registry = new LeaseRegistry();
    const assemblyA = registry.mintAssembly('ag', ['orch:read'], 60_000);
    const assemblyB = registry.mintAssembly('ag', ['orch:read'], 60_000);
    const a = registry.mintRun(assemblyA.lease, { runId: 'r-a', socketId: 'r-a', ttlMs: 60_000 });
    const b = registry.mintRun(assemblyB.lease, { runId: 'r-b', socketId: 'r-b', ttlMs: 60_000 });
    const sockA = await runSocket(registry, 'r-a');
    const sockB = await runSocket(registry, 'r-b');

    // Positive control: each bearer works where it belongs.
    expect(await call(sockA.path, a.bearer)).toEqual({ id: 1, ok: true, result: { content: 'served by r-a' } });
    expect(await call(sockB.path, b.bearer)).toEqual({ id: 1, ok: true, result: { content: 'served by r-b' } });

    // A sibling's bearer, on a live socket of the same registry: refused.
    expect(await call(sockB.path, a.bearer)).toMatchObject({ ok: false, error: { code: 'unauthenticated' } });
    expect(await call(sockA.path, b.bearer)).toMatchObject({ ok: false, error: { code: 'unauthenticated' } });

    // Run A ends the way the runner ends it: its assembly lease is revoked. Its socket still listens.
    registry.revoke(assemblyA.lease.leaseId);
    expect(await call(sockA.path, a.bearer)).toMatchObject({ ok: false, error: { code: 'unauthenticated' } });
    // B is untouched by A's end.
    expect(await call(sockB.path, b.bearer)).toMatchObject({ ok: true });
  });

  it("two real runs in one process, one registry: the sibling's bearer is refused on the live socket, and the runner revokes the lease it minted", async () => {
    const home = tempDir('comis-lease-');
    const agent = resolveAgent(await loadConfig({ home }));
    const registry = new LeaseRegistry();
    const rawCall = `import net from 'node:net';
const rawCall = (bearer) => new Promise((resolve) => {
  const s = net.createConnection(process.env.COMIS_ORCH_SOCKET);
  let buf = '';
  s.on('data', (d) => { buf += d; if (buf.includes('\\n')) { s.destroy(); resolve(JSON.parse(buf.split('\\n')[0])); } });
  s.on('error', (e) => resolve({ error: { code: 'socket_error' } }));
  s.write(JSON.stringify({ id: 1, bearer, method: 'tool.invoke', params: { tool: 'read', args: { path: 'x.txt' } } }) + '\\n');
});
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
const waitFor = async (f) => { for (let i = 0; i < 400 && !existsSync(f); i++) await new Promise((r) => setTimeout(r, 50)); };
`;
    mkdirSync(agent.workspace, { recursive: true });
    writeFileSync(join(agent.workspace, 'x.txt'), 'data\n');
    // A publishes its bearer and stays alive until B has tried it; B tries it on its own (live) socket.
    const a = `${rawCall}
writeFileSync('bearer-a.txt', process.env.COMIS_CAP_LEASE);
console.log('A own', (await rawCall(process.env.COMIS_CAP_LEASE)).ok);
await waitFor('b-done');`;
    const b = `${rawCall}
await waitFor('bearer-a.txt');
const stolen = readFileSync('bearer-a.txt', 'utf8');
const r = await rawCall(stolen);
console.log('B with A', r.ok, r.error && r.error.code);
console.log('B own', (await rawCall(process.env.COMIS_CAP_LEASE)).ok);
writeFileSync('b-done', '');`;
    const liveAtStart = new Map<string, boolean>();
    const onEvent = (e: OrchestrateEvent): void => {
      if (e.type === 'run:started') liveAtStart.set(e.leaseId, !registry.isRevoked(e.leaseId));
    };
    const [ra, rb] = await Promise.all([
      runOrchestrate({ source: a, displayName: 'a.mjs', language: 'js', agent, home, sessionKey: 's', leaseRegistry: registry, onEvent }),
      runOrchestrate({ source: b, displayName: 'b.mjs', language: 'js', agent, home, sessionKey: 's', leaseRegistry: registry, onEvent }),
    ]);
    // Positive controls: both ran, each bearer worked on its own socket, both leases were live while running.
    expect(ra.public.stdout).toBe('A own true\n');
    expect(rb.public.stdout).toBe('B with A false unauthenticated\nB own true\n');
    expect(liveAtStart.get(ra.public.leaseId)).toBe(true);
    expect(liveAtStart.get(rb.public.leaseId)).toBe(true);
    // Each run revoked what it minted before returning: nothing in the shared registry still authenticates.
    expect(registry.isRevoked(ra.public.leaseId)).toBe(true);
    expect(registry.isRevoked(rb.public.leaseId)).toBe(true);
  });
});
