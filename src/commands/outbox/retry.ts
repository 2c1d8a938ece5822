import { Args, Flags } from '@oclif/core';

import { BaseCommand } from '../../cli/base-command.js';
import { escapeControls } from '../../cli/terminal-text.js';
import type { OutboxActionReport } from '../../lib/orchestrate/outbox-admin.js';

export default class OutboxRetry extends BaseCommand {
  static override summary = 'Deliver a failed (or pending) outward send again, with the same idempotency key.';

  static override description = `A failed send (the channel refused it, or did not answer within its attempts) goes back to pending and is delivered at once, carrying the same Idempotency-Key (webhook) or operation id (file channel dedupes on it), so a receiver that saw it before does not act twice.
Exit code 0 when it was delivered, 1 when the channel failed again (the entry stays failed, its error updated).
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
    const { args, flags } = await this.parse(OutboxRetry);
    const [{ comisHome }, { retryOutboxEntry }] = await Promise.all([import('../../lib/config/paths.js'), import('../../lib/orchestrate/outbox-admin.js')]);
    const report = await retryOutboxEntry(comisHome(), args.operationId, flags.agent);
    const e = report.entry;
    if (!this.jsonEnabled()) process.stdout.write(`${escapeControls(`${e.state} ${e.agentId}  ${e.operationId}  ${e.action} → ${e.channel}/${e.channelId}  attempts ${e.attempts}${e.error ? `\n  ${e.error}` : ''}`)}\n`);
    if (e.state !== 'delivered') this.setExitStatus(1);
    return report;
  }
}
