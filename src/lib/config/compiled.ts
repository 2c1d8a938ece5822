/**
 * The compiled config: what the YAML parser and the zod schema made of one
 * exact config text, kept under `$COMIS_HOME/cache` so the next invocation
 * with the same file skips both (~100 ms of module loading and validation).
 *
 * An entry is used only when everything its verdict depends on is the same:
 * the SHA-256 of the config text (so any edit revalidates), the path it was
 * read from, the comis version and the identity (inode, size, mtime) of the
 * compiled validator modules (so an upgrade or rebuild revalidates). The
 * validated JSON carries its own SHA-256: a truncated, edited or otherwise
 * corrupt entry is ignored and rebuilt, never trusted. Only valid configs
 * are cached; an invalid file is parsed (and reported) every time.
 *
 * The cache is as private as the config itself (0600 in a 0700 directory),
 * and whoever could write it could write config.yaml too.
 */
import { createHash } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { comisVersion } from '../version.js';
import type { ComisConfig } from './schema.js';
import { readPrivateFile, writePrivateFileAtomic } from '../private-file.js';

const ENTRY_VERSION = 1;

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/** Where the compiled form of `file` is kept (one entry per config path). */
export function compiledConfigPath(home: string, file: string): string {
  return join(home, 'cache', `config-${sha256(file).slice(0, 16)}.json`);
}

/** What an entry is compared against; tests override one at a time. */
export interface CompiledContext {
  comisVersion: string;
  /** Identity of the validator modules (see {@link validatorBuildId}). */
  build: string;
}

/**
 * The modules whose code decides what a config text means: the loader (with
 * its refusal table), the schema and the defaults. dist/ holds .js; tests
 * run the .ts sources.
 */
function validatorBuildId(): string {
  return ['load', 'schema', 'defaults']
    .map((name) => {
      const js = fileURLToPath(new URL(`./${name}.js`, import.meta.url));
      const path = existsSync(js) ? js : fileURLToPath(new URL(`./${name}.ts`, import.meta.url));
      try {
        const st = statSync(path);
        return `${name}:${st.ino}:${st.size}:${st.mtimeMs}`;
      } catch {
        return `${name}:?`;
      }
    })
    .join(',');
}

function currentContext(over: Partial<CompiledContext>): CompiledContext {
  return { comisVersion: over.comisVersion ?? comisVersion(), build: over.build ?? validatorBuildId() };
}

interface Entry {
  v: number;
  comis: string;
  build: string;
  file: string;
  sourceSha256: string;
  configSha256: string;
  config: string;
}

/** The validated config for exactly this text, or undefined (miss, stale, corrupt: the caller validates). */
export function readCompiledConfig(cacheFile: string, file: string, text: string, over: Partial<CompiledContext> = {}): ComisConfig | undefined {
  let entry: Entry;
  try {
    entry = JSON.parse(readPrivateFile(cacheFile)) as Entry;
  } catch {
    return undefined;
  }
  if (entry === null || typeof entry !== 'object' || entry.v !== ENTRY_VERSION || typeof entry.config !== 'string') return undefined;
  const ctx = currentContext(over);
  if (entry.comis !== ctx.comisVersion || entry.build !== ctx.build || entry.file !== file) return undefined;
  if (entry.sourceSha256 !== sha256(text) || entry.configSha256 !== sha256(entry.config)) return undefined;
  try {
    const config = JSON.parse(entry.config) as unknown;
    if (config === null || typeof config !== 'object' || Array.isArray(config)) return undefined;
    const agents = (config as { agents?: unknown }).agents;
    if (agents === null || typeof agents !== 'object' || Array.isArray(agents) || Object.keys(agents).length === 0) return undefined;
    return config as ComisConfig;
  } catch {
    return undefined;
  }
}

/** Stores the validated config of this text; a cache that cannot be written only costs the next run a validation. */
export function writeCompiledConfig(cacheFile: string, file: string, text: string, config: ComisConfig, over: Partial<CompiledContext> = {}): void {
  const ctx = currentContext(over);
  const json = JSON.stringify(config);
  const entry: Entry = { v: ENTRY_VERSION, comis: ctx.comisVersion, build: ctx.build, file, sourceSha256: sha256(text), configSha256: sha256(json), config: json };
  try {
    writePrivateFileAtomic(cacheFile, JSON.stringify(entry));
  } catch {
    /* best effort */
  }
}
