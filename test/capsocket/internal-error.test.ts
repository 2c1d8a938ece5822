/**
 * A tool that fails daemon-side with something other than a tool error (a
 * bug, a host fault whose message names a host path or holds a secret):
 * the script gets only the socket's generic `internal`, while the error and
 * its cause chain are handed to onInternalError and reach the log, redacted.
 *
 * Positive control: the thrown message really carries the host path and the
 * secret (the log shows the path, the callback got the very error), so the
 * generic reply is the protection at work, not an error that never carried them.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { join } from 'node:path';

import { afterEach, describe, expect, it } from 'vitest';

import { LeaseRegistry } from '../../src/lib/capabilities/lease.js';
import { CapCallError } from '../../src/lib/capsocket/protocol.js';
import { listenCapSocket, type CapSocket } from '../../src/lib/capsocket/server.js';
import { closeLogger, configureLogging, logFilePath, logToolFailure } from '../../src/lib/obs/logger.js';
import { createDispatcher } from '../../src/lib/orchestrate/dispatch.js';
import { registerSecret, unregisterSecret } from '../../src/lib/redact/output-guard.js';
import { tempDir } from '../helpers/temp.js';

const SECRET = 'sk-internal-tool-secret-9f8e7d6c';
const HOST_PATH = '/var/lib/comis-host-only/state.db';

const open: CapSocket[] = [];
afterEach(async () => {
  while (open.length) await open.pop()!.close();
  closeLogger();
  unregisterSecret(SECRET);
});

function call(path: string, bearer: string, tool: string): Promise<{ ok: boolean; result?: unknown; error?: { code: string; message: string } }> {
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
    s.on('connect', () => s.write(`${JSON.stringify({ id: 1, bearer, method: 'tool.invoke', params: { tool, args: tool === 'grep' ? { pattern: 'x' } : { path: 'x' } } })}\n`));
  });
}

describe('tool failures that become internal', () => {
  it('reach the script as the generic message only, and the log with their cause chain, redacted', async () => {
    registerSecret(SECRET);
    const home = tempDir('comis-internal-');
    closeLogger();
    configureLogging({ home, verbose: false, env: {} });
    const registry = new LeaseRegistry();
    const assembly = registry.mintAssembly('ag', ['orch:read'], 60_000);
    const { bearer, lease } = registry.mintRun(assembly.lease, { runId: 'r-int', socketId: 'r-int', ttlMs: 60_000 });
    const seen: { tool: string; err: unknown }[] = [];
    const fault = new Error(`cannot open ${HOST_PATH} with key ${SECRET}`, { cause: Object.assign(new Error(`EACCES: ${HOST_PATH}`), { code: 'EACCES' }) });
    const socket = await listenCapSocket({
      dir: join(tempDir(), 'sock'),
      handler: createDispatcher({
        registry,
        socketId: 'r-int',
        agentId: 'ag',
        surfaces: { write: false },
        tools: {
          read: () => {
            throw fault;
          },
          grep: () => {
            throw new CapCallError('not_found', 'no such file');
          },
        },
        audit: () => undefined,
        onInternalError: (tool, err) => {
          seen.push({ tool, err });
          logToolFailure({ runId: 'r-int', leaseId: lease.leaseId, tool, error: err });
        },
      }),
    });
    open.push(socket);

    const reply = await call(socket.path, bearer, 'read');
    expect(reply).toEqual({ id: 1, ok: false, error: { code: 'internal', message: 'the tool failed daemon-side' } });
    expect(JSON.stringify(reply)).not.toContain(HOST_PATH);
    expect(JSON.stringify(reply)).not.toContain(SECRET);
    expect(seen).toEqual([{ tool: 'read', err: fault }]);

    // A tool error is the script's business: passed through, and not logged as a failure.
    const toolError = await call(socket.path, bearer, 'grep');
    expect(toolError).toMatchObject({ ok: false, error: { code: 'not_found', message: 'no such file' } });
    expect(seen).toHaveLength(1);

    const file = logFilePath(home);
    expect(existsSync(file)).toBe(true);
    const lines = readFileSync(file, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const failures = lines.filter((l) => l.event === 'tool:failed');
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatchObject({
      runId: 'r-int',
      leaseId: lease.leaseId,
      tool: 'read',
      error: { name: 'Error', message: `cannot open ${HOST_PATH} with key [REDACTED]` },
      causes: [{ name: 'Error', message: `EACCES: ${HOST_PATH}`, code: 'EACCES' }],
    });
    expect(readFileSync(file, 'utf8')).not.toContain(SECRET);
  });
});
