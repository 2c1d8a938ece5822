/** supply_chain: installs from remote, unpinned sources. Assembled into the one table by ../rules.ts. */
import { URL } from './fragments.js';
import type { Rule } from './types.js';

export const SUPPLY_CHAIN_RULES: readonly Rule[] = [
  {
    id: 'SUPPLY_REMOTE_INSTALL',
    kind: 'pattern',
    category: 'supply_chain',
    severity: 'WARN',
    description: 'Package install from a remote requirements file or archive URL, or pip under sudo',
    help: 'Remote requirement lists and archives change after review, and sudo pip runs setup code as root. Pin versions and hashes.',
    pattern:
      /\bpip[23]?\s{1,4}install\b[^\n]{0,100}?\s-r\s{0,4}["']?https?:\/\/|\bsudo\s{1,8}(?:-\S{1,4}\s{1,8}){0,2}(?:pip[23]?|python[23]?\s{1,4}-m\s{1,4}pip)\s{1,4}install\b|\bnpm\s{1,4}(?:install|i)\s{1,4}(?:-g\s{1,4})?https?:\/\/[^\s]{1,200}\.tgz\b|\bpip[23]?\s{1,4}install\s{1,4}(?:--\S{1,30}\s{1,4}){0,3}https?:\/\/[^\s]{1,200}\.(?:whl|tar\.gz|zip)\b/gi,
    triggers: ['pip', 'npm'],
    worstCase: 'pip install pip ',
  },
];
