/**
 * Baselines: known findings suppressed by fingerprint, each with a required
 * reason. A fingerprint hashes the rule, the file path, the matched text
 * (whitespace-collapsed) and its occurrence index, not the line number, so it
 * survives edits elsewhere in the file.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';

import { ComisError } from '../errors.js';

export interface BaselineEntry {
  fingerprint: string;
  ruleId: string;
  path: string;
  /** Why this finding is accepted. Required: an entry without one is refused. */
  reason: string;
}

export interface Baseline {
  version: 1;
  suppressions: BaselineEntry[];
}

/**
 * node:crypto, loaded on the first fingerprint: loading it costs more than scanning a clean
 * SKILL.md (`comis skill scan` of a file without findings never needs it; bench/README.md scans20).
 */
let crypto: typeof import('node:crypto') | undefined;

export function findingFingerprint(ruleId: string, path: string, matched: string, occurrence: number): string {
  const normalized = matched.replace(/\s+/g, ' ').trim().slice(0, 500);
  crypto ??= createRequire(import.meta.url)('node:crypto') as typeof import('node:crypto');
  return crypto.createHash('sha256').update(`${ruleId}\0${path}\0${normalized}\0${occurrence}`).digest('hex').slice(0, 32);
}

/**
 * Reads and validates a baseline file. Throws ComisError IO_ERROR when it
 * cannot be read and INPUT_INVALID when it is malformed or an entry lacks a
 * reason (the message names the entry).
 */
export function loadBaseline(file: string): Baseline {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ComisError('IO_ERROR', `Cannot read baseline ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, {
      hint: 'Create one with `comis skill scan PATHS --write-baseline FILE --reason "..."`.',
    });
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (err) {
    throw new ComisError('INPUT_INVALID', `Baseline ${file} is not valid JSON: ${(err as Error).message}`);
  }
  const obj = data as { version?: unknown; suppressions?: unknown };
  if (!obj || typeof obj !== 'object' || obj.version !== 1 || !Array.isArray(obj.suppressions)) {
    throw new ComisError('INPUT_INVALID', `Baseline ${file} must be {"version": 1, "suppressions": [...]}`);
  }
  const suppressions: BaselineEntry[] = [];
  obj.suppressions.forEach((raw: unknown, index: number) => {
    const entry = raw as Partial<BaselineEntry> | null;
    const where = `Baseline ${file}, suppressions[${index}]`;
    if (!entry || typeof entry !== 'object' || typeof entry.fingerprint !== 'string' || !/^[0-9a-f]{16,64}$/.test(entry.fingerprint)) {
      throw new ComisError('INPUT_INVALID', `${where}: "fingerprint" must be a hex string`);
    }
    if (typeof entry.reason !== 'string' || entry.reason.trim() === '') {
      throw new ComisError('INPUT_INVALID', `${where} (${entry.ruleId ?? 'rule?'} in ${entry.path ?? 'file?'}): "reason" is required`, {
        hint: 'Say why the finding is accepted; a suppression without a reason is refused.',
      });
    }
    suppressions.push({ fingerprint: entry.fingerprint, ruleId: String(entry.ruleId ?? ''), path: String(entry.path ?? ''), reason: entry.reason.trim() });
  });
  return { version: 1, suppressions };
}

/**
 * Writes the findings as a baseline. Reasons already present in an existing
 * file at the same path are kept; new entries get `reason` (which may be
 * empty: loading such a file is refused until someone fills it in).
 */
export function writeBaseline(file: string, findings: readonly { fingerprint: string; ruleId: string; path: string }[], reason: string): Baseline {
  const previous = new Map<string, string>();
  if (existsSync(file)) {
    try {
      const old = JSON.parse(readFileSync(file, 'utf8')) as Baseline;
      for (const e of old.suppressions ?? []) if (e && typeof e.reason === 'string' && e.reason.trim()) previous.set(e.fingerprint, e.reason);
    } catch {
      // An unreadable old baseline is replaced; its reasons cannot be recovered anyway.
    }
  }
  const seen = new Set<string>();
  const suppressions: BaselineEntry[] = [];
  for (const f of findings) {
    if (seen.has(f.fingerprint)) continue;
    seen.add(f.fingerprint);
    suppressions.push({ fingerprint: f.fingerprint, ruleId: f.ruleId, path: f.path, reason: previous.get(f.fingerprint) ?? reason });
  }
  suppressions.sort((a, b) => a.path.localeCompare(b.path) || a.ruleId.localeCompare(b.ruleId) || a.fingerprint.localeCompare(b.fingerprint));
  const baseline: Baseline = { version: 1, suppressions };
  try {
    writeFileSync(file, `${JSON.stringify(baseline, null, 2)}\n`);
  } catch (err) {
    throw new ComisError('IO_ERROR', `Cannot write baseline ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  return baseline;
}
