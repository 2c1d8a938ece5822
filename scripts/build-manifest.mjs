// Regenerates oclif.manifest.json from the built commands in dist/, so that
// `comis --help` and command lookup never load command code.
import { rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Config } from '@oclif/core';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const manifestPath = join(root, 'oclif.manifest.json');
rmSync(manifestPath, { force: true });
const config = await Config.load({ root });
const plugin = config.getPluginsList().find((p) => p.root === root);
if (!plugin) throw new Error('root plugin not found');
const manifest = { ...plugin.manifest, commands: Object.fromEntries(Object.entries(plugin.manifest.commands).sort(([a], [b]) => a.localeCompare(b))) };
writeFileSync(manifestPath, JSON.stringify(manifest, null, 2) + '\n');
process.stdout.write(`oclif.manifest.json: ${Object.keys(manifest.commands).length} commands\n`);
