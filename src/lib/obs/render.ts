/**
 * Plain-text renderings of the explain and fleet reports: verdict first,
 * then a fixed-width table. Pure functions returning strings (no colour, no
 * terminal); the commands write them to stdout. The same content-free
 * report is behind `--json`, so the text adds nothing the JSON lacks.
 */
import { PLAIN_STYLE, type TextStyle } from '../style.js';
import type { ExplainReport, ExplainRunEntry } from './explain.js';
import type { FleetReport } from './fleet.js';

/** 950 ms, 8.1 s, 2m05s, 1h02m. */
export function formatDuration(ms: number | null): string {
  if (ms === null || !Number.isFinite(ms)) return '-';
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)} s`;
  const s = Math.round(ms / 1_000);
  if (s < 3_600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3_600)}h${String(Math.floor((s % 3_600) / 60)).padStart(2, '0')}m`;
}

/** 512 B, 120.0 KiB, 3.4 MiB. */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  if (n < 1024 ** 3) return `${(n / 1024 / 1024).toFixed(1)} MiB`;
  return `${(n / 1024 ** 3).toFixed(1)} GiB`;
}

function table(header: string[], rows: string[][]): string[] {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)];
}

function tools(entry: ExplainRunEntry): string {
  if (entry.refusal) {
    // Nothing ran: what pre-flight refused, with the capabilities and tools it named.
    const r = entry.refusal;
    const names = [...r.capabilities, ...r.tools];
    return `REFUSED ${r.code} (${r.reason}${names.length > 0 ? `: ${names.join(', ')}` : ''})`;
  }
  if (entry.toolCalls.length === 0) return '-';
  // A policy deny (capability "none", the tool listed in policyDenies) reads apart from a capability deny.
  const policy = new Map((entry.policyDenies ?? []).map((d) => [d.tool, d.reason]));
  return entry.toolCalls
    .map((t) => {
      if (t.decision !== 'deny') return `${t.tool}×${t.count}`;
      const why = t.capability === 'none' ? policy.get(t.tool) : undefined;
      return why ? `${t.tool}×${t.count} DENIED BY POLICY (${why})` : `${t.tool}×${t.count} DENIED ${t.capability}`;
    })
    .join(', ');
}

function refs(entry: ExplainRunEntry): string {
  if (!entry.resultRefs) return '-';
  const saved = entry.savings ? `, ~${entry.savings.estSavedTokens} tok saved${entry.savings.savedRatio === undefined ? '' : ` (${Math.round(entry.savings.savedRatio * 100)}%)`}` : '';
  return `${entry.resultRefs.count} (${formatBytes(entry.resultRefs.bytes)}${saved})`;
}

export function renderExplainText(report: ExplainReport, style: TextStyle = PLAIN_STYLE): string {
  const v = report.likelyRootCause;
  const out: string[] = [];
  out.push(v.code === 'none' ? `${style.good('Verdict: no failure')} (${v.detail})` : `${style.bad(`Verdict: ${v.code}`)} [${v.signal}]: ${v.detail}`);
  for (const step of v.nextSteps) out.push(`  next: ${step}`);
  out.push('');
  const what = report.scope === 'run' ? `Run ${report.orchestrate[0]?.runId ?? ''} in session ${report.sessionKey}` : `Session ${report.sessionKey}`;
  const shown = report.truncated ? `, newest ${report.orchestrate.length} shown` : '';
  out.push(`${what} (agent ${report.agentId}): ${report.runCount} run${report.runCount === 1 ? '' : 's'}${shown}, updated ${report.updatedAt}`);
  if (report.orchestrate.length === 0) return `${[...out, ...durableLines(report)].join('\n')}\n`;
  out.push('');
  const rows = report.orchestrate.map((e) => [
    e.runId,
    // A repair the model was asked for shows with the outcome: `success (repaired: bad_import)`, `failure (repair rerun_failed)`.
    e.repair?.attempted ? `${e.outcome} (${e.repair.outcome === 'repaired' ? `repaired: ${e.repair.class ?? '-'}` : `repair ${e.repair.outcome}`})` : e.outcome,
    e.failureClass ?? '-',
    e.exitCode === null ? '-' : String(e.exitCode),
    formatDuration(e.durationMs),
    refs(e),
    tools(e),
  ]);
  out.push(...table(['RUN', 'OUTCOME', 'CLASS', 'EXIT', 'DURATION', 'RESULTREFS', 'TOOL CALLS'], rows));
  for (const plan of report.coordinator ?? []) {
    out.push('');
    out.push(`Coordinator plan ${plan.planRunId} (lead ${plan.leadAgentId}): ${plan.status}, ${plan.children.length} children, ${formatDuration(plan.durationMs)}, lead context ${plan.leadContextChars} chars`);
    const childRows = plan.children.map((c) => [c.childId, c.state, c.runId ?? '-', formatDuration(c.durationMs), String(c.steps), String(c.summaryChars), c.deniedCaps.length ? `denied ${c.deniedCaps.join(',')}` : '-']);
    out.push(...table(['CHILD', 'STATE', 'RUN', 'DURATION', 'STEPS', 'SUMMARY', 'CAPS'], childRows));
  }
  out.push(...durableLines(report));
  return `${out.join('\n')}\n`;
}

/** One line per durable run of the report: its state, the orphan reason, or how to resume it. */
function durableLines(report: ExplainReport): string[] {
  return (report.durable ?? []).flatMap((d) => {
    const why = d.reason ? ` (${d.reason})` : '';
    const next = d.status === 'resumable' ? ` until ${d.expiresAt}: comis orchestrate --resume ${d.runId}` : d.status === 'resumed' && d.resumedBy ? ` by ${d.resumedBy}` : '';
    return ['', `Durable ${d.kind} run ${d.runId}: ${d.status}${why}${next}`];
  });
}

export function renderFleetText(report: FleetReport): string {
  const out: string[] = [`Fleet since ${report.window.since} (--since ${report.window.spec}): ${report.runCount} run${report.runCount === 1 ? '' : 's'}`, ''];
  const rows = report.findings.map((f) => [f.severity, f.code, f.subject ?? '-', String(f.count), f.detail]);
  out.push(...table(['SEVERITY', 'CODE', 'SUBJECT', 'COUNT', 'DETAIL'], rows));
  const hints = report.findings.filter((f) => f.severity !== 'info');
  if (hints.length > 0) {
    out.push('', 'Next steps:');
    for (const f of hints) out.push(`  ${f.code}${f.subject ? ` (${f.subject})` : ''}: ${f.hint}`);
  }
  return `${out.join('\n')}\n`;
}
