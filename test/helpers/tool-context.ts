import { mkdirSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import type { ToolContext } from '../../src/lib/tools/context.js';
import { tempDir } from './temp.js';

/**
 * A daemon-side tool context on a real temp tree: a workspace `ws`, a results/writes
 * area, and an `outside` directory holding a host secret the tools must never reach.
 * The jail identity is our own (tests that need another uid set it themselves).
 */
export function toolContext(budgetBytes: number): ToolContext & { outside: string } {
  const base = realpathSync(tempDir());
  const ws = join(base, 'ws');
  const writes = join(base, 'run', 'results', 'writes');
  const outside = join(base, 'outside');
  mkdirSync(ws);
  mkdirSync(writes, { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(outside, 'secret.txt'), 'TOP-SECRET-HOST-FILE\n');
  return {
    runId: 'r',
    agentId: 'a',
    workspaceReal: ws,
    jail: { uid: process.getuid!(), gid: process.getgid!() },
    jailWorkspace: '/workspace',
    writesDir: writes,
    maxReadBytes: 1024 * 1024,
    budget: { remainingBytes: budgetBytes },
    outside,
  };
}
