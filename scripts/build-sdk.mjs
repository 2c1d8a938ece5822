// Pre-generates the SDK that `comis orchestrate` mounts into every jail into dist/sdk/,
// so a run copies four files instead of loading zod to emit them. A test asserts these
// bytes equal what `comis sdk emit` writes.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const { emitSdk } = await import(join(root, 'dist/lib/sdk/emit.js'));
const out = join(root, 'dist/sdk');
mkdirSync(out, { recursive: true });
for (const [name, content] of emitSdk('all')) writeFileSync(join(out, name), content);
process.stdout.write('dist/sdk written\n');
