/**
 * Idle writable-quota measuring threads kept for the next run (src/lib/jail/quota.ts)
 * never hold the process open: a process that measured and released them exits as soon
 * as its own work is done. (A 'message' listener added after unref() once re-ref'd the
 * worker's port, and every `comis orchestrate` then lingered until the idle timer.)
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

import { describe, expect, it } from 'vitest';

import { repoRoot } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp.js';

describe('idle measuring threads', () => {
  it('a process holding idle measurers exits on its own (under a harness kill timer far below their idle timeout)', () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'ws'));
    writeFileSync(join(dir, 'ws', 'f'), 'x');
    const quota = pathToFileURL(join(repoRoot, 'dist/lib/jail/quota.js')).href;
    const script = `
      const { watchQuota, measureTree, idleMeasurerCount } = await import(${JSON.stringify(quota)});
      const keep = setInterval(() => {}, 1000); // the run's own handles (its jail, its socket): measurers are unref'd
      const w = watchQuota({ hostPath: ${JSON.stringify(join(dir, 'ws'))}, maxBytes: 1 << 20 }, () => {}, 60000, { inlineEntries: 0 }); // on a thread, as a long run
      await w.check();
      w.stop();
      await w.check(); // the final check after stop() puts the thread back
      await measureTree(${JSON.stringify(join(dir, 'ws'))});
      process.stdout.write('idle ' + idleMeasurerCount());
      clearInterval(keep);
    `;
    // The idle timeout is 30 s: a process they held open would be killed by the 20 s timer.
    // A file, not `--input-type=module -e`: workers inherit that flag, and the measurer's eval'd source is CommonJS.
    const file = join(dir, 'idle.mjs');
    writeFileSync(file, script);
    const res = spawnSync(process.execPath, [file], { encoding: 'utf8', timeout: 20_000 });
    expect(res.signal, res.stderr).toBeNull();
    expect(res.status, res.stderr).toBe(0);
    // Control: the measurers really were idle in the pool when the process ended.
    expect(res.stdout).toBe('idle 1');
  }, 30_000);
});
