/**
 * The SDK of an agent whose tool policy or role drops tools: emitted from
 * the tool table without them (so describe() and the types never offer a tool
 * the socket would deny), once per tool set, and kept under
 * `$COMIS_HOME/cache`. Emitting loads the tool table's zod schemas (~60 ms);
 * a run of the same agent after that copies a file.
 *
 * The key is the sorted tool set, the comis version and the identity (inode,
 * size, mtime) of the build's SDK files and emitter, so a rebuild or upgrade
 * emits afresh. The files carry their SHA-256: a corrupt entry is re-emitted,
 * never copied into a jail.
 */
import { createHash } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { comisVersion } from '../version.js';
import { readPrivateFile, writePrivateFileAtomic } from '../private-file.js';

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

function statId(url: URL): string {
  try {
    const st = statSync(fileURLToPath(url));
    return `${st.ino}:${st.size}:${st.mtimeMs}`;
  } catch {
    return '-';
  }
}

/** What the emitted text depends on besides the tool set: this build of the emitter and table. */
function buildId(): string {
  const emitJs = new URL('../sdk/emit.js', import.meta.url);
  const emitter = existsSync(fileURLToPath(emitJs)) ? emitJs : new URL('../sdk/emit.ts', import.meta.url);
  const table = existsSync(fileURLToPath(new URL('../capabilities/tool-map.js', import.meta.url))) ? new URL('../capabilities/tool-map.js', import.meta.url) : new URL('../capabilities/tool-map.ts', import.meta.url);
  // dist/sdk is rewritten by every build (scripts/build-sdk.mjs): its identity changes with the build.
  return [statId(new URL('../../sdk/comis_tools.js', import.meta.url)), statId(emitter), statId(table)].join(',');
}

interface Entry {
  key: string;
  sha256: string;
  files: string;
}

/** The SDK files (name → content) for exactly `tools` (undefined: the whole table), from the cache or emitted now (and cached). */
export async function sdkForTools(home: string, tools: readonly string[] | undefined, over: { comisVersion?: string } = {}): Promise<Map<string, string>> {
  const key = sha256(JSON.stringify({ v: 1, comis: over.comisVersion ?? comisVersion(), build: buildId(), tools: tools ? [...tools].sort() : 'all' }));
  const file = join(home, 'cache', `sdk-${key.slice(0, 16)}.json`);
  try {
    const entry = JSON.parse(readPrivateFile(file)) as Entry;
    if (entry.key === key && typeof entry.files === 'string' && entry.sha256 === sha256(entry.files)) {
      const files = JSON.parse(entry.files) as Record<string, unknown>;
      if (Object.values(files).every((v) => typeof v === 'string') && Object.keys(files).length > 0) return new Map(Object.entries(files) as [string, string][]);
    }
  } catch {
    /* a miss, or an entry not worth trusting: emit afresh */
  }
  const { emitSdk } = await import('../sdk/emit.js');
  const { TOOL_MAP } = await import('../capabilities/tool-map.js');
  const emitted = emitSdk('all', tools ? TOOL_MAP.filter((t) => tools.includes(t.name)) : TOOL_MAP);
  const files = JSON.stringify(Object.fromEntries(emitted));
  try {
    writePrivateFileAtomic(file, JSON.stringify({ key, sha256: sha256(files), files } satisfies Entry));
  } catch {
    /* best effort: the next run emits again */
  }
  return emitted;
}
