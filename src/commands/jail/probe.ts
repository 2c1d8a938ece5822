import { BaseCommand } from '../../cli/base-command.js';
import type { ProbeReport } from '../../lib/jail/probe.js';

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
    const { probeMain } = await import('../../cli/probe-main.js');
    const { report, exitStatus } = await probeMain(this.jsonEnabled(), flags.verbose);
    this.setExitStatus(exitStatus);
    return report;
  }
}
