import { Args, Flags } from '@oclif/core';

import { BaseCommand } from '../cli/base-command.js';
import type { ReplayReport } from '../cli/replay-main.js';

export default class Replay extends BaseCommand {
  static override summary = "Re-run a durable run's pinned script offline, answering each tool call from its recording.";

  static override description = `For a run of an agent with autonomy.durability {enabled: true, orchestrateResume: true}: comis kept the run's original script and a recording of each tool call (request and result) for 24 h. A replay re-spawns those bytes in the same jail, with the workspace read-only, against a replay socket that answers every call from the recording in order and acts on nothing: no file is written outside the jail's /tmp, no page is fetched, no MCP server starts.
A call whose tool or params differ from the recording at that position is a replay_divergence: the script sees it thrown, and comis names the call index. --json gives the per-call comparison.
Also spelled: comis orchestrate replay <runId>.
Exit codes: 0 identical (every call matched, same output); 1 replay_divergence or different output; 2 usage (unknown, running, orphaned run or incomplete recording).`;

  static override examples = [
    { description: 'Replay a durable run and compare', command: '<%= config.bin %> <%= command.id %> r-abc123' },
    { description: 'Per-call comparison as JSON', command: '<%= config.bin %> <%= command.id %> r-abc123 --json' },
  ];

  static override args = {
    runId: Args.string({ description: 'The run id of a durable run (from the orchestrate output or `comis explain`).', required: true }),
  };

  static override flags = {
    'timeout-ms': Flags.integer({ description: "Wall-clock timeout of the replay in ms (default: the agent's).", min: 100, max: 600_000 }),
  };

  async run(): Promise<ReplayReport> {
    const { args, flags } = await this.parse(Replay);
    const { replayMain } = await import('../cli/replay-main.js');
    const { report, exitStatus } = await replayMain(args.runId, this.jsonEnabled(), flags['timeout-ms']);
    this.setExitStatus(exitStatus);
    return report;
  }
}
