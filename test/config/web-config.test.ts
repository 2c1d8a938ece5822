/**
 * `agents.<id>.web.fetch` in config.yaml: bad entries are config problems at
 * their file, line and dotted key (never a silent fallback); good ones load.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { loadConfig } from '../../src/lib/config/load.js';
import type { ComisError } from '../../src/lib/errors.js';
import { tempDir } from '../helpers/temp.js';

async function problems(yaml: string): Promise<Array<{ key: string; line: number; message: string }>> {
  const home = tempDir();
  writeFileSync(join(home, 'config.yaml'), yaml);
  try {
    await loadConfig({ home });
  } catch (err) {
    expect((err as ComisError).code).toBe('CONFIG_INVALID');
    return (err as ComisError).details!.problems as never;
  }
  throw new Error('expected the config to be invalid');
}

describe('web.fetch config', () => {
  it('loads IP, CIDR and IP:port allowPrivate entries and host patterns', async () => {
    const home = tempDir();
    writeFileSync(
      join(home, 'config.yaml'),
      'agents:\n  a:\n    web:\n      fetch:\n        allowPrivate: ["127.0.0.1:8080", "10.1.2.0/24", "fd00::/8", "[::1]:9000"]\n        allowHosts: ["docs.example.org", "*.intra.example"]\n        followRedirects: false\n',
    );
    const { config } = await loadConfig({ home });
    expect(config.agents.a!.web.fetch).toMatchObject({ allowPrivate: ['127.0.0.1:8080', '10.1.2.0/24', 'fd00::/8', '[::1]:9000'], followRedirects: false, timeoutMs: 30_000, denyHosts: [] });
  });

  it('refuses a host name in allowPrivate, a bad CIDR and a host pattern with a scheme, at their lines', async () => {
    const p = await problems('agents:\n  a:\n    web:\n      fetch:\n        allowPrivate:\n          - localhost\n          - 10.0.0.0/40\n        denyHosts: ["https://evil.example/"]\n');
    const byKey = Object.fromEntries(p.map((x) => [x.key, x]));
    expect(Object.keys(byKey).sort()).toEqual(['agents.a.web.fetch.allowPrivate[0]', 'agents.a.web.fetch.allowPrivate[1]', 'agents.a.web.fetch.denyHosts[0]']);
    expect(byKey['agents.a.web.fetch.allowPrivate[0]']).toMatchObject({ line: 6, message: expect.stringContaining('host names are not accepted') });
    expect(byKey['agents.a.web.fetch.allowPrivate[1]']!.line).toBe(7);
    expect(byKey['agents.a.web.fetch.denyHosts[0]']!.line).toBe(8);
  });

  it('refuses unknown keys under web.fetch', async () => {
    const p = await problems('agents:\n  a:\n    web:\n      fetch:\n        allowLoopback: true\n');
    expect(p[0]!.key).toMatch(/^agents\.a\.web\.fetch/);
  });
});
