import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

import { describe, expect, it } from 'vitest';

import { renderConfigJsonSchema } from '../../src/lib/config/json-schema.js';
import { repoRoot } from '../helpers/cli.js';

/**
 * Freezes the public surface: the command list with every flag and argument,
 * and the published config JSON Schema. A breaking change shows up as a diff
 * of test/fixtures/command-surface.json; regenerate deliberately with
 * COMIS_UPDATE_SURFACE=1 npx vitest run test/e2e/surface.test.ts
 */
interface ManifestFlag {
  type: string;
  char?: string;
  options?: string[];
  multiple?: boolean;
  default?: unknown;
}
interface ManifestCommand {
  flags: Record<string, ManifestFlag>;
  args: Record<string, { required?: boolean }>;
}

function surface(): Record<string, unknown> {
  const manifest = JSON.parse(readFileSync(join(repoRoot, 'oclif.manifest.json'), 'utf8')) as { commands: Record<string, ManifestCommand> };
  const out: Record<string, unknown> = {};
  for (const id of Object.keys(manifest.commands).sort()) {
    const cmd = manifest.commands[id]!;
    const flags: Record<string, unknown> = {};
    for (const name of Object.keys(cmd.flags).sort()) {
      const f = cmd.flags[name]!;
      flags[name] = { type: f.type, ...(f.char ? { char: f.char } : {}), ...(f.options ? { options: f.options } : {}), ...(f.multiple ? { multiple: true } : {}) };
    }
    const args = Object.fromEntries(Object.entries(cmd.args).map(([k, a]) => [k, { required: Boolean(a.required) }]));
    out[id.replaceAll(':', ' ')] = { args, flags };
  }
  return out;
}

describe('public surface', () => {
  it('matches the frozen command and flag list', () => {
    const file = join(repoRoot, 'test/fixtures/command-surface.json');
    const current = surface();
    // Only an explicit update writes the fixture: a missing fixture is a failure, never a
    // fixture written from the current surface and then compared with itself.
    if (process.env.COMIS_UPDATE_SURFACE === '1') writeFileSync(file, `${JSON.stringify(current, null, 2)}\n`);
    expect(existsSync(file), `${file} is missing: regenerate it with COMIS_UPDATE_SURFACE=1`).toBe(true);
    expect(current).toEqual(JSON.parse(readFileSync(file, 'utf8')));
  });

  it('every command has --json', () => {
    for (const [id, cmd] of Object.entries(surface())) {
      expect((cmd as { flags: Record<string, unknown> }).flags, id).toHaveProperty('json');
    }
  });

  it('docs/config.schema.json is generated from the zod schema', () => {
    expect(readFileSync(join(repoRoot, 'docs/config.schema.json'), 'utf8')).toBe(renderConfigJsonSchema());
  });
});
