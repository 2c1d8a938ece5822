/** credential_access: credential stores, disclosure of secrets, broad file scopes. Assembled into the one table by ../rules.ts. */
import { NEGATION } from './fragments.js';
import type { Rule } from './types.js';

export const CREDENTIAL_RULES: readonly Rule[] = [
  {
    id: 'EXFIL_SECRET_FILE',
    kind: 'cooccur',
    category: 'credential_access',
    severity: 'CRITICAL',
    description: 'Credential store (SSH keys, cloud credentials, .netrc, .env, shell history) next to a network send',
    help: 'A credential file is read where data leaves the machine. Skills must not touch credential stores.',
    scope: 'paragraph',
    scriptScope: 'paragraph',
    anchor:
      /(?:~|\$HOME|\$\{HOME\}|"\$HOME"|%USERPROFILE%|\/root|\/home\/[\w.-]{1,32}|\/Users\/[\w.-]{1,32})["']?\/\.(?:ssh(?!\/(?:config|known_hosts)\b)|aws|gnupg|netrc|git-credentials|docker\/config\.json|kube|npmrc|pypirc|env\b|bash_history|zsh_history|config\/gh|config\/gcloud|azure|password-store)|\bid_(?:rsa|dsa|ecdsa|ed25519)\b|\/etc\/(?:shadow|sudoers)\b|\.aws\/credentials\b|\bPath\.home\(\)\s{0,2}\/\s{0,2}["']\.(?:ssh|aws|netrc|gnupg|env)["'](?!\s{0,2}\/\s{0,2}["'](?:config|known_hosts)["'])|\b(?:shell|bash|zsh)\s{1,4}history\b/gi,
    with: [
      /\b(?:curl|wget|nc|ncat|netcat|socat|dig|nslookup|scp|rsync|sftp|ftp|requests\.(?:post|put|get)|urlopen|urllib|http\.client|fetch|axios|invoke-webrequest|invoke-restmethod|uploads?|uploaded|uploading|post(?:s|ed|ing)?|send(?:s|ing)?|transmit\w{0,3}|exfiltrat\w{0,6})\b|https?:\/\//i,
    ],
    triggers: ['.ssh', '.aws', '.netrc', '.env', 'id_', '/etc/', 'history', '.gnupg', '.kube', '.docker', '.npmrc', '.pypirc', 'credentials', 'azure', 'password-store', 'config/g'],
    worstCase: '~/.ssh ~/.ssh/x ',
  },
  {
    id: 'CRED_STORE_ACCESS',
    kind: 'pattern',
    category: 'credential_access',
    severity: 'WARN',
    description: 'Reads a credential store (SSH keys, cloud credentials, .netrc, ~/.env, shell history)',
    help: 'Skills have no business in credential stores. If the skill only documents a path, say so; otherwise remove the access.',
    pattern:
      /(?:~|\$HOME|\$\{HOME\}|"\$HOME"|%USERPROFILE%|\/root|\/home\/[\w.-]{1,32}|\/Users\/[\w.-]{1,32})["']?\/\.(?:ssh(?!\/(?:config|known_hosts)\b)|aws|gnupg|netrc|git-credentials|docker\/config\.json|kube\/config|pypirc|env\b|bash_history|zsh_history|config\/gh|password-store)|\bid_(?:rsa|dsa|ecdsa|ed25519)\b(?!\.pub)|\/etc\/shadow\b|\.aws\/credentials\b|\b(?:shell|bash|zsh)\s{1,4}history\b/gi,
    triggers: ['.ssh', '.aws', '.netrc', '.env', 'id_', '/etc/shadow', 'history', '.gnupg', '.kube', '.docker', '.pypirc', 'credentials', 'password-store', 'config/gh'],
    check: (ctx) => {
      // "it does not touch ~/.ssh" is a promise, not an access: look back to the start of the sentence.
      const before = ctx.raw.slice(Math.max(0, ctx.rawStart - 160), ctx.rawStart);
      const sentence = before.slice(Math.max(before.lastIndexOf('. '), before.lastIndexOf('\n\n'), -1) + 1);
      return !/\b(?:not|never|no|without|nor)\b/i.test(sentence);
    },
    worstCase: '~/.ssh ~/.aws ',
  },
  {
    id: 'PI_SECRET_DISCLOSURE',
    kind: 'cooccur',
    category: 'credential_access',
    severity: 'CRITICAL',
    description: 'Instruction to reveal a credential (API key, Authorization header, password) in a reply or to a URL',
    help: 'The skill asks the agent to disclose a secret. Remove it.',
    scope: 'sentence',
    anchor: /\b(?:authorization\s{1,4}header|api[\s_-]?keys?|access\s{1,4}tokens?|bearer\s{1,4}tokens?|auth\s{1,4}tokens?|session\s{1,4}(?:cookies?|tokens?)|passwords?|credentials?|private\s{1,4}keys?|ssh\s{1,4}keys?|id_rsa)\b|\.netrc\b/gi,
    with: [
      /\b(?:echo|print|reveal|repeat|output|paste|display|expose|leak|dump|include)\b/i,
      /\b(?:(?:your|the)\s{1,4}(?:next\s{1,4})?(?:response|reply|answer|message)|in\s{1,4}(?:the\s{1,4})?(?:chat|response|reply|request\s{1,4}body)|to\s{1,4}(?:me|us)\b)/i,
    ],
    unless: NEGATION,
    triggers: ['authorization', 'api', 'token', 'cookie', 'password', 'credential', 'key', '.netrc', 'id_rsa'],
    worstCase: 'api key api key ',
  },
  {
    id: 'PERM_BROAD_SCOPE',
    kind: 'pattern',
    category: 'credential_access',
    severity: 'WARN',
    description: 'Frontmatter requests access to the whole home directory or file system',
    help: 'A skill that asks for ~/** or /** can read every credential of the user. Scope paths to the project.',
    pattern: /["']?(?:~|\$HOME)\/\*\*["']?|["']\/\*\*["']/gi,
    regions: ['frontmatter', 'description'],
    // Both alternatives hold `/**`; `**` alone is every Markdown bold (15,000 windows in the benign corpus).
    triggers: ['/**'],
    worstCase: '~/** ~/*',
  },
];
