import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { TOOL_MAP } from '../../src/lib/capabilities/tool-map.js';
import { sdkForTools } from '../../src/lib/orchestrate/sdk-cache.js';
import { emitSdk } from '../../src/lib/sdk/emit.js';
import { tempDir } from '../helpers/temp.js';

const TOOLS = ['read', 'grep'];
const sha256 = (t: string): string => createHash('sha256').update(t).digest('hex');

function entryFile(home: string): string {
  const names = readdirSync(join(home, 'cache')).filter((n) => n.startsWith('sdk-'));
  expect(names).toHaveLength(1);
  return join(home, 'cache', names[0]!);
}

describe('the narrowed-SDK cache', () => {
  it('gives what the emitter gives for that tool set, and keeps it privately', async () => {
    const home = tempDir();
    const direct = emitSdk(
      'all',
      TOOL_MAP.filter((t) => TOOLS.includes(t.name)),
    );
    expect(await sdkForTools(home, TOOLS)).toEqual(direct);
    expect(statSync(entryFile(home)).mode & 0o777).toBe(0o600);
    expect(await sdkForTools(home, [...TOOLS].reverse())).toEqual(direct); // same set, same entry
    expect(readdirSync(join(home, 'cache'))).toHaveLength(1);
  });

  it('serves a hit from the cache (positive control), and re-emits a corrupt entry', async () => {
    const home = tempDir();
    const direct = await sdkForTools(home, TOOLS);
    const file = entryFile(home);
    const entry = JSON.parse(readFileSync(file, 'utf8'));
    const planted = JSON.stringify({ ...JSON.parse(entry.files), 'comis_tools.js': '// planted\n' });
    writeFileSync(file, JSON.stringify({ ...entry, files: planted, sha256: sha256(planted) }));
    expect((await sdkForTools(home, TOOLS)).get('comis_tools.js')).toBe('// planted\n');
    // The same edit without a matching checksum is not trusted.
    writeFileSync(file, JSON.stringify({ ...entry, files: planted }));
    expect(await sdkForTools(home, TOOLS)).toEqual(direct);
    for (const bad of ['', '{', 'null', JSON.stringify({ ...entry, key: 'x' })]) {
      writeFileSync(file, bad);
      expect(await sdkForTools(home, TOOLS)).toEqual(direct);
    }
  });

  it('another tool set or another comis version is emitted afresh', async () => {
    const home = tempDir();
    const two = await sdkForTools(home, TOOLS);
    const one = await sdkForTools(home, ['read']);
    expect(one).toEqual(
      emitSdk(
        'all',
        TOOL_MAP.filter((t) => t.name === 'read'),
      ),
    );
    expect(one).not.toEqual(two);
    await sdkForTools(home, TOOLS, { comisVersion: '0.0.0-old' });
    expect(readdirSync(join(home, 'cache')).filter((n) => n.startsWith('sdk-'))).toHaveLength(3);
  });
});
