/**
 * Turns the user's script into what the jail runs. TypeScript is transpiled
 * outside the jail (Node 20 cannot strip types) with esbuild to ESM, keeping
 * line numbers via an inline source map. JavaScript follows Node's own module
 * rules: `.mjs` is ESM, `.cjs` CommonJS, and `.js` is detected from its syntax
 * (Node 22's default; `--experimental-detect-module` on Node 20).
 */
import { ComisError } from '../errors.js';

export type ScriptLanguage = 'ts' | 'js' | 'py';

export interface PreparedScript {
  language: ScriptLanguage;
  /** File name inside the run directory. */
  fileName: string;
  code: string;
  /** Extra node flags for this script. */
  nodeFlags: string[];
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

export async function prepareScript(source: string, language: ScriptLanguage, displayName: string): Promise<PreparedScript> {
  if (language === 'py') return { language, fileName: 'script.py', code: source, nodeFlags: [] };
  if (language === 'js') {
    const ext = /\.cjs$/i.test(displayName) ? 'cjs' : /\.mjs$/i.test(displayName) ? 'mjs' : 'js';
    const flags = ext === 'js' && !nodeSupportsDefaultDetection() ? ['--experimental-detect-module'] : [];
    return { language, fileName: `script.${ext}`, code: source, nodeFlags: flags };
  }
  const esbuild = await import('esbuild');
  const isCts = /\.cts$/i.test(displayName);
  try {
    const out = await esbuild.transform(source, {
      loader: 'ts',
      format: isCts ? 'cjs' : 'esm',
      target: 'node20',
      sourcemap: 'inline',
      sourcefile: displayName,
      logLevel: 'silent',
    });
    return { language, fileName: isCts ? 'script.cjs' : 'script.mjs', code: out.code, nodeFlags: ['--enable-source-maps'] };
  } catch (err) {
    const errors = (err as { errors?: { text: string; location?: { line: number; column: number; lineText: string } | null }[] }).errors ?? [];
    const lines = errors.slice(0, 5).map((e) => (e.location ? `${displayName}:${e.location.line}:${e.location.column + 1}: ${e.text}\n    ${e.location.lineText}` : `${displayName}: ${e.text}`));
    throw new ComisError('INPUT_INVALID', `The TypeScript script does not parse:\n${lines.join('\n')}`, {
      hint: 'Fix the syntax error above; nothing was run.',
    });
  }
}
