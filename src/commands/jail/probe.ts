import { BaseCommand } from '../../cli/base-command.js';
import { outStyle } from '../../cli/color.js';
import { ExitCode } from '../../lib/errors.js';
import type { ProbeReport, RuntimePart } from '../../lib/jail/probe.js';

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
  const notes = [
    p.runsInJail === true ? 'runs in the jail' : p.runsInJail === false ? `does not run in the jail: ${p.jailError ?? ''}` : 'not tried: no working jail',
    ...(binds.length > 0 ? [`binds ${binds.join(', ')} read-only`] : []),
  ];
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

export default class JailProbe extends BaseCommand {
  static override summary = 'Detect the sandbox provider, smoke-test the hardened jail, and check node, python3, jq and DuckDB.';

  static override description = `Finds the sandbox provider for this platform (bubblewrap on Linux, sandbox-exec on macOS, none elsewhere), checks its version, then builds the REAL jail that orchestrate uses — no network, read-only system, a writable scratch workspace, seccomp, resource limits, an unprivileged uid — and runs a program in it that reports what it sees: uid, capabilities, no_new_privs, seccomp, network interfaces, workspace writable, /usr read-only. It also resolves node, python3 and jq to their real paths and runs each once inside the jail, and looks for the optional @duckdb/node-api package (without loading it). Each missing part comes with an install hint; restricted user namespaces (e.g. Ubuntu 24.04's AppArmor policy) are explained in words.

Exit code: 0 when a working jail is available, 1 when not.`;

  static override examples = [
    { description: 'Check this machine', command: '<%= config.bin %> <%= command.id %>' },
    { description: 'The full report as JSON', command: '<%= config.bin %> <%= command.id %> --json' },
    { description: "Also show bubblewrap's raw error when the jail does not work", command: '<%= config.bin %> <%= command.id %> --verbose' },
  ];

  async run(): Promise<ProbeReport> {
    const { flags } = await this.parse(JailProbe);
    const { probeJail } = await import('../../lib/jail/probe.js');
    const report = await probeJail();
    if (!report.working) this.setExitStatus(ExitCode.FAILURE);
    if (!this.jsonEnabled()) this.log(render(report, flags.verbose));
    return report;
  }
}
