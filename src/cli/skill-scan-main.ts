/**
 * The body of `comis skill scan` (without --sanitize and --write-baseline), shared by the
 * oclif command and bin/comis.js's fast path (fast-skill-scan.ts), so both print the
 * same report, warnings and exit status.
 */
import { statSync } from 'node:fs';

import type { FailOn, ScanReport } from '../lib/skills/scan-paths.js';

export interface SkillScanInputs {
  paths: string[];
  stdin: string | undefined;
  root?: string;
  maxBytes?: number;
  failOn: FailOn;
  baseline?: string;
  inlineSuppressions?: boolean;
  ignoreDocumented?: boolean;
}

/** Below this many bytes in all, named files are scanned with unoptimized regex code (see scanReport). */
const SMALL_SCAN_BYTES = 256 * 1024;

/** True when every path names a regular file and together they are under SMALL_SCAN_BYTES. */
function fewSmallFiles(paths: readonly string[]): boolean {
  let total = 0;
  for (const path of paths) {
    if (path === '-') return false;
    try {
      const stat = statSync(path);
      if (!stat.isFile()) return false;
      total += stat.size;
    } catch {
      return false;
    }
  }
  return paths.length > 0 && total < SMALL_SCAN_BYTES;
}

export async function scanReport(inputs: SkillScanInputs): Promise<ScanReport> {
  // This process only scans: compiling each rule's regex once to machine code costs less than
  // V8's default of interpreting it first and compiling it again once it is hot (about 3x on one file).
  // For a few small files, compiling it without V8's regex optimization passes costs less again
  // (most of the scan of one SKILL.md is compiling regexes); for more text the optimized code pays.
  // So does TurboFan: a scan of one SKILL.md queues optimizing compiles of its hot functions on
  // V8's worker threads that finish only after the report is out, and node waits for them before
  // it exits (5-8 ms of a 45 ms run); without them the scan itself takes as long.
  // Tiering up after 0 runs (not --no-regexp-tier-up): a regex that node ran once before this
  // point, interpreted, would then be run as if it had machine code, and V8 crashes (SIGSEGV).
  // The fast path's code cache is written with these set back (skill-scan-bundle.ts).
  const v8 = await import('node:v8');
  v8.setFlagsFromString('--regexp-tier-up-ticks=0');
  if (fewSmallFiles(inputs.paths)) {
    v8.setFlagsFromString('--no-regexp-optimization');
    v8.setFlagsFromString('--no-opt');
  }
  const { scanSkillPaths } = await import('../lib/skills/scan-paths.js');
  const baseline = inputs.baseline ? (await import('../lib/skills/baseline.js')).loadBaseline(inputs.baseline) : undefined;
  return scanSkillPaths({
    paths: inputs.paths,
    stdin: inputs.stdin,
    cwd: process.cwd(),
    root: inputs.root,
    maxBytes: inputs.maxBytes,
    failOn: inputs.failOn,
    baseline,
    inlineSuppressions: inputs.inlineSuppressions ?? false,
    ignoreDocumented: inputs.ignoreDocumented ?? false,
  });
}

/** What the package says about itself, for SARIF's tool section. */
export interface ToolInfo {
  version: string;
  homepage: string | undefined;
  /** The package root (docs/ ships with it). */
  root: string;
}

export async function renderReport(report: ScanReport, format: string, tool: ToolInfo): Promise<string> {
  if (format === 'json') return `${JSON.stringify(report, null, 2)}\n`;
  if (format === 'sarif') {
    const { toSarif } = await import('../lib/skills/report-sarif.js');
    // The package's homepage when it has one, else the rule reference shipped with it (docs/ is in the package).
    const { pathToFileURL } = await import('node:url');
    const informationUri = tool.homepage ?? pathToFileURL(`${tool.root}/docs/commands/skill-scan.md`).href;
    return `${JSON.stringify(toSarif(report, { toolVersion: tool.version, informationUri }), null, 2)}\n`;
  }
  const { renderGithub, renderPretty } = await import('../lib/skills/report-text.js');
  const { outStyle } = await import('./color.js');
  return format === 'github' ? renderGithub(report) : renderPretty(report, outStyle());
}
