import { Args, Flags } from '@oclif/core';

import { BaseCommand } from '../../cli/base-command.js';
import { escapeControls } from '../../cli/terminal-text.js';
import type { OutboxActionReport } from '../../lib/orchestrate/outbox-admin.js';

export default class OutboxDrop extends BaseCommand {
  static override summary = 'Give up an outward send that is pending or failed: it is never delivered, and its text leaves the store.';

  static override description = `For a send that should not go out any more (wrong channel, stale news). A send being delivered by a running comis right now cannot be dropped; a delivered one cannot be unsent. A script that repeats a dropped operationId gets the error send_dropped.
Exit code 0 when it was dropped.
Like every command that opens the store, it first sweeps pending sends a crashed comis left behind.`;

  static override examples = [
    { description: 'By operation id (as comis outbox list shows it)', command: '<%= config.bin %> <%= command.id %> report-send' },
    { description: 'When two agents used the same id', command: '<%= config.bin %> <%= command.id %> report-send --agent ops --json' },
  ];

  static override args = {
    operationId: Args.string({ description: 'The operation id of the send.', required: true }),
  };

  static override flags = {
    agent: Flags.string({ char: 'a', description: 'The agent whose send it is (needed only when several agents used the id).' }),
  };

  async run(): Promise<OutboxActionReport> {
    const { args, flags } = await this.parse(OutboxDrop);
    const [{ comisHome }, { dropOutboxEntry }] = await Promise.all([import('../../lib/config/paths.js'), import('../../lib/orchestrate/outbox-admin.js')]);
    const report = await dropOutboxEntry(comisHome(), args.operationId, flags.agent);
    const e = report.entry;
    if (!this.jsonEnabled()) process.stdout.write(`${escapeControls(`${e.state} ${e.agentId}  ${e.operationId}  ${e.action} → ${e.channel}/${e.channelId}  attempts ${e.attempts}${e.error ? `\n  ${e.error}` : ''}`)}\n`);
    return report;
  }
}
