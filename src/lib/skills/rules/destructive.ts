/** destructive_action: deletes that destroy user data. Assembled into the one table by ../rules.ts. */
import type { Rule } from './types.js';

export const DESTRUCTIVE_RULES: readonly Rule[] = [
  {
    id: 'DESTRUCTIVE_RM',
    kind: 'pattern',
    category: 'destructive_action',
    severity: 'WARN',
    description: 'Recursive forced delete of the root, home or a bare glob',
    help: '`rm -rf` on `/`, `~`, `$HOME` or `*` destroys user data on a typo or an empty variable. Delete explicit paths inside the project.',
    pattern:
      /\brm\s{1,8}(?:-[a-z]{1,6}\s{1,8}){0,3}(?:-[a-z]{0,5}(?:r[a-z]{0,4}f|f[a-z]{0,4}r)[a-z]{0,3}|--recursive\s{1,8}--force|--force\s{1,8}--recursive)\s{1,8}(?:--no-preserve-root\s{1,8})?["']?(?:\/(?=["'\s*]|$)|\/\*|~|\$\{?home\b|\/home\b|\/users\b|\*(?=\s|$))/gim,
    triggers: ['rm '],
    // `\brm`: not `form `, `term `.
    wordStartTriggers: ['rm '],
    worstCase: 'rm -rf rm ',
  },
];
