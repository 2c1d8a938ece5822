// Pre-generates the SDK that `comis orchestrate` mounts into every jail into dist/sdk/,
// so a run copies four files instead of loading zod to emit them. A test asserts these
// bytes equal what `comis sdk emit` writes.
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
// The emitter reads the hand-written runtimes beside itself at run time (tsc copies no
// .py and compiles the .ts away), so they ship in dist/lib/sdk/runtime/ as source.
const runtimeSrc = join(root, 'src/lib/sdk/runtime');
const runtimeDist = join(root, 'dist/lib/sdk/runtime');
mkdirSync(runtimeDist, { recursive: true });
for (const name of ['comis_tools_runtime.ts', 'comis_tools_declarations.ts', 'comis_tools_runtime.py']) copyFileSync(join(runtimeSrc, name), join(runtimeDist, name));
const { emitSdk, SDK_RUNTIME_FILES } = await import(join(root, 'dist/lib/sdk/emit.js'));
if (SDK_RUNTIME_FILES.length !== 3) throw new Error('build-sdk.mjs copies 3 runtime files; emit.ts lists ' + SDK_RUNTIME_FILES.join(', '));
const out = join(root, 'dist/sdk');
mkdirSync(out, { recursive: true });
for (const [name, content] of emitSdk('all')) writeFileSync(join(out, name), content);
process.stdout.write('dist/sdk written\n');
