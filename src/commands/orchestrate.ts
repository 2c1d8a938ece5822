import { Args, Flags } from '@oclif/core';

import { BaseCommand } from '../cli/base-command.js';
import { ORCHESTRATE_FLAGS as F } from '../cli/orchestrate-flags.js';
import type { OrchestrateResult } from '../lib/orchestrate/runner.js';

export default class Orchestrate extends BaseCommand {
  static override summary = 'Run one script in the jail; print only what it printed to stdout.';

  static override description = `The script (TypeScript, JavaScript or Python) runs inside a bubblewrap jail with no network. It reaches tools only through the typed SDK:
  TS/JS:   import { comis_tools } from "./comis_tools.js";   await comis_tools.read({ path: "notes.md" })
  Python:  import comis_tools;                                comis_tools.read({"path": "notes.md"})
Each call crosses a capability socket authenticated by this run's own lease and is allowed only if the agent's profile holds the tool's capability. The working directory is the agent's workspace, which persists between runs; results/ is per run and reaped. Big results come back as ResultRef handles to slice with .read/.grep/.jq/.sql/.jsonpath.
Only the script's stdout comes back (bounded to about 30,000 characters, head and tail kept). On a terminal its control characters are shown escaped (ESC as ␛) unless --raw; piped, it is written as is. On success one summary line goes to stderr (run id, duration, ResultRefs and savings, the generated session key; --quiet drops it); on failure the failure class and a redacted, always escaped stderr tail.
Durable runs (autonomy.durability {enabled, orchestrateResume}): the script may call checkpoint(state) and resume(); a run that times out stays resumable for 24 h and --resume <runId> continues it from its pinned bytes; comis replay <runId> re-runs it offline against its recording.
Exit codes: 0 success; 1 the run failed (timeout, stdout_cap, nonzero_exit, spawn_fail); 2 usage or config error; 3 no working sandbox or interpreter; 4 a capability the script needs is not held, or approval refused.`;

  static override examples = [
    { description: 'Run the example: grep the demo workspace, read the busiest file', command: 'COMIS_HOME=examples/comis-home <%= config.bin %> <%= command.id %> examples/todo-report.ts' },
    { description: 'From stdin, as Python', command: "echo 'import comis_tools; print(comis_tools.describe())' | <%= config.bin %> <%= command.id %> - --lang py" },
    { description: 'Machine output with the run record', command: '<%= config.bin %> <%= command.id %> job.js --json --timeout-ms 10000' },
    { description: 'Continue a durable run that timed out (its pinned script; resume() gets its checkpoint)', command: '<%= config.bin %> <%= command.id %> --resume r-abc123' },
  ];

  static override args = {
    script: Args.string({ description: 'Path of the script, or - to read it from stdin (none with --resume).', required: false }),
  };

  static override flags = {
    lang: Flags.string({ description: F.lang.description, options: [...F.lang.options] }),
    agent: Flags.string({ char: F.agent.char, description: F.agent.description, env: F.agent.env }),
    session: Flags.string({ char: F.session.char, description: F.session.description, env: F.session.env }),
    'timeout-ms': Flags.integer({ description: F['timeout-ms'].description, min: F['timeout-ms'].min, max: F['timeout-ms'].max }),
    yes: Flags.boolean({ char: F.yes.char, description: F.yes.description, default: false }),
    quiet: Flags.boolean({ char: F.quiet.char, description: F.quiet.description, default: false }),
    resume: Flags.string({ description: F.resume.description }),
    raw: Flags.boolean({ description: F.raw.description, default: false }),
    'no-repair': Flags.boolean({ description: F['no-repair'].description, default: false }),
  };

  async run(): Promise<OrchestrateResult> {
    const { args, flags } = await this.parse(Orchestrate);
    const { executeOrchestrate } = await import('../cli/orchestrate-main.js');
    const { result, exitStatus } = await executeOrchestrate(
      {
        script: args.script,
        resume: flags.resume,
        lang: flags.lang as 'ts' | 'js' | 'py' | undefined,
        agent: flags.agent,
        session: flags.session,
        timeoutMs: flags['timeout-ms'],
        yes: flags.yes,
        raw: flags.raw,
        quiet: flags.quiet,
        noRepair: flags['no-repair'],
      },
      { json: this.jsonEnabled(), addWarning: (m) => this.addWarning(m) },
    );
    this.setExitStatus(exitStatus);
    return result;
  }
}
