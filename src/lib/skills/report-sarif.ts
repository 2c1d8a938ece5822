/**
 * SARIF 2.1.0 for GitHub code scanning: one run, every rule of the table with
 * id/shortDescription/fullDescription/help and a `security-severity`, every
 * result located relative to the repository root (`%SRCROOT%`), with a
 * region in UTF-16 columns and `partialFingerprints` (the baseline
 * fingerprint). Baseline and inline suppressions become SARIF suppressions.
 */
import { pathToFileURL } from 'node:url';

import { RULES } from './rules.js';
import type { ReportFinding, ScanReport, SuppressedFinding } from './scan-paths.js';
import type { ScanSeverity } from './types.js';

const SECURITY_SEVERITY: Record<ScanSeverity, string> = { CRITICAL: '9.0', WARN: '5.0' };
const LEVEL: Record<ScanSeverity, 'error' | 'warning'> = { CRITICAL: 'error', WARN: 'warning' };

export interface SarifOptions {
  toolVersion: string;
  informationUri?: string;
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
            artifactLocation: external ? { uri: 'stdin' } : path.startsWith('/') ? { uri: pathToFileURL(path).href } : { uri: encodeUri(path), uriBaseId: '%SRCROOT%' },
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
  const results = report.files.flatMap((file) => [...file.findings.map((f) => toResult(file.path, f)), ...file.suppressed.map((f) => toResult(file.path, f))]);
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
      },
    ],
  };
}
