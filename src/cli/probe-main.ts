/**
 * The body of `comis jail probe`, shared by the oclif command and
 * bin/comis.js's fast path: probe (the cached report while it stands), then
 * render for a human unless `json`.
 */
import { join } from 'node:path';

import { comisHome } from '../lib/config/paths.js';
import { ExitCode, type ExitCodeValue } from '../lib/errors.js';
import type { ProbeReport, RuntimePart } from '../lib/jail/probe.js';
import { outStyle } from './color.js';

export async function probeMain(json: boolean, verbose: boolean): Promise<{ report: ProbeReport; exitStatus: ExitCodeValue }> {
  const { probeJailCached } = await import('../lib/jail/probe.js');
  const report = await probeJailCached(join(comisHome(), 'cache', 'jail-probe.json'));
  if (!json) process.stdout.write(`${render(report, verbose)}\n`);
  return { report, exitStatus: report.working ? ExitCode.OK : ExitCode.FAILURE };
}

const PROVIDER_NAMES: Record<ProbeReport['provider'], string> = {
  bwrap: 'bubblewrap',
  'sandbox-exec': 'sandbox-exec',
  none: 'none',
};

function mark(ok: boolean | undefined): string {
  const style = outStyle();
  return ok === undefined ? style.dim('  -   ') : ok ? style.good('  ok  ') : style.bad('  FAIL');
}

function runtimeLine(p: RuntimePart): string {
  if (!p.found) return `${mark(false)}  ${p.name.padEnd(17)} ${p.error ?? 'missing.'} Hint: ${p.hint ?? ''}`;
  const where = `${p.version ?? ''}`.padEnd(14);
  const binds = (p.mounts ?? []).map((m) => m.source);
  const notes = [p.runsInJail === true ? 'runs in the jail' : p.runsInJail === false ? `does not run in the jail: ${p.jailError ?? ''}` : 'not tried: no working jail', ...(binds.length > 0 ? [`binds ${binds.join(', ')} read-only`] : [])];
  return `${mark(p.runsInJail ?? true)}  ${p.name.padEnd(17)} ${where} ${p.path ?? ''} (${notes.join('; ')})`;
}

/** Renders the report for a human (with `verbose`, also bubblewrap's raw error). */
function render(r: ProbeReport, verbose: boolean): string {
  const lines: string[] = [];
  const name = PROVIDER_NAMES[r.provider];
  const head = r.provider === 'none' ? 'Sandbox provider: none' : `Sandbox provider: ${name}${r.version ? ` ${r.version}` : ''}${r.binary ? ` (${r.binary})` : ''}`;
  lines.push(`${head}: ${r.working ? outStyle().good('working') : outStyle().bad('NOT working')}`);
  if (r.runAs) {
    lines.push(r.runAs.root ? '  comis runs as root: the jail drops to a dedicated unprivileged uid (setpriv) before bubblewrap' : '  the jail runs as your own uid inside its own user namespace');
  }
  if (r.problem) {
    lines.push(`  ${r.problem.message}`, `  Hint: ${r.problem.hint}`);
    if (verbose && r.problem.detail) lines.push(...r.problem.detail.split('\n').map((l) => `  | ${l}`));
  }
  for (const f of r.userNamespaces.findings) lines.push(`  note: ${f}`);
  if (r.checks.length > 0) {
    lines.push('', 'Smoke test (the real hardened jail: no network, read-only system, writable scratch workspace):');
    for (const c of r.checks) lines.push(`${c.advisory && !c.ok ? outStyle().dim('  warn') : mark(c.ok)}  ${c.name.padEnd(20)} ${c.detail}`);
  }
  lines.push('', 'Runtime for orchestrate:');
  for (const p of [r.runtime.node, r.runtime.python3, r.runtime.jq]) lines.push(runtimeLine(p));
  const d = r.runtime.duckdb;
  lines.push(d.found ? `${mark(true)}  ${d.name.padEnd(17)} ${(d.version ?? '').padEnd(14)} ${d.path ?? ''} (installed; loaded only for sql/jsonpath slicing)` : `${mark(false)}  ${d.name.padEnd(17)} missing        ${d.hint ?? ''}`);
  if (r.missing.length > 0) {
    lines.push('', 'Missing:');
    for (const m of r.missing) lines.push(`  ${m.part}: ${m.hint}`);
  }
  lines.push('', r.working ? 'A working jail is available: comis orchestrate can run scripts.' : 'No working jail: comis orchestrate refuses to run scripts on this machine.');
  return lines.join('\n');
}
