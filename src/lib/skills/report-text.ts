/**
 * Human and CI text renderings of a scan report. No terminal calls: colour, if
 * any, comes from the TextStyle the caller passes; every excerpt is already display-safe (invisible and
 * bidi characters shown as <U+XXXX>), so printing cannot reorder or hide text.
 */
import { PLAIN_STYLE, type TextStyle } from '../style.js';
import type { ReportFinding, ScanReport } from './scan-paths.js';

/** Grouped by file; each finding with its line, rule and message, the line, and a caret under the match. */
export function renderPretty(report: ScanReport, style: TextStyle = PLAIN_STYLE): string {
  const severity = (sev: string): string => {
    const padded = sev.padEnd(8);
    return sev === 'CRITICAL' ? style.bad(padded) : sev === 'WARN' ? style.warn(padded) : style.dim(padded);
  };
  const out: string[] = [];
  for (const file of report.files) {
    if (file.findings.length === 0) continue;
    out.push(file.path);
    for (const f of file.findings) {
      out.push(`  ${f.lineNumber}:${f.column}  ${severity(f.severity)} ${f.ruleId}  ${f.message}`);
      if (f.excerpt.text) {
        const gutter = `${' '.repeat(String(f.lineNumber).length)}`;
        out.push(`    ${gutter} | ${f.excerpt.text}`);
        out.push(`    ${gutter} | ${' '.repeat(f.excerpt.caretStart)}${'^'.repeat(Math.min(f.excerpt.caretLength, 120))}`);
      }
    }
    out.push('');
  }
  const s = report.summary;
  const verdict = s.failed ? style.bad(`FAIL (findings at or above --fail-on ${report.failOn})`) : style.good('ok');
  out.push(
    `${s.files} file${s.files === 1 ? '' : 's'} scanned: ${s.findings} finding${s.findings === 1 ? '' : 's'} (${s.critical} critical, ${s.warn} warn, ${s.spec} of them spec)` +
      `${s.suppressed > 0 ? `, ${s.suppressed} suppressed` : ''} — ${verdict}`,
  );
  return `${out.join('\n')}\n`;
}

function escapeData(text: string): string {
  return text.replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
}
function escapeProperty(text: string): string {
  return escapeData(text).replace(/:/g, '%3A').replace(/,/g, '%2C');
}

function annotation(path: string, f: ReportFinding): string {
  const level = f.severity === 'CRITICAL' ? 'error' : 'warning';
  const props = [`file=${escapeProperty(path)}`, `line=${f.lineNumber}`, `col=${f.column}`, `endLine=${f.endLineNumber}`];
  if (f.endLineNumber === f.lineNumber) props.push(`endColumn=${f.endColumn}`);
  props.push(`title=${escapeProperty(`${f.ruleId} (${f.severity})`)}`);
  return `::${level} ${props.join(',')}::${escapeData(`${f.message}${f.matchedText ? ` — matched: ${f.matchedText}` : ''}`)}`;
}

/** GitHub Actions workflow commands: one `::error`/`::warning` per finding, then a summary line. */
export function renderGithub(report: ScanReport): string {
  const lines = report.files.flatMap((file) => file.findings.map((f) => annotation(file.path, f)));
  const s = report.summary;
  lines.push(`comis skill scan: ${s.files} files, ${s.findings} findings (${s.critical} critical, ${s.warn} warn), ${s.suppressed} suppressed${s.failed ? ' — failing' : ''}`);
  return `${lines.join('\n')}\n`;
}
