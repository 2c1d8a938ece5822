/**
 * SARIF 2.1.0 for GitHub code scanning: one run, every rule of the table with
 * id/shortDescription/fullDescription/help and a `security-severity`, every
 * result located relative to the repository root (`%SRCROOT%`), with a
 * region in UTF-16 columns and `partialFingerprints` (the baseline
 * fingerprint). Baseline and inline suppressions become SARIF suppressions.
 */
import { isAbsolute, relative } from 'node:path';
import { pathToFileURL } from 'node:url';

import { RULES } from './rules.js';
import type { ReportFinding, ScanReport, SuppressedFinding } from './scan-paths.js';
import type { ScanSeverity } from './types.js';

/** GitHub: "critical" is > 9.0 (9.0 itself is "high"), "medium" 4.0-6.9. */
const SECURITY_SEVERITY: Record<ScanSeverity, string> = { CRITICAL: '9.5', WARN: '5.0' };
/** GitHub code scanning accepts at most 25,000 results per run; more are cut with a notification. */
export const MAX_SARIF_RESULTS = 25_000;

const LEVEL: Record<ScanSeverity, 'error' | 'warning'> = { CRITICAL: 'error', WARN: 'warning' };

export interface SarifOptions {
  toolVersion: string;
  informationUri?: string;
  /** Default {@link MAX_SARIF_RESULTS}. */
  maxResults?: number;
}

function encodeUri(path: string): string {
  return path.split('/').map(encodeURIComponent).join('/');
}

/** Builds the SARIF log object (serialize with JSON.stringify). */
export function toSarif(report: ScanReport, options: SarifOptions): Record<string, unknown> {
  const rules = RULES.map((rule) => ({
    id: rule.id,
    name: rule.id
      .toLowerCase()
      .split('_')
      .map((w, i) => (i === 0 ? w : w[0]!.toUpperCase() + w.slice(1)))
      .join(''),
    shortDescription: { text: rule.description },
    fullDescription: { text: `${rule.description}. ${rule.help}` },
    help: { text: rule.help, markdown: `**${rule.id}** (${rule.category}, ${rule.severity})\n\n${rule.help}` },
    defaultConfiguration: { level: LEVEL[rule.severity] },
    properties: {
      tags: rule.category === 'frontmatter_spec' ? ['skill', 'specification'] : ['security', 'skill', rule.category],
      precision: rule.severity === 'CRITICAL' ? 'high' : 'medium',
      ...(rule.category === 'frontmatter_spec' ? {} : { 'security-severity': SECURITY_SEVERITY[rule.severity] }),
    },
  }));
  const ruleIndex = new Map(RULES.map((r, i) => [r.id, i]));
  const toResult = (path: string, finding: ReportFinding | SuppressedFinding): Record<string, unknown> => {
    const external = path === '<stdin>';
    const result: Record<string, unknown> = {
      ruleId: finding.ruleId,
      ruleIndex: ruleIndex.get(finding.ruleId),
      level: LEVEL[finding.severity],
      message: { text: `${finding.message}${finding.matchedText ? ` — matched: ${finding.matchedText}` : ''}` },
      locations: [
        {
          physicalLocation: {
            // A file outside the root (the report shows it absolute) is a relative reference too (`../x`), so the
            // log stays portable and GitHub resolves it against the checkout instead of a runner's file:///.
            artifactLocation: external ? { uri: 'stdin' } : { uri: encodeUri(isAbsolute(path) ? relative(report.root, path).split('\\').join('/') : path), uriBaseId: '%SRCROOT%' },
            region: {
              startLine: finding.lineNumber,
              startColumn: finding.column,
              endLine: finding.endLineNumber,
              endColumn: Math.max(finding.endColumn, finding.endLineNumber === finding.lineNumber ? finding.column + 1 : 1),
              charOffset: finding.position,
              charLength: Math.max(0, finding.endPosition - finding.position),
              ...(finding.excerpt.text ? { snippet: { text: finding.excerpt.text } } : {}),
            },
          },
        },
      ],
      partialFingerprints: { 'comisFinding/v1': finding.fingerprint },
      properties: {
        severity: finding.severity,
        'security-severity': SECURITY_SEVERITY[finding.severity],
        category: finding.category,
        class: finding.class,
        view: finding.view,
        region: finding.region,
        documented: finding.documented,
      },
    };
    if ('suppression' in finding) {
      result.suppressions = [{ kind: finding.suppression.kind === 'baseline' ? 'external' : 'inSource', justification: finding.suppression.reason }];
    }
    return result;
  };
  const all = report.files.flatMap((file) => [...file.findings.map((f) => toResult(file.path, f)), ...file.suppressed.map((f) => toResult(file.path, f))]);
  // One alert per finding: GitHub merges results with equal fingerprints, so a repeated one gets a suffix.
  const seen = new Map<string, number>();
  for (const result of all) {
    const fingerprints = result.partialFingerprints as Record<string, string>;
    const key = `${fingerprints['comisFinding/v1']}`;
    const n = seen.get(key) ?? 0;
    seen.set(key, n + 1);
    if (n > 0) fingerprints['comisFinding/v1'] = `${key}:${n}`;
  }
  const max = options.maxResults ?? MAX_SARIF_RESULTS;
  const results = all.slice(0, max);
  const notifications =
    all.length > max
      ? [{ level: 'warning', message: { text: `${all.length} results, ${all.length - max} not included: GitHub code scanning accepts at most ${max} per run. Use --format json for all of them.` }, descriptor: { id: 'results-truncated' } }]
      : [];
  return {
    $schema: 'https://json.schemastore.org/sarif-2.1.0.json',
    version: '2.1.0',
    runs: [
      {
        tool: {
          driver: {
            name: 'comis skill scan',
            semanticVersion: options.toolVersion,
            version: options.toolVersion,
            ...(options.informationUri ? { informationUri: options.informationUri } : {}),
            rules,
          },
        },
        originalUriBaseIds: { '%SRCROOT%': { uri: pathToFileURL(report.root.endsWith('/') ? report.root : `${report.root}/`).href } },
        columnKind: 'utf16CodeUnits',
        results,
        invocations: [{ executionSuccessful: true, toolExecutionNotifications: notifications }],
      },
    ],
  };
}
