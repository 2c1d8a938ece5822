/**
 * Turns the user's script into what the jail runs. TypeScript is transpiled
 * outside the jail (Node 20 cannot strip types) with esbuild to ESM, keeping
 * line numbers via an inline source map. JavaScript follows Node's own module
 * rules: `.mjs` is ESM, `.cjs` CommonJS, and `.js` is detected from its syntax
 * (Node 22's default; `--experimental-detect-module` on Node 20).
 */
import { createHash } from 'node:crypto';
import { readdirSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

import { ComisError } from '../errors.js';
import { readPrivateFile, writePrivateFileAtomic } from '../private-file.js';
import { comisVersion } from '../version.js';

export type ScriptLanguage = 'ts' | 'js' | 'py';

export interface PreparedScript {
  language: ScriptLanguage;
  /** File name inside the run directory. */
  fileName: string;
  code: string;
  /** Extra node flags for this script. */
  nodeFlags: string[];
  /**
   * Python only: the script uses `comis_tools` without importing it, so the interpreter starts
   * from {@link pythonImplicitSdkBoot}, which puts the SDK in builtins and runs the script.
   */
  implicitSdk?: boolean;
}

/**
 * The seed's examples are often fragments that use `comis_tools` without the import line (its
 * "may import"). A script that names `comis_tools`, never imports or declares it, gets it as if
 * it had: JS/TS by the import statement prefixed to its first code line (same line, so line
 * numbers hold), Python by a bootstrap that binds the SDK module in builtins (a script's own
 * `comis_tools` name still shadows it).
 */
const IMPLICIT_IMPORT = 'import { comis_tools } from "./comis_tools.js"; ';

function jsNeedsSdk(source: string): boolean {
  if (!/\bcomis_tools\b/.test(source)) return false;
  // Imported, required or declared by the script itself: nothing to add.
  if (/['"`]\.\/comis_tools(?:\.[cm]?[jt]s)?['"`]/.test(source)) return false;
  if (/\b(?:const|let|var|function|class)\s+comis_tools\b|\bimport\s*\{[^}]*\bcomis_tools\b/.test(source)) return false;
  // CommonJS cannot take an import statement.
  return !/\brequire\s*\(|\bmodule\.exports\b|^\s*exports\./m.test(source);
}

/** The source with the SDK import prefixed to its first line (after a `#!` line). */
function withImplicitImport(source: string): string {
  if (!source.startsWith('#!')) return IMPLICIT_IMPORT + source;
  const nl = source.indexOf('\n');
  return nl < 0 ? `${source}\n${IMPLICIT_IMPORT}` : source.slice(0, nl + 1) + IMPLICIT_IMPORT + source.slice(nl + 1);
}

function pythonNeedsSdk(source: string): boolean {
  if (!/\bcomis_tools\b/.test(source)) return false;
  return !/^[ \t]*(?:import[ \t]+(?:[\w.]+[ \t]*(?:as[ \t]+\w+)?[ \t]*,[ \t]*)*comis_tools\b|from[ \t]+comis_tools[ \t]+import\b)/m.test(source);
}

/**
 * `python3 -c` program for a script that uses the SDK without importing it: the run directory
 * first on the path (as when the script runs directly), the SDK bound in builtins, then the
 * script itself as `__main__`, compiled under its own name so tracebacks point into it.
 */
export function pythonImplicitSdkBoot(runDir: string, fileName: string): string {
  const script = JSON.stringify(`${runDir}/${fileName}`);
  return [
    'import builtins, sys',
    `sys.path[0] = ${JSON.stringify(runDir)}`,
    `sys.argv = [${script}]`,
    'import comis_tools',
    'builtins.comis_tools = comis_tools',
    'del comis_tools',
    "exec(compile(open(sys.argv[0], 'rb').read(), sys.argv[0], 'exec'), {'__name__': '__main__', '__file__': sys.argv[0], '__builtins__': builtins})",
  ].join('\n');
}

export function languageFromPath(path: string): ScriptLanguage | undefined {
  if (/\.(ts|mts|cts)$/i.test(path)) return 'ts';
  if (/\.(js|mjs|cjs)$/i.test(path)) return 'js';
  if (/\.py$/i.test(path)) return 'py';
  return undefined;
}

function nodeSupportsDefaultDetection(): boolean {
  const [major, minor] = process.versions.node.split('.').map(Number) as [number, number];
  return major > 22 || (major === 22 && minor >= 7);
}

/** Most transpiled scripts kept in the cache: past it, the least recently written go first. */
export const TRANSPILE_CACHE_MAX = 256;
const TRANSPILE_PREFIX = 'ts-';

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/** This esbuild's identity (its entry file's inode, size and mtime): a reinstall or upgrade transpiles afresh. */
function esbuildId(): string {
  try {
    const st = statSync(createRequire(import.meta.url).resolve('esbuild'));
    return `${st.ino}:${st.size}:${st.mtimeMs}`;
  } catch {
    return '-';
  }
}

interface TranspileEntry {
  key: string;
  sha256: string;
  code: string;
}

function cachedTranspile(file: string, key: string): string | undefined {
  try {
    const entry = JSON.parse(readPrivateFile(file)) as TranspileEntry;
    if (entry.key === key && typeof entry.code === 'string' && entry.sha256 === sha256(entry.code)) return entry.code;
  } catch {
    /* a miss, or an entry not worth trusting: transpile afresh */
  }
  return undefined;
}

/** Keeps the cache under {@link TRANSPILE_CACHE_MAX} entries (oldest first out). Best effort. */
function pruneTranspileCache(dir: string): void {
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => n.startsWith(TRANSPILE_PREFIX) && n.endsWith('.json'));
  } catch {
    return;
  }
  if (names.length <= TRANSPILE_CACHE_MAX) return;
  const aged = names.map((n) => {
    try {
      return { n, t: statSync(join(dir, n)).mtimeMs };
    } catch {
      return { n, t: 0 };
    }
  });
  aged.sort((a, b) => a.t - b.t);
  for (const { n } of aged.slice(0, aged.length - TRANSPILE_CACHE_MAX)) rmSync(join(dir, n), { force: true });
}

/**
 * The script as the jail runs it. TypeScript is transpiled by esbuild, whose
 * import and service process cost more than the jail's own start; with
 * `cacheDir` (`$COMIS_HOME/cache`) the output is kept there, keyed by the
 * source, its name, the implicit-import decision, comis's version and
 * esbuild's identity, and carries its SHA-256: a run of the same script
 * after that loads no esbuild at all, and a corrupt or foreign entry is
 * transpiled afresh, never run. At most {@link TRANSPILE_CACHE_MAX} entries.
 */
export async function prepareScript(source: string, language: ScriptLanguage, displayName: string, options: { cacheDir?: string } = {}): Promise<PreparedScript> {
  if (language === 'py') return { language, fileName: 'script.py', code: source, nodeFlags: [], ...(pythonNeedsSdk(source) ? { implicitSdk: true } : {}) };
  if (language === 'js') {
    const ext = /\.cjs$/i.test(displayName) ? 'cjs' : /\.mjs$/i.test(displayName) ? 'mjs' : 'js';
    const flags = ext === 'js' && !nodeSupportsDefaultDetection() ? ['--experimental-detect-module'] : [];
    return { language, fileName: `script.${ext}`, code: ext !== 'cjs' && jsNeedsSdk(source) ? withImplicitImport(source) : source, nodeFlags: flags };
  }
  const isCts = /\.cts$/i.test(displayName);
  const input = !isCts && jsNeedsSdk(source) ? withImplicitImport(source) : source;
  const prepared = (code: string): PreparedScript => ({ language, fileName: isCts ? 'script.cjs' : 'script.mjs', code, nodeFlags: ['--enable-source-maps'] });
  const key = options.cacheDir ? sha256(JSON.stringify({ v: 1, comis: comisVersion(), esbuild: esbuildId(), isCts, displayName, input })) : '';
  const cacheFile = options.cacheDir ? join(options.cacheDir, `${TRANSPILE_PREFIX}${key.slice(0, 32)}.json`) : undefined;
  const hit = cacheFile ? cachedTranspile(cacheFile, key) : undefined;
  if (hit !== undefined) return prepared(hit);
  const esbuild = await import('esbuild');
  try {
    const out = await esbuild.transform(input, {
      loader: 'ts',
      format: isCts ? 'cjs' : 'esm',
      target: 'node20',
      sourcemap: 'inline',
      sourcefile: displayName,
      logLevel: 'silent',
    });
    if (cacheFile) {
      try {
        writePrivateFileAtomic(cacheFile, JSON.stringify({ key, sha256: sha256(out.code), code: out.code } satisfies TranspileEntry));
        pruneTranspileCache(options.cacheDir!);
      } catch {
        /* best effort: the next run transpiles again */
      }
    }
    return prepared(out.code);
  } catch (err) {
    const errors = (err as { errors?: { text: string; location?: { line: number; column: number; lineText: string } | null }[] }).errors ?? [];
    const lines = errors.slice(0, 5).map((e) => (e.location ? `${displayName}:${e.location.line}:${e.location.column + 1}: ${e.text}\n    ${e.location.lineText}` : `${displayName}: ${e.text}`));
    throw new ComisError('INPUT_INVALID', `The TypeScript script does not parse:\n${lines.join('\n')}`, {
      hint: 'Fix the syntax error above; nothing was run.',
    });
  }
}
