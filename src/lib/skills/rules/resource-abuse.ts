/** resource_abuse: unbounded loops over paid resources. Assembled into the one table by ../rules.ts. */
import type { Rule } from './types.js';

export const RESOURCE_ABUSE_RULES: readonly Rule[] = [
  {
    id: 'ABUSE_UNBOUNDED_LOOP',
    kind: 'cooccur',
    category: 'resource_abuse',
    severity: 'WARN',
    description: 'Unbounded retries or background request loops (wallet and quota exhaustion)',
    help: 'Retrying indefinitely or looping requests in the background burns paid quota. Bound retries and add backoff.',
    scope: 'paragraph',
    scriptScope: 'paragraph',
    anchor:
      /\b(?:retry|retries|retrying|repeat|repeating|poll|polling|loop|looping|call|calling|invoke|invoking)\b[^.\n]{0,60}?\b(?:indefinitely|forever|endlessly|infinitely|without\s{1,4}(?:any\s{1,4})?(?:limit|stopping|end|backoff|delay))\b|\bwhile\s{1,4}(?:true|:|1)\s{0,4};?\s{0,4}do\b/gi,
    with: [/\b(?:curl|wget|tool|request|endpoint|api|fetch|http)\w{0,3}\b/i],
    triggers: ['indefinitely', 'forever', 'endlessly', 'infinitely', 'without', 'while'],
    worstCase: 'retry retry retry ',
  },
];
