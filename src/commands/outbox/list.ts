import { Flags } from '@oclif/core';

import { BaseCommand } from '../../cli/base-command.js';
import { escapeControls } from '../../cli/terminal-text.js';
import type { OutboxListReport } from '../../lib/orchestrate/outbox-admin.js';

export default class OutboxList extends BaseCommand {
  static override summary = 'List outward sends (message_*) of the outbox: pending, failed, delivered or dropped.';

  static override description = `The outbox holds every message_send/reply/react of an agent with autonomy.durability.enabled: the intent is written before delivery and marked delivered after, so a crash never loses or doubles a send.
Like every command that opens the store, this first sweeps: pending sends a crashed comis left behind are delivered (same idempotency key), then the list is shown.
States: pending (written, not yet delivered), failed (the channel refused it or did not answer; see retry), delivered, dropped (by an operator). --state open (the default) shows pending and failed.
Content-free: ids, channel, state, attempts, times and the last error; never the message text.
Exit code 0 when the list was built.`;

  static override examples = [
    { description: 'What is pending or failed', command: '<%= config.bin %> <%= command.id %>' },
    { description: 'Everything of agent ops, as JSON', command: '<%= config.bin %> <%= command.id %> --state all --agent ops --json' },
  ];

  static override flags = {
    state: Flags.string({ description: 'Which sends: open (pending and failed), pending, failed, delivered, dropped, all.', options: ['open', 'pending', 'failed', 'delivered', 'dropped', 'all'], default: 'open' }),
    agent: Flags.string({ char: 'a', description: "Only this agent's sends." }),
    limit: Flags.integer({ description: 'Most entries to show, newest first.', default: 50, min: 1, max: 10_000 }),
  };

  async run(): Promise<OutboxListReport> {
    const { flags } = await this.parse(OutboxList);
    const [{ comisHome }, { listOutboxEntries }] = await Promise.all([import('../../lib/config/paths.js'), import('../../lib/orchestrate/outbox-admin.js')]);
    const report = await listOutboxEntries(comisHome(), { state: flags.state as 'open', agentId: flags.agent, limit: flags.limit });
    if (!this.jsonEnabled()) {
      const lines: string[] = [];
      if (report.swept.delivered + report.swept.failed > 0) lines.push(`swept: ${report.swept.delivered} pending send(s) delivered, ${report.swept.failed} failed`);
      if (report.entries.length === 0) lines.push(`No ${flags.state === 'all' ? '' : `${flags.state} `}sends in the outbox.`);
      for (const e of report.entries) {
        lines.push(`${e.state.padEnd(9)} ${e.agentId}  ${e.operationId}  ${e.action} → ${e.channel}/${e.channelId}  attempts ${e.attempts}  ${e.createdAt}${e.messageId ? `  id ${e.messageId}` : ''}`);
        if (e.error) lines.push(`          ${e.error}`);
      }
      if (report.entries.some((e) => e.state === 'failed')) lines.push('', 'Retry a failed send with `comis outbox retry <operationId>`, or give it up with `comis outbox drop <operationId>`.');
      process.stdout.write(`${escapeControls(lines.join('\n'))}\n`);
    }
    return report;
  }
}
