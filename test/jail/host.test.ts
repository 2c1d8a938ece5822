import { readFileSync, readdirSync } from 'node:fs';

import { describe, expect, it } from 'vitest';

import { countTasksOfUid, readUidAndThreads } from '../../src/lib/jail/host.js';

/** The straightforward reading of /proc/<pid>/status, to hold the buffered reader to. */
function naive(pid: number): { uid: number; threads: number } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/status`, 'utf8');
    return { uid: Number(/^Uid:\s+(\d+)/m.exec(text)![1]), threads: Number(/^Threads:\s+(\d+)/m.exec(text)![1]) };
  } catch {
    return undefined;
  }
}

describe.runIf(process.platform === 'linux')('host task counting (RLIMIT_NPROC budget, uid reuse)', () => {
  it('reads our own real uid and thread count', () => {
    const own = readUidAndThreads(process.pid);
    expect(own?.uid).toBe(process.getuid!());
    expect(own?.threads).toBe(readdirSync('/proc/self/task').length);
    expect(own?.threads).toBeGreaterThan(1); // node runs worker threads: a count of 1 would mean Threads was not parsed
  });

  it('agrees with a plain reading of every process, and says nothing for a process that is gone', () => {
    const pids = readdirSync('/proc')
      .filter((n) => /^\d+$/.test(n))
      .map(Number);
    let compared = 0;
    for (const pid of pids) {
      const a = naive(pid);
      const b = readUidAndThreads(pid);
      if (!a || !b) continue; // exited between the two reads
      if (a.threads !== b.threads) continue; // a thread came or went between the reads
      expect(b.uid).toBe(a.uid);
      compared++;
    }
    expect(compared).toBeGreaterThan(3);
    expect(readUidAndThreads(0x3fffffff)).toBeUndefined();
  });

  it("counts our uid's tasks (at least this process's threads) and none for an unused uid", () => {
    expect(countTasksOfUid(process.getuid!())).toBeGreaterThanOrEqual(readdirSync('/proc/self/task').length);
    expect(countTasksOfUid(0x7ffffff3)).toBe(0);
  });
});
