import { createInterface } from 'node:readline/promises';

import { ComisError } from '../lib/errors.js';
import type { SendApprovalRequest } from '../lib/orchestrate/message.js';
import type { Footprint } from '../lib/orchestrate/preflight.js';

/**
 * The approval prompt for a run's capability footprint. It refuses to hang:
 * with no TTY (or with the script on stdin) it fails at once naming `--yes`.
 */
export function askApproval(stdinIsScript: boolean, agentId: string): (footprint: Footprint) => Promise<boolean> {
  return async (footprint) => {
    if (stdinIsScript || !process.stdin.isTTY || !process.stderr.isTTY) {
      throw new ComisError('APPROVAL_REQUIRED', `Agent "${agentId}" requires approval for each run, and there is no terminal to ask on.`, {
        hint: 'Pass --yes to approve the run non-interactively.',
      });
    }
    const caps = footprint.capabilities.length ? footprint.capabilities.join(', ') : 'no capabilities';
    const tools = footprint.tools.length ? footprint.tools.join(', ') : 'no tool calls found';
    const rl = createInterface({ input: process.stdin, output: process.stderr });
    try {
      const answer = await rl.question(`Run this script as "${agentId}" with ${caps} (tools: ${tools})? [y/N] `);
      return /^y(es)?$/i.test(answer.trim());
    } finally {
      rl.close();
    }
  };
}

/**
 * The prompt for a message_* send outside the agent's origin channel, asked
 * while the script waits. It refuses to hang: with no TTY (or the script on
 * stdin) it fails at once, and the send is refused naming `--yes`. The
 * question names the target only, never the message text.
 */
export function askSendApproval(stdinIsScript: boolean): (request: SendApprovalRequest) => Promise<boolean> {
  let queue: Promise<unknown> = Promise.resolve();
  return (request) => {
    if (stdinIsScript || !process.stdin.isTTY || !process.stderr.isTTY) {
      return Promise.reject(new ComisError('APPROVAL_REQUIRED', `A send to ${request.channel}/${request.channelId} needs approval and there is no terminal to ask on.`, { hint: 'Pass --yes to approve sends outside the origin channel.' }));
    }
    // One question at a time, even when the script sends concurrently.
    const asked = queue.then(async () => {
      const rl = createInterface({ input: process.stdin, output: process.stderr });
      try {
        const answer = await rl.question(`Agent "${request.agentId}" wants ${request.tool} to ${request.channel}/${request.channelId} (its origin is ${request.origin}). Allow? [y/N] `);
        return /^y(es)?$/i.test(answer.trim());
      } finally {
        rl.close();
      }
    });
    queue = asked.catch(() => undefined);
    return asked;
  };
}
