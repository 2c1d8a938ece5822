/**
 * Where a worker thread's program is: the compiled module next to its caller
 * in dist/, or, when comis runs from its TypeScript sources (the tests), that
 * module's source bundled with what it imports into one CommonJS text for
 * `new Worker(text, { eval: true })`. Resolved once per program.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export interface WorkerSource {
  source: string | URL;
  eval: boolean;
}

/** The program `name` (e.g. `./grep-worker`) beside the module at `base` (its import.meta.url). */
export function workerSource(name: string, base: string): () => Promise<WorkerSource> {
  let found: Promise<WorkerSource> | undefined;
  return () =>
    (found ??= (async () => {
      const compiled = new URL(`${name}.js`, base);
      if (existsSync(fileURLToPath(compiled))) return { source: compiled, eval: false };
      const esbuild = await import('esbuild');
      const out = await esbuild.build({
        entryPoints: [fileURLToPath(new URL(`${name}.ts`, base))],
        bundle: true,
        platform: 'node',
        format: 'cjs',
        target: 'node20',
        write: false,
        logLevel: 'silent',
      });
      return { source: out.outputFiles[0]!.text, eval: true };
    })().catch((err: unknown) => {
      found = undefined;
      throw err;
    }));
}
