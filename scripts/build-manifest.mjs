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

// `comis --help` to a pipe, exactly as oclif renders it (80 columns, no color), so bin/comis.js can
// print it without loading oclif. Rendered BY oclif, here, from the manifest just written: one
// source of the text. The version line differs per machine and node; it is kept as a placeholder.
const { spawnSync } = await import('node:child_process');
const { mkdirSync } = await import('node:fs');
const helpFile = join(root, 'dist', 'help', 'root.txt');
rmSync(helpFile, { force: true }); // the bin must not answer from a stale copy while we render
const env = { ...process.env };
for (const k of ['OCLIF_COLUMNS', 'FORCE_COLOR', 'NO_COLOR', 'NODE_OPTIONS']) delete env[k];
const rendered = spawnSync(process.execPath, [join(root, 'bin', 'comis.js'), '--help'], { env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
if (rendered.status !== 0) throw new Error(`comis --help failed while rendering: ${rendered.stderr}`);
const userAgent = `${config.name}/${config.version} ${config.platform}-${config.arch} node-${process.version}`;
if (!rendered.stdout.includes(userAgent)) throw new Error('comis --help does not show the user agent where expected');
mkdirSync(dirname(helpFile), { recursive: true });
writeFileSync(helpFile, rendered.stdout.replace(userAgent, '{{userAgent}}'));
process.stdout.write('dist/help/root.txt: rendered\n');
