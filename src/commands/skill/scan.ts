import { readFileSync } from 'node:fs';

import { Flags } from '@oclif/core';

import { BaseCommand } from '../../cli/base-command.js';
import { ComisError, ExitCode } from '../../lib/errors.js';

export default class SkillScan extends BaseCommand {
  static override summary = 'Lint SKILL.md files (and the files beside them) for hidden and dangerous content.';

  static override description = `Scans the raw text and derived views (comments stripped, Unicode-normalized, tag characters decoded, look-alike letters folded) and reports every finding at its line in the raw file. Validates the frontmatter against the Agent Skills specification (SPEC_* rules).
PATHS are files, directories (searched for SKILL.md and the text files beside it), quoted globs, or - for stdin.
Exit codes: 0 clean, 1 findings at or above --fail-on, 2 usage or I/O error.
--json prints the {status, result, warnings} envelope whose result is the report that --format json prints bare; it cannot be combined with another --format.`;

  static override examples = [
    { description: 'Lint every skill in a repository', command: '<%= config.bin %> <%= command.id %> skills/' },
    { description: 'SARIF for GitHub code scanning', command: '<%= config.bin %> <%= command.id %> skills/ --format sarif > skill-scan.sarif' },
    { description: 'Accept the current findings, with a reason', command: '<%= config.bin %> <%= command.id %> skills/ --write-baseline .skill-scan-baseline.json --reason "reviewed by security"' },
    { description: 'What a platform would put in the prompt', command: '<%= config.bin %> <%= command.id %> skills/pdf/SKILL.md --sanitize' },
  ];

  static override usage = '<%= command.id %> [PATHS...] [FLAGS]';

  static override strict = false;

  static override flags = {
    format: Flags.string({ char: 'f', description: 'Output format (default pretty).', options: ['pretty', 'json', 'sarif', 'github'] }),
    'fail-on': Flags.string({ description: 'Lowest severity that makes the command exit 1.', options: ['critical', 'warn', 'never'], default: 'critical' }),
    baseline: Flags.string({ description: 'Suppress the findings listed in this baseline file (each entry needs a reason).', helpValue: 'FILE' }),
    'write-baseline': Flags.string({ description: 'Write the current findings to FILE as a baseline and exit 0.', helpValue: 'FILE', exclusive: ['sanitize'] }),
    reason: Flags.string({ description: 'Reason recorded for new entries with --write-baseline.', dependsOn: ['write-baseline'] }),
    'inline-suppressions': Flags.boolean({ description: 'Honour `comis-scan-ignore RULE: reason` comments in scanned files (off: the attacker writes the file).', default: false }),
    'ignore-documented': Flags.boolean({
      description: 'Findings whose context marks them as documented examples (`context` in the report) do not fail the run; they are still reported. Off: the attacker writes that framing.',
      default: false,
    }),
    sanitize: Flags.boolean({ description: 'Print the sanitized body (the seed pipeline) instead of scanning.', default: false }),
    'max-bytes': Flags.integer({ description: 'Per-file size cap; larger files are a finding and only the first bytes are scanned.', min: 1024, default: 4 * 1024 * 1024 }),
    root: Flags.string({ description: 'Report paths relative to DIR (default: the enclosing git work tree).', helpValue: 'DIR' }),
  };

  async run(): Promise<unknown> {
    const { flags, argv } = await this.parse(SkillScan);
    const paths = argv as string[];
    if (paths.length === 0) {
      throw new ComisError('USAGE', 'Give at least one path to scan.', { hint: 'e.g. `comis skill scan skills/` or `cat SKILL.md | comis skill scan -`.' });
    }
    if (this.jsonEnabled() && flags.format !== undefined && flags.format !== 'json') {
      throw new ComisError('USAGE', `--json cannot be combined with --format ${flags.format}.`, { hint: '--json is the envelope around the --format json report; drop one of them.' });
    }
    const stdin = paths.includes('-') ? readStdin() : undefined;
    if (flags.sanitize) return this.sanitize(paths, stdin);

    const { scanReport, renderReport } = await import('../../cli/skill-scan-main.js');
    const failOn = flags['fail-on'] as 'critical' | 'warn' | 'never';
    const report = await scanReport({
      paths,
      stdin,
      root: flags.root,
      maxBytes: flags['max-bytes'],
      failOn,
      baseline: flags.baseline,
      inlineSuppressions: flags['inline-suppressions'],
      ignoreDocumented: flags['ignore-documented'],
    });
    for (const warning of report.warnings) this.addWarning(warning);

    if (flags['write-baseline']) {
      const { writeBaseline } = await import('../../lib/skills/baseline.js');
      const entries = report.files.flatMap((f) => [...f.findings, ...f.suppressed].map((x) => ({ fingerprint: x.fingerprint, ruleId: x.ruleId, path: f.path })));
      const written = writeBaseline(flags['write-baseline'], entries, flags.reason ?? '');
      const missing = written.suppressions.filter((e) => e.reason.trim() === '').length;
      if (missing > 0) this.addWarning(`${missing} baseline entries have no reason yet: fill in each "reason" before using the file (entries without one are refused).`);
      if (!this.jsonEnabled()) process.stderr.write(`Wrote ${written.suppressions.length} entries to ${flags['write-baseline']}.\n`);
      return { baseline: flags['write-baseline'], entries: written.suppressions.length, withoutReason: missing };
    }

    if (report.summary.failed) this.setExitStatus(ExitCode.FAILURE);
    if (!this.jsonEnabled()) {
      const homepage = (this.config.pjson as { homepage?: string }).homepage;
      process.stdout.write(await renderReport(report, flags.format ?? 'pretty', { version: this.config.version, homepage, root: this.config.root }));
    }
    return report;
  }

  private async sanitize(paths: string[], stdin: string | undefined): Promise<unknown> {
    const { sanitizeSkillBody } = await import('../../lib/skills/sanitize.js');
    const { skillBody } = await import('../../lib/skills/frontmatter.js');
    const { listSkillFiles } = await import('../../lib/skills/scan-paths.js');
    const inputs: { path: string; content: string }[] = [];
    if (stdin !== undefined) inputs.push({ path: '<stdin>', content: stdin });
    for (const file of listSkillFiles(paths, process.cwd())) {
      try {
        inputs.push({ path: file, content: readFileSync(file, 'utf8') });
      } catch (err) {
        throw new ComisError('IO_ERROR', `Cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
      }
    }
    const results = inputs.map(({ path, content }) => ({ path, ...sanitizeSkillBody(skillBody(content)) }));
    if (!this.jsonEnabled()) {
      for (const r of results) {
        if (results.length > 1) process.stdout.write(`==> ${r.path} <==\n`);
        process.stdout.write(r.body.endsWith('\n') ? r.body : `${r.body}\n`);
        process.stderr.write(`${r.path}: ${r.htmlCommentsStripped} HTML comments stripped, truncated: ${r.truncated}, tag block detected: ${r.tagBlockDetected}\n`);
      }
    }
    return { files: results };
  }
}

function readStdin(): string {
  if (process.stdin.isTTY) throw new ComisError('USAGE', '`-` reads a SKILL.md from stdin, but stdin is a terminal.', { hint: 'Pipe a file in: `cat SKILL.md | comis skill scan -`.' });
  try {
    return readFileSync(0, 'utf8');
  } catch (err) {
    throw new ComisError('IO_ERROR', `Cannot read stdin: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
}
