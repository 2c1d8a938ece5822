/**
 * Fast path of bin/comis.js for `comis skill scan PATHS... [--format F] [--fail-on L] [--json]`:
 * loading oclif costs more than scanning a skill. Only these flags (each at most once, values
 * from the command's option lists) and plain paths are taken; anything else (another flag,
 * `-` for stdin, `--help`, a bad value, no path) returns false and goes through the oclif
 * command, which shares the body (skill-scan-main.ts): same report, warnings, envelope,
 * exit code and logging either way (test/e2e/skill-scan.test.ts compares them).
 */
import { readFileSync } from 'node:fs';

import { comisHome } from '../lib/config/paths.js';
import { ExitCode, internalError } from '../lib/errors.js';
import { redactSecrets } from '../lib/redact/output-guard.js';
import { formatJson, successEnvelope, writeError } from './output.js';

const FORMATS = new Set(['pretty', 'json', 'sarif', 'github']);
const FAIL_ON = new Set(['critical', 'warn', 'never']);

interface Parsed {
  paths: string[];
  format: string | undefined;
  failOn: 'critical' | 'warn' | 'never';
  json: boolean;
}

function parse(args: readonly string[]): Parsed | undefined {
  const out: Parsed = { paths: [], format: undefined, failOn: 'critical', json: false };
  let failOnSeen = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--json') {
      if (out.json) return undefined;
      out.json = true;
    } else if (arg === '--format' || arg === '-f' || arg === '--fail-on') {
      const value = args[++i];
      if (value === undefined) return undefined;
      if (arg === '--fail-on') {
        if (failOnSeen || !FAIL_ON.has(value)) return undefined;
        failOnSeen = true;
        out.failOn = value as Parsed['failOn'];
      } else {
        if (out.format !== undefined || !FORMATS.has(value)) return undefined;
        out.format = value;
      }
    } else if (arg.startsWith('-') || arg === '') return undefined;
    else out.paths.push(arg);
  }
  if (out.paths.length === 0 || (out.json && out.format !== undefined && out.format !== 'json')) return undefined;
  return out;
}

/** Runs the scan when `args` (after `skill scan`) is a fast argument list; false means "use oclif". */
export async function tryFastSkillScan(args: readonly string[]): Promise<boolean> {
  const parsed = parse(args);
  if (!parsed) return false;
  const id = 'skill:scan';
  const startedAt = Date.now();
  const warnings: string[] = [];
  const warn = (message: string): void => {
    const text = redactSecrets(message);
    warnings.push(text);
    if (!parsed.json) process.stderr.write(`Warning: ${text}\n`);
  };
  const { setupColor } = await import('./color.js');
  await setupColor(args);
  const { configureLogging, flagNamesOf, logCommandEnd, logCommandStart } = await import('../lib/obs/logger.js');
  const problem = configureLogging({ home: comisHome(), verbose: false });
  if (problem) warn(problem);
  logCommandStart(id, flagNamesOf(args));
  try {
    const { renderReport, scanReport } = await import('./skill-scan-main.js');
    const report = await scanReport({ paths: parsed.paths, stdin: undefined, failOn: parsed.failOn, maxBytes: 4 * 1024 * 1024 });
    for (const warning of report.warnings) warn(warning);
    const exitStatus = report.summary.failed ? ExitCode.FAILURE : ExitCode.OK;
    if (parsed.json) process.stdout.write(formatJson(successEnvelope(report, exitStatus, warnings)));
    else {
      const root = new URL('../..', import.meta.url);
      const pjson = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as { version: string; homepage?: string };
      process.stdout.write(await renderReport(report, parsed.format ?? 'pretty', { version: pjson.version, homepage: pjson.homepage, root: root.pathname.replace(/\/$/, '') }));
    }
    if (exitStatus !== ExitCode.OK) process.exitCode = exitStatus;
    logCommandEnd(id, { exitCode: exitStatus, durationMs: Date.now() - startedAt });
  } catch (err) {
    const mapped = internalError(err);
    process.exitCode = writeError(mapped, parsed.json);
    logCommandEnd(id, { exitCode: mapped.exitCode, durationMs: Date.now() - startedAt, error: { code: mapped.code, message: mapped.code === 'INTERNAL' ? mapped.message : '' } });
  }
  return true;
}
