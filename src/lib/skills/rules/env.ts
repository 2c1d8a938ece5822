/** env_harvesting: dumping or collecting the environment. Assembled into the one table by ../rules.ts. */
import type { Rule } from './types.js';

export const ENV_RULES: readonly Rule[] = [
  {
    id: 'ENV_PRINTENV',
    kind: 'pattern',
    category: 'env_harvesting',
    severity: 'WARN',
    description: '`printenv` command dumps all environment variables',
    help: 'Dumping the whole environment exposes every secret in it. Read only the variable you need.',
    // With or without arguments (the seed's upstream): `printenv AWS_SECRET_ACCESS_KEY` reads a secret as surely as a dump.
    pattern: /\bprintenv\b(?!\.|-)/gi,
    triggers: ['printenv'],
    worstCase: 'printenv X ',
  },
  {
    id: 'ENV_PROC_ENVIRON',
    kind: 'pattern',
    category: 'env_harvesting',
    severity: 'WARN',
    description: 'Direct read of process environment via `/proc`',
    help: '`/proc/<pid>/environ` holds every secret of a process. No skill needs it.',
    pattern: /\/proc\/(?:self|\d{1,7}|\$\$|\*|\$\{?\w{1,20}\}?)\/environ\b/gi,
    triggers: ['/proc/'],
    worstCase: '/proc/self/',
  },
  {
    id: 'ENV_MASS_DUMP',
    kind: 'pattern',
    category: 'env_harvesting',
    severity: 'WARN',
    description: 'Environment dump piped to exfiltration or encoding',
    help: 'The whole environment is sent to a network tool or an encoder. Remove it.',
    pattern:
      /(?:^|[\s;&|(`$])(?:env|printenv|set|export\s{1,4}-p|declare\s{1,4}-x|(?:Get-ChildItem|gci|ls|dir)\s{1,4}env:)\s{0,8}\|\s{0,8}(?:curl|wget|nc|ncat|netcat|base64|xxd|gzip|openssl|ssh|socat|tee|python[23]?|node)\b|\b(?:json\.dumps|str|repr)\s{0,4}\(\s{0,4}(?:dict\s{0,4}\(\s{0,4})?os\.environ\s{0,4}\)|\bJSON\.stringify\s{0,4}\(\s{0,4}process\.env\s{0,4}[,)]/gim,
    triggers: ['env', 'set', 'declare', 'export'],
    // `set`, `declare` and `export` follow `^` or one of `\s;&|(`$`; `env` does not (`printenv`).
    wordStartTriggers: ['set', 'declare', 'export'],
    worstCase: 'env |env | ',
  },
  {
    id: 'ENV_SECRET_HARVEST',
    kind: 'cooccur',
    category: 'env_harvesting',
    severity: 'WARN',
    description: 'Environment values collected by secret-looking names (KEY, TOKEN, SECRET, PASS)',
    help: 'Code walks the environment and keeps the values of variables whose names look like secrets. Listing names is fine; collecting values is harvesting.',
    scope: 'paragraph',
    scriptScope: 'file',
    anchor:
      /\bos\.environ\.(?:items|values)\s{0,2}\(\s{0,2}\)|\bObject\.(?:entries|values)\s{0,2}\(\s{0,2}process\.env\s{0,2}\)|\bfor\s{1,4}\w{1,20}\s{1,4}in\s{1,4}\$\(\s{0,2}(?:env|printenv)\s{0,2}\)|\b(?:env|printenv)\s{0,4}\|\s{0,4}grep\b/gi,
    with: [/\b(?:KEY|TOKEN|SECRET|PASS(?:WORD)?|CRED(?:ENTIAL)?S?)\b|["'](?:KEY|TOKEN|SECRET|PASS)/],
    // Not `process.env` beside `env`: the automaton reports the longest trigger ending at a position,
    // and the window it gave missed `process.env | grep` (a match that starts at `env`).
    triggers: ['environ', 'env'],
    worstCase: 'os.environ.items() KEY ',
  },
];
