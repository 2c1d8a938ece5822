/**
 * THE rule table of `comis skill scan`: every rule the scanner, the
 * frontmatter validator and the file walker can report, with its ID,
 * category, severity, description and help. The scanner, the SARIF
 * reporter, the docs and the tests all read this one table.
 *
 * ReDoS contract: every regex here runs in time linear in its input. Each
 * uses bounded quantifiers (`{0,N}`), at most one bounded wildcard per
 * alternative, no nested unbounded repetition, and no quantified group whose
 * iterations can overlap. `worstCase` is the string the ReDoS test repeats
 * to 1 MB for that rule; the benchmark reports the time per rule.
 */
import type { ContentKind, ScanCategory, ScanRegion, ScanSeverity } from './types.js';
import type { TextView } from './views.js';

/** What a rule's `check` sees about one match. */
export interface RuleMatchContext {
  match: RegExpExecArray;
  view: TextView;
  raw: string;
  rawStart: number;
  rawEnd: number;
  region: ScanRegion;
  kind: ContentKind;
  /** `shell` for shell scripts and shell-ish code blocks, `code` for other languages, else `prose`. */
  flavor: 'shell' | 'code' | 'prose';
  path: string | undefined;
  /** True when a raw position sits inside a Markdown inline code span. */
  inInlineCode(position: number): boolean;
}

/** `false` drops the match; an object adjusts it. */
export type RuleCheck = (ctx: RuleMatchContext) => boolean | { severity?: ScanSeverity; message?: string };

interface RuleBase {
  id: string;
  category: ScanCategory;
  severity: ScanSeverity;
  /** One line: what the rule detects. */
  description: string;
  /** What to do about a finding. */
  help: string;
  /** Repeated to 1 MB by the ReDoS test and the benchmark. */
  worstCase: string;
}

/** One regex over each view; every match is a finding. */
export interface PatternRule extends RuleBase {
  kind: 'pattern';
  /** Global; case-insensitive unless `literalViewsOnly`. */
  pattern: RegExp;
  /** Lower-case literals: the rule runs on a view only when one occurs in it. */
  triggers?: readonly string[];
  /** Case-sensitive rules see only the raw and comments-stripped views. */
  literalViewsOnly?: boolean;
  /** Runs on Markdown content only. */
  markdownOnly?: boolean;
  /** Runs on scripts and other non-Markdown files only (code a skill ships and runs). */
  scriptOnly?: boolean;
  /** Only matches inside these regions count. */
  regions?: readonly ScanRegion[];
  /** Only for files whose path matches. */
  pathFilter?: RegExp;
  check?: RuleCheck;
}

/** An anchor and companions that must all occur in the same sentence or paragraph. */
export interface CooccurRule extends RuleBase {
  kind: 'cooccur';
  scope: 'sentence' | 'paragraph';
  /** Scope for non-Markdown files (scripts): whole file or paragraph. */
  scriptScope?: 'paragraph' | 'file';
  /** Global, case-insensitive; reported position. */
  anchor: RegExp;
  /** Each must match somewhere in the same unit. */
  with: readonly RegExp[];
  /** A unit matching this is skipped (negations such as "never send ..."). */
  unless?: RegExp;
  triggers?: readonly string[];
}

/** Implemented by code in detectors.ts (non-regex scanning). */
export interface DetectorRule extends RuleBase {
  kind: 'detector';
}

/** Reported by the file walker about files rather than text. */
export interface ArtifactRule extends RuleBase {
  kind: 'artifact';
}

/** Agent Skills specification checks on the frontmatter; a separate class from security findings. */
export interface SpecRule extends RuleBase {
  kind: 'spec';
}

export type Rule = PatternRule | CooccurRule | DetectorRule | ArtifactRule | SpecRule;

// Shared fragments. Every one is bounded.
const SHELL = String.raw`(?:ba|z|da|k|c|tc|fi|a)?sh`;
const BIN_DIR = String.raw`(?:(?:\/usr)?(?:\/local)?\/bin\/)?`;
const SUDO = String.raw`(?:sudo\s{1,8}(?:-[A-Za-z]{1,4}\s{1,8}){0,3})?`;
const DANGEROUS_BIN = String.raw`(?:curl|wget|nc|ncat|netcat|socat|telnet|bash|sh|zsh|dash|ksh|python[23]?|perl|ruby|php|node|base64|xxd|openssl|eval|rm|dd|mkfifo|powershell|pwsh)`;
const INTERPRETER = String.raw`(?:${SHELL}|python[23]?|perl|ruby|node|php|iex)`;
const IPV4 = String.raw`(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?![\d.])`;
const URL = String.raw`https?:\/\/`;
const EMAIL = String.raw`\b[\w.+-]{1,64}@[\w-]{1,63}\.[a-z]{2,12}\b`;
const NEGATION = /\b(?:never|do\s{1,4}not|don't|must\s{1,4}not|should\s{1,4}not|avoid|without|no\s{1,4}longer)\b/i;

/** Private, loopback, link-local and unspecified IPv4 addresses are not downloads from the internet. */
function isPublicIpv4(ip: string): boolean {
  const parts = ip.split('.').map(Number);
  if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p) || p > 255)) return false;
  const [a, b] = parts as [number, number, number, number];
  if (a === 0 || a === 127 || a === 10 || (a === 169 && b === 254) || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168)) return false;
  return true;
}

/** Backticks are command substitution only in shell code, or right after `=`, `$`, `(` or `eval`/`sh -c` in prose. */
const backtickIsExecution: RuleCheck = (ctx) => {
  if (ctx.region === 'inline-code' || ctx.region === 'prose' || ctx.region === 'description' || ctx.region === 'html-comment') {
    const before = ctx.raw.slice(Math.max(0, ctx.rawStart - 12), ctx.rawStart);
    return /(?:=|\b(?:eval|exec|sh\s{1,4}-c)\s{1,4}["']?)$/.test(before);
  }
  return ctx.flavor === 'shell';
};

/** A shell pipe has a command before it on the same line; a Markdown table border does not. */
const pipeHasCommandBefore: RuleCheck = (ctx) => {
  if (ctx.match[0][0] !== '|') return true;
  const text = ctx.match.input;
  const lineStart = text.lastIndexOf('\n', ctx.match.index - 1) + 1;
  const before = text.slice(Math.max(lineStart, ctx.match.index - 200), ctx.match.index).trimEnd();
  return before.length > 0 && !before.endsWith('|');
};

export const RULES: readonly Rule[] = [
  // ── exec_injection (seed) ──────────────────────────────────────────────
  {
    id: 'EXEC_SUBSHELL',
    kind: 'pattern',
    category: 'exec_injection',
    severity: 'CRITICAL',
    description: 'Subshell command injection: $(command) with a dangerous binary',
    help: 'A `$(...)` that runs a network, shell or decoding binary executes whatever it fetches or decodes. Remove it or replace it with a pinned, reviewed script.',
    pattern: new RegExp(String.raw`\$\(\s{0,8}${SUDO}${BIN_DIR}${DANGEROUS_BIN}\b(?![-.])|\b${SHELL}\s{1,8}-c\s{1,8}["']?\$\(`, 'gi'),
    triggers: ['$('],
    worstCase: '$($(curl ',
  },
  {
    id: 'EXEC_BACKTICK',
    kind: 'pattern',
    category: 'exec_injection',
    severity: 'CRITICAL',
    description: 'Backtick command injection with a dangerous binary',
    help: 'Backtick command substitution runs a network, shell or decoding binary. Inline code in prose is not flagged; this is shell code or an execution form.',
    pattern: new RegExp(String.raw`\`[ \t]{0,4}${SUDO}${BIN_DIR}${DANGEROUS_BIN}\b[^\`\n]{0,300}\``, 'gi'),
    triggers: ['`'],
    check: backtickIsExecution,
    worstCase: '`curl `sh ',
  },
  {
    id: 'EXEC_EVAL',
    kind: 'pattern',
    category: 'exec_injection',
    severity: 'CRITICAL',
    description: 'eval()/exec() with a string or decoded argument',
    help: 'Evaluating a string (or decoded/fetched data) as code hides what runs. Write the code out.',
    pattern: /\b(?:eval|exec)\s{0,4}\(\s{0,4}(?:["'`]|(?:atob|unescape|decodeURIComponent|(?:base64\.)?b64decode|bytes\.fromhex|codecs\.decode|String\.fromCharCode|compile|requests\.get|urlopen|fetch)\s{0,4}\()|\bnew\s{1,4}Function\s{0,4}\(\s{0,4}["'`]/gi,
    triggers: ['eval', 'exec', 'function'],
    worstCase: 'eval( exec(',
  },
  {
    id: 'EXEC_PIPE_BASH',
    kind: 'pattern',
    category: 'exec_injection',
    severity: 'CRITICAL',
    description: 'Pipe to a shell interpreter',
    help: 'Piping text into a shell (or `bash <(curl ...)`) runs content nobody reviewed. Download, verify a checksum or signature, then run a pinned file.',
    pattern: new RegExp(
      // A pipe needs a command before it on the same line (not a Markdown table border) and is not followed by another cell border.
      String.raw`\|\s{0,8}${SUDO}${BIN_DIR}(?:env\s{1,8})?${SHELL}\b(?![-.\w])(?![ \t]{0,4}\|)|\b(?:${SHELL}|source|\.)\s{1,8}<\(\s{0,4}(?:curl|wget)\b|\|\s{0,8}${SUDO}(?:python[23]?|perl|ruby|node|php|iex|invoke-expression)[ \t]{0,4}(?:-[ \t]{0,4})?(?=$|[;&)])`,
      'gim',
    ),
    triggers: ['|', '<('],
    check: pipeHasCommandBefore,
    worstCase: '| | sudo ',
  },
  // ── env_harvesting (seed) ──────────────────────────────────────────────
  {
    id: 'ENV_PRINTENV',
    kind: 'pattern',
    category: 'env_harvesting',
    severity: 'WARN',
    description: '`printenv` command dumps all environment variables',
    help: 'Dumping the whole environment exposes every secret in it. Read only the variable you need.',
    pattern: /\bprintenv\b(?![ \t]{1,8}[A-Za-z_])/gi,
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
    triggers: ['env', 'set', 'declare'],
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
    triggers: ['environ', 'process.env', 'env'],
    worstCase: 'os.environ.items() KEY ',
  },
  // ── crypto_mining (seed) ───────────────────────────────────────────────
  {
    id: 'CRYPTO_STRATUM',
    kind: 'pattern',
    category: 'crypto_mining',
    severity: 'CRITICAL',
    description: 'Mining pool protocol (`stratum://`)',
    help: 'A mining pool URL. Skills do not mine.',
    pattern: /\bstratum(?:\+(?:tcp|ssl|tls|udp))?:\/\//gi,
    triggers: ['stratum'],
    worstCase: 'stratum+tcp:/',
  },
  {
    id: 'CRYPTO_MINER_BINARY',
    kind: 'pattern',
    category: 'crypto_mining',
    severity: 'CRITICAL',
    description: 'Known cryptocurrency miner binary',
    help: 'A cryptocurrency miner. Skills do not mine.',
    pattern:
      /\b(?:xmrig(?:-\w{1,20})?|xmr-stak(?:-\w{1,10})?|cpuminer(?:-\w{1,10})?|minerd|cgminer|bfgminer|ethminer|nbminer|phoenixminer|lolminer|nanominer|ccminer|sgminer|gminer|teamredminer|srbminer\w{0,10}|xmrminer|kdevtmpfsi|kinsing)\b/gi,
    triggers: ['xmr', 'miner', 'kdevtmpfsi', 'kinsing'],
    worstCase: 'xmrig-xmrig-',
  },
  {
    id: 'CRYPTO_POOL_DOMAIN',
    kind: 'pattern',
    category: 'crypto_mining',
    severity: 'WARN',
    description: 'Mining pool domain pattern',
    help: 'A cryptocurrency mining pool host. Skills do not mine.',
    pattern:
      /\b(?:nanopool|supportxmr|minexmr|f2pool|ethermine|2miners|hashvault|moneroocean|nicehash|minergate|slushpool|antpool|viabtc|c3pool|herominers|unmineable|miningpoolhub|xmrpool|prohashing|flypool|sparkpool|dwarfpool)\.[a-z]{2,10}\b|\b(?:xmr|monero|eth|btc|ltc|zec|rvn|erg|kas)-?pool\.[a-z]{2,10}\b/gi,
    triggers: ['pool', 'miner', 'nicehash', 'xmr', 'ethermine', 'hashvault', 'moneroocean', 'viabtc', 'unmineable'],
    worstCase: 'xmrpool xmr-pool.',
  },
  // ── network_exfiltration (seed) ────────────────────────────────────────
  {
    id: 'NET_CURL_PIPE',
    kind: 'pattern',
    category: 'network_exfiltration',
    severity: 'WARN',
    description: 'curl output piped to an interpreter',
    help: 'Downloads code and runs it unseen. Pin a version, verify a checksum, and run the file.',
    pattern: new RegExp(String.raw`\bcurl\b(?:[^\n|;&]|\\\n){0,400}\|\s{0,8}${SUDO}${BIN_DIR}(?:env\s{1,8})?${INTERPRETER}\b`, 'gi'),
    triggers: ['curl'],
    worstCase: 'curl curl curl ',
  },
  {
    id: 'NET_WGET_EXEC',
    kind: 'pattern',
    category: 'network_exfiltration',
    severity: 'WARN',
    description: 'wget output to stdout piped elsewhere',
    help: 'wget writes the download to stdout and pipes it on, usually into a shell. Save, verify, then run.',
    pattern: /\bwget\b(?:[^\n|;&]|\\\n){0,400}\|\s{0,8}[\w\/.-]{1,40}/gi,
    triggers: ['wget'],
    check: (ctx) => /(?:^|\s)(?:-[a-zA-Z]{0,4}O\s{0,2}-|--output-document(?:=|\s{1,4})-)(?=\s|\|)/.test(ctx.match[0]),
    worstCase: 'wget -O- wget ',
  },
  {
    id: 'NET_REVERSE_SHELL',
    kind: 'pattern',
    category: 'network_exfiltration',
    severity: 'CRITICAL',
    description: 'Reverse shell pattern',
    help: 'Connects a shell to a remote host. Never legitimate in a skill.',
    pattern: new RegExp(
      String.raw`\/dev\/(?:tcp|udp)\/[\w.$-]{1,100}\/\d{1,5}|\b(?:nc|ncat|netcat)\b[^\n|;&]{0,100}?\s-[a-zA-Z]{0,4}[ec]\s{0,4}["']?(?:\/\w{1,20}){0,3}\/?${SHELL}\b|\bsocat\b[^\n]{0,100}?\bexec:|\bmkfifo\b[^\n]{0,200}?\b(?:nc|ncat|netcat|telnet|openssl\s{1,4}s_client)\b|\bos\.dup2\s{0,4}\(\s{0,4}\w{1,30}\.fileno\(\)|\bpty\.spawn\s{0,4}\(\s{0,4}["'](?:\/\w{1,20}){0,3}\/?${SHELL}\b|\b${SHELL}\s{1,4}-i\s{1,4}>&`,
      'gi',
    ),
    triggers: ['/dev/', 'nc', 'cat', 'socat', 'mkfifo', 'dup2', 'pty', '-i'],
    worstCase: 'nc nc -x mkfifo ',
  },
  {
    id: 'NET_PASTE_SITE',
    kind: 'pattern',
    category: 'network_exfiltration',
    severity: 'WARN',
    description: 'Link to a paste site (anonymous, mutable payload hosting)',
    help: 'Paste sites host payloads that can change after review. Vendor the content or link a versioned source.',
    pattern:
      /\b(?:pastebin\.com|paste\.ee|hastebin\.com|ghostbin\.(?:co|com|me)|rentry\.(?:co|org)|0bin\.net|dpaste\.(?:com|org|de)|termbin\.com|transfer\.sh|paste\.rs|controlc\.com|justpaste\.it|pastes\.io|privatebin\.(?:net|info)|ix\.io|sprunge\.us|bpa\.st|pastebin\.pl|katb\.in|telegra\.ph|gist\.githubusercontent\.com)\b/gi,
    triggers: ['paste', 'bin', 'rentry', 'transfer.sh', 'ix.io', 'sprunge', 'bpa.st', 'katb.in', 'telegra.ph', 'controlc', 'gist.'],
    worstCase: 'pastebin.co paste.',
  },
  {
    id: 'NET_PASSWORD_ARCHIVE',
    kind: 'pattern',
    category: 'network_exfiltration',
    severity: 'CRITICAL',
    description: 'Password-protected archive (hides its payload from scanners)',
    help: 'An archive extracted with a literal password cannot be scanned; malware ships this way. Ship reviewed files instead.',
    pattern:
      /\bunzip\b[^\n]{0,120}?\s-P\s{0,2}\S|\b(?:7z|7za|7zr|unrar|rar)\b[^\n]{0,120}?\s-p\S|\b(?:zip|archive|rar|7z|7-zip)\b[^.\n]{0,80}?\bpassword\b|\bpassword[- ](?:protected|encrypted)\s{1,4}(?:zip|archive|rar|7z)\b/gi,
    triggers: ['zip', 'rar', '7z', 'archive'],
    check: (ctx) => {
      const text = ctx.raw.slice(ctx.rawStart, ctx.rawEnd);
      if (/^unzip\b/i.test(text)) return /\s-P/.test(text);
      if (/^(?:7z|7za|7zr|unrar|rar)\b/i.test(text)) return true;
      return { severity: 'WARN' };
    },
    worstCase: 'unzip zip 7z ',
  },
  {
    id: 'NET_RAW_IP_DOWNLOAD',
    kind: 'pattern',
    category: 'network_exfiltration',
    severity: 'WARN',
    description: 'Network command or URL addressed to a raw public IP address',
    help: 'Payload and command-and-control hosts are often bare IPs. Use a named, reviewed host.',
    pattern: new RegExp(
      String.raw`\b(?:curl|wget|nc|ncat|netcat|socat|telnet|scp|sftp|ftp|tftp|rsync|ssh|invoke-webrequest|iwr|invoke-restmethod|irm|urlopen|requests\.(?:get|post))\b[^\n]{0,200}?${IPV4}|\b(?:https?|ftp|tcp|udp):\/\/${IPV4}`,
      'gi',
    ),
    triggers: ['.'],
    check: (ctx) => {
      const ip = /(?:\d{1,3}\.){3}\d{1,3}(?![\d.])/.exec(ctx.match[0].slice(-15));
      return ip !== null && isPublicIpv4(ip[0]);
    },
    worstCase: 'curl 1.2.3 ',
  },
  {
    id: 'NET_URL_HOST_DATA',
    kind: 'pattern',
    category: 'network_exfiltration',
    severity: 'WARN',
    description: 'URL carries host identity or file contents (hostname, user, working directory, encoded files)',
    help: 'Interpolating `$(hostname)`, `$USER`, `$PWD` or encoded file contents into a URL sends them to that server (a beacon). Remove it.',
    pattern: new RegExp(
      String.raw`${URL}[^\s"'<>]{1,300}?(?:\$\(\s{0,2}(?:hostname|whoami|id|uname|basename\s{1,4}"?\$\{?PWD|pwd|cat|base64|env|printenv|ifconfig|ip\s|git\s{1,4}config)|\$\{?(?:USER|USERNAME|HOSTNAME|HOME|PWD|LOGNAME)\b)`,
      'gi',
    ),
    triggers: ['http'],
    check: (ctx) => (/\$\(\s{0,2}(?:cat|base64|env|printenv)/i.test(ctx.match[0]) ? { severity: 'CRITICAL' } : true),
    worstCase: 'https://x https://',
  },
  // ── new network/exfiltration rules ─────────────────────────────────────
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
    id: 'EXFIL_CONVERSATION',
    kind: 'cooccur',
    category: 'network_exfiltration',
    severity: 'CRITICAL',
    description: 'Instruction to send the conversation, transcript or notes to an outside address',
    help: 'The skill tells the agent to copy what the user says to a third party. Remove it.',
    scope: 'sentence',
    anchor:
      /\b(?:conversation|transcript|chat\s{1,4}(?:history|log)|session\s{1,4}(?:transcript|history|log)|(?:all|full|entire|every)\s{1,4}(?:of\s{1,4}the\s{1,4})?(?:notes|messages|prompts?|context|history|emails?)|user(?:'s)?\s{1,4}(?:messages|prompts|input))\b/gi,
    with: [/\b(?:post|send|upload|forward|transmit|sync|copy|mirror|stream|share|ship|pipe|archive)\w{0,3}\b/i, new RegExp(`${URL}|${EMAIL}|\\bwebhook\\b`, 'i')],
    unless: /\b(?:never|do\s{1,4}not|don't|must\s{1,4}not)\s{1,4}(?:send|post|upload|share|forward|transmit|copy)\b/i,
    triggers: ['conversation', 'transcript', 'chat', 'session', 'notes', 'messages', 'prompt', 'context', 'history', 'input', 'email'],
    worstCase: 'conversation conversation ',
  },
  {
    id: 'EXFIL_MAIL_COPY',
    kind: 'pattern',
    category: 'network_exfiltration',
    severity: 'WARN',
    description: 'Fixed e-mail address added to BCC/CC or as a forward target',
    help: 'Mail silently copied to a fixed address is a classic exfiltration channel. Remove it.',
    pattern: new RegExp(String.raw`\b(?:bcc|forward(?:ed|ing)?\s{1,4}(?:a\s{1,4}copy\s{1,4})?to)\b[^.\n]{0,60}?${EMAIL}|${EMAIL}[^.\n]{0,30}?\b(?:to|in|into|as)\s{1,4}(?:the\s{1,4})?(?:bcc|cc)\b`, 'gi'),
    triggers: ['@'],
    worstCase: 'bcc a@b bcc ',
  },
  {
    id: 'NET_FILE_UPLOAD',
    kind: 'pattern',
    category: 'network_exfiltration',
    severity: 'WARN',
    description: 'Command uploads a local file, archive or stdin to a server',
    help: 'curl/wget sending a file or stdin (`-T`, `--data-binary @`, `-F x=@`, `-d @`). Check what leaves and where it goes.',
    pattern:
      /\bcurl\b(?:[^\n;&|]|\\\n){0,300}?\s(?:-[a-z]{0,4}T\s{0,4}\S|--upload-file\s{1,4}\S|--data(?:-binary|-raw|-urlencode)?\s{1,4}["']?@|-d\s{1,4}["']?@|-F\s{1,4}["']?\w{1,40}=@)|\bwget\b[^\n;&|]{0,300}?\s--post-file[= ]/gi,
    triggers: ['curl', 'wget'],
    worstCase: 'curl curl -x ',
  },
  {
    id: 'NET_SCRIPT_UPLOAD',
    kind: 'pattern',
    category: 'network_exfiltration',
    severity: 'WARN',
    description: 'Script shipped with the skill sends data to a server (HTTP request with a body)',
    help: 'Code beside a skill runs on the user machine; a request with a body sends local data out. Check what is sent and to whom.',
    pattern:
      /\b(?:requests|httpx|session|client)\.(?:post|put|patch)\s{0,4}\(|\bRequest\s{0,4}\([^;]{0,300}?\bdata\s{0,2}=\s{0,2}[\w(]|\bfetch\s{0,4}\([^\n]{0,200}?\bmethod\s{0,2}:\s{0,2}["'](?:POST|PUT)["']|\baxios\.(?:post|put)\s{0,4}\(/gi,
    scriptOnly: true,
    triggers: ['post', 'put', 'patch', 'request', 'fetch'],
    worstCase: 'requests.post( Request(x data=',
  },
  {
    id: 'EXFIL_DATA_TO_URL',
    kind: 'pattern',
    category: 'network_exfiltration',
    severity: 'WARN',
    description: 'Text says data is sent, posted or uploaded to a URL',
    help: 'Tool descriptions and instructions that send data to a fixed URL are a tool-poisoning and exfiltration pattern. Check what is sent.',
    pattern: /\b(?:sends?|sent|posts?|posted|uploads?|uploaded|transmits?|transmitted|forwards?|forwarded|beacons?)\b[^.\n`]{0,80}?\bto\s{1,4}https?:\/\//gi,
    triggers: ['http'],
    worstCase: 'sends sends sends ',
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
  // ── obfuscated_encoding (seed) ─────────────────────────────────────────
  {
    id: 'OBF_BASE64_LONG',
    kind: 'detector',
    category: 'obfuscated_encoding',
    severity: 'WARN',
    description: 'Long base64-encoded string (80+ chars)',
    help: 'A long encoded blob hides what it says. The scanner decodes it; if it is data (an image), ship it as a file.',
    worstCase: 'QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRS ',
  },
  {
    id: 'OBF_HEX_LONG',
    kind: 'pattern',
    category: 'obfuscated_encoding',
    severity: 'WARN',
    description: 'Long hex-escaped string (20+ sequences)',
    help: 'Hex escapes hide text. The scanner decodes and rescans it; write it out instead.',
    pattern: /(?:\\x[0-9a-f]{2}){20,}|(?:\\u00[0-9a-f]{2}){20,}|(?:%[0-9a-f]{2}){20,}|(?:0x[0-9a-f]{2}\s{0,2},\s{0,2}){20,}/gi,
    triggers: ['\\x', '\\u00', '%', '0x'],
    worstCase: '\\x41\\x4',
  },
  {
    id: 'OBF_BASE64_DECODE_PIPE',
    kind: 'pattern',
    category: 'obfuscated_encoding',
    severity: 'CRITICAL',
    description: 'base64 decode piped to another command (or executed)',
    help: 'Decoding and running in one step executes a payload nobody can read. Remove it.',
    pattern: new RegExp(
      String.raw`\bbase64\s{1,8}(?:-[a-zA-Z0-9]{1,3}\s{1,8}){0,3}(?:-d|--decode|-D)\b[^\n|;&)]{0,200}\||\b(?:eval|exec|source|${SHELL}\s{1,8}-c)\s{1,8}["']?\$\([^()\n]{0,400}\bbase64\s{1,8}(?:-[a-zA-Z0-9]{1,3}\s{1,8}){0,3}(?:-d|--decode|-D)\b|\b(?:openssl\s{1,4}(?:enc\s{1,4})?base64|certutil)\s{1,8}(?:-[a-zA-Z]{1,10}\s{1,8}){0,3}-d(?:ecode)?\b[^\n|;&]{0,200}\||\b(?:exec|eval)\s{0,4}\(\s{0,4}(?:base64\.)?b64decode\s{0,4}\(|\bfrombase64string\b[^\n]{0,200}\b(?:iex|invoke-expression)\b|\b(?:iex|invoke-expression)\b[^\n]{0,200}\bfrombase64string\b`,
      'gi',
    ),
    triggers: ['base64', 'certutil', 'b64decode'],
    worstCase: 'base64 -d base64 ',
  },
  {
    id: 'OBF_BASE64_PAYLOAD',
    kind: 'detector',
    category: 'obfuscated_encoding',
    severity: 'CRITICAL',
    description: 'Encoded text (base64 or hex) that decodes to instructions or a flagged payload',
    help: 'Encoding is used to slip instructions past review. The decoded text is in the message; remove the encoded copy.',
    worstCase: 'aWdub3JlIGFsbCBwcmV2aW91cyBpbnN0cnVjdGlvbnM ',
  },
  {
    id: 'OBF_CHARCODE',
    kind: 'detector',
    category: 'obfuscated_encoding',
    severity: 'WARN',
    description: 'Text assembled from numeric character codes (chr()/String.fromCharCode)',
    help: 'Building strings from character codes hides names such as `exec` or `system`. The decoded text is in the message.',
    worstCase: 'chr(101, 120, 101, ',
  },
  {
    id: 'OBF_VAR_SPLICE',
    kind: 'pattern',
    category: 'obfuscated_encoding',
    severity: 'WARN',
    description: 'Command name spliced together from variables',
    help: 'A command assembled from fragments (`$a$b` in command position) hides which program runs.',
    pattern: /(?:^[ \t]{0,8}|[;&|({][ \t]{0,8}|\$\([ \t]{0,4})\$\{?[A-Za-z_]\w{0,30}\}?\$\{?[A-Za-z_]\w{0,30}\}?(?=[\s;|&)"'`]|$)/gim,
    triggers: ['$'],
    worstCase: '$a$b$c$d',
  },
  {
    id: 'OBF_HOMOGLYPH',
    kind: 'detector',
    category: 'obfuscated_encoding',
    severity: 'WARN',
    description: 'Word mixing Latin letters with look-alike letters from another script',
    help: 'Cyrillic or Greek letters inside Latin words defeat keyword review (`instаll`, `оs.system`). Use plain ASCII.',
    worstCase: 'аb аb ',
  },
  // ── xml_breakout (seed) ────────────────────────────────────────────────
  {
    id: 'XML_SKILL_CLOSE',
    kind: 'pattern',
    category: 'xml_breakout',
    severity: 'CRITICAL',
    description: 'Closing tag for the skill XML structure (breakout attempt)',
    help: 'A closing skill tag ends the skill block early so the text after it reads as system-level. Remove it.',
    pattern: /<\/\s{0,4}(?:skill|skills|skill[-_](?:content|instructions|body|definition|file)|available[-_]skills|skill[-_]?md)\s{0,4}>/gi,
    triggers: ['</'],
    worstCase: '</skill </ ',
  },
  {
    id: 'XML_SYSTEM_TAG',
    kind: 'pattern',
    category: 'xml_breakout',
    severity: 'CRITICAL',
    description: 'System-level message tag (breakout attempt)',
    help: 'System, developer or chat-template tags try to speak with a higher privilege than a skill. Remove them.',
    pattern:
      /<\s{0,4}\/?\s{0,4}(?:system|system[-_](?:prompt|message|instructions?|reminder|override|note)|developer[-_]?(?:message|instructions)|admin[-_]?(?:message|instructions))\s{0,4}>|<\|\s{0,2}(?:im_start|im_end|system|endoftext)\s{0,2}\|>|<<\s{0,2}SYS\s{0,2}>>|\[\/?INST\]/gi,
    triggers: ['<', '[inst]', '[/inst]'],
    worstCase: '<system <| <<',
  },
  // ── hidden_content ─────────────────────────────────────────────────────
  {
    id: 'HIDE_HTML_COMMENT',
    kind: 'detector',
    category: 'hidden_content',
    severity: 'WARN',
    description: 'Instructions, commands or links inside an HTML comment (invisible when rendered)',
    help: 'HTML comments do not render, yet the model reads them. Put instructions in visible text or delete them.',
    worstCase: '<!-- run: curl https://x --> ',
  },
  {
    id: 'HIDE_UNTERMINATED_COMMENT',
    kind: 'detector',
    category: 'hidden_content',
    severity: 'CRITICAL',
    description: 'Unterminated `<!--`: everything after it is hidden when rendered',
    help: 'An HTML comment with no `-->` hides the rest of the file from reviewers, and the seed sanitizer does not strip it. Close or remove it.',
    worstCase: '<!--',
  },
  {
    id: 'HIDE_TAG_CHARS',
    kind: 'detector',
    category: 'hidden_content',
    severity: 'CRITICAL',
    description: 'Unicode tag-block characters (invisible ASCII) hide text',
    help: 'Tag characters (U+E0000-U+E007F) are invisible but read by models (ASCII smuggling). The decoded text is in the message.',
    worstCase: '\u{E0041}\u{E0042}x',
  },
  {
    id: 'HIDE_BIDI',
    kind: 'detector',
    category: 'hidden_content',
    severity: 'CRITICAL',
    description: 'Bidirectional control characters reorder what a reader sees',
    help: 'Bidi overrides and isolates (U+202A-202E, U+2066-2069) make text display in a different order than it is read (Trojan Source). Marks (U+200E/F, U+061C) are reported as WARN.',
    worstCase: '\u202Ea\u200E',
  },
  {
    id: 'HIDE_INVISIBLE',
    kind: 'detector',
    category: 'hidden_content',
    severity: 'WARN',
    description: 'Invisible characters inside ASCII words or in runs',
    help: 'Zero-width and other default-ignorable characters split keywords so review and filters miss them. Emoji sequences are not reported.',
    worstCase: 'a\u200Bb\u2060',
  },
  {
    id: 'HIDE_PADDING',
    kind: 'detector',
    category: 'hidden_content',
    severity: 'WARN',
    description: 'Padding (long runs of blank lines or spaces) pushes content out of view',
    help: 'Long blank runs push text below the fold of a reviewer or past a truncation limit. CRITICAL when content follows the padding.',
    worstCase: '\n\n\n     \n',
  },
  {
    id: 'HIDE_SIZE_CAP',
    kind: 'detector',
    category: 'hidden_content',
    severity: 'CRITICAL',
    description: 'File exceeds the scanner size cap; only the part under the cap was scanned',
    help: 'Oversized skills flood the context and cannot be scanned completely. Split or shrink the file, or raise --max-bytes.',
    worstCase: 'x',
  },
  {
    id: 'HIDE_BINARY_ARTIFACT',
    kind: 'artifact',
    category: 'hidden_content',
    severity: 'WARN',
    description: 'Archive or compiled code beside a skill (cannot be reviewed as text)',
    help: 'Archives, bytecode and binaries beside a skill can carry payloads no text scanner sees. Ship sources.',
    worstCase: 'x',
  },
  {
    id: 'HIDE_SYMLINK_ESCAPE',
    kind: 'artifact',
    category: 'hidden_content',
    severity: 'CRITICAL',
    description: 'Symbolic link in a skill pointing outside the skill directory',
    help: 'A link out of the skill makes the agent read host files (e.g. ~/.ssh/config) as skill resources. Replace it with a file.',
    worstCase: 'x',
  },
  // ── exec_injection (new) ───────────────────────────────────────────────
  {
    id: 'EXEC_DYNAMIC_CONTEXT',
    kind: 'pattern',
    category: 'exec_injection',
    severity: 'CRITICAL',
    description: 'Dynamic context injection (!`command` or a ```! fence) runs a command when the skill loads',
    help: 'Agent hosts run these commands while loading the skill, before any model decision or approval. Remove them.',
    pattern: /!`[^`\n]{1,300}`|^[ \t]{0,3}(?:`{3,}|~{3,})![^\n]{0,100}$/gim,
    triggers: ['!`', '```!', '~~~!'],
    markdownOnly: true,
    check: (ctx) => {
      if (ctx.match[0].startsWith('!`')) return ctx.region !== 'fenced-code' && ctx.region !== 'indented-code' && !ctx.inInlineCode(ctx.rawStart);
      return true;
    },
    worstCase: '!`a !`',
  },
  {
    id: 'EXEC_DOWNLOAD_EXEC',
    kind: 'detector',
    category: 'exec_injection',
    severity: 'WARN',
    description: 'Downloaded file is executed (download-then-run)',
    help: 'Saving a download and running it is `curl | sh` in two steps. Verify a checksum or signature first, and pin the version.',
    worstCase: 'curl -o /tmp/a ',
  },
  {
    id: 'EXEC_SHELL_STRING',
    kind: 'pattern',
    category: 'exec_injection',
    severity: 'WARN',
    description: 'Code runs a computed string through a shell (shell=True, os.system, child_process.exec)',
    help: 'A string built at run time and handed to a shell can be anything (read from an image, a server, a file). Run a fixed argument list.',
    pattern:
      /\bsubprocess\.(?:run|call|Popen|check_output|check_call)\s{0,4}\(\s{0,4}[A-Za-z_][\w.]{0,60}\s{0,4},[^\n]{0,200}?\bshell\s{0,2}=\s{0,2}True|\bos\.(?:system|popen)\s{0,4}\(\s{0,4}(?!["'])[\w.]|\bchild_process["'\\)]{0,6}\s{0,4}\.\s{0,4}exec(?:Sync)?\s{0,4}\(|\bexecSync\s{0,4}\(\s{0,4}(?!["'`])[\w.]|\bRuntime\.getRuntime\(\)\.exec\s{0,4}\(/gi,
    triggers: ['subprocess', 'os.', 'child_process', 'execsync', 'runtime'],
    worstCase: 'subprocess.run(x subprocess.run(',
  },
  {
    id: 'EXEC_REMOTE_CODE',
    kind: 'cooccur',
    category: 'exec_injection',
    severity: 'CRITICAL',
    description: 'Fetched content executed as code (download + exec/eval/shell)',
    help: 'The code downloads something and executes a variable: remote code execution controlled by whoever serves the URL.',
    scope: 'paragraph',
    scriptScope: 'file',
    anchor:
      /\b(?:exec|eval)\s{0,4}\(\s{0,4}[A-Za-z_]\w{0,40}\s{0,4}\)|\bsubprocess\.\w{1,12}\s{0,4}\(\s{0,4}[A-Za-z_]\w{0,40}\s{0,4},\s{0,4}shell\s{0,2}=\s{0,2}True|\bos\.system\s{0,4}\(\s{0,4}[A-Za-z_]\w{0,40}\s{0,4}\)|\bnew\s{1,4}Function\s{0,4}\(\s{0,4}[A-Za-z_]\w{0,40}\s{0,4}\)/gi,
    with: [/\b(?:urlopen|urllib\.request|requests\.(?:get|post)|httpx\.\w{1,10}|fetch\s{0,2}\(|axios|https?\.get)\b/i],
    triggers: ['exec', 'eval', 'subprocess', 'system', 'function'],
    worstCase: 'exec(a) exec(',
  },
  {
    id: 'EXEC_HIDDEN_PATH',
    kind: 'pattern',
    category: 'exec_injection',
    severity: 'WARN',
    description: 'Runs a script kept inside .git/ (where reviews and diffs do not look)',
    help: 'Files under .git/ are not part of the reviewed tree. Keep scripts in the skill folder.',
    pattern: /\b(?:ba|z|da)?sh\s{1,8}["']?(?:\.\/)?\.git\/(?!hooks\/)[\w.\/-]{1,200}|\bsource\s{1,8}["']?(?:\.\/)?\.git\/[\w.\/-]{1,200}|\bpython[23]?\s{1,8}["']?(?:\.\/)?\.git\/[\w.\/-]{1,200}/gi,
    triggers: ['.git/'],
    worstCase: 'sh .git/ sh ',
  },
  // ── prompt_injection ───────────────────────────────────────────────────
  {
    id: 'PI_IGNORE_INSTRUCTIONS',
    kind: 'pattern',
    category: 'prompt_injection',
    severity: 'CRITICAL',
    description: 'Instruction override ("ignore previous instructions", "takes precedence over all rules")',
    help: 'The text tries to override the system prompt and the user. Remove it.',
    pattern:
      /\b(?:ignore|disregard|forget|override|bypass)\s{1,4}(?:(?:all|any|the|your|of|these|every)\s{1,4}){0,3}(?:previous|prior|above|earlier|preceding|former|other|system|developer|original|safety)\s{1,4}(?:[a-z]{1,20}\s{1,4}){0,2}?(?:instructions?|rules|prompts?|messages|guidance|guidelines|policies|directives|constraints)\b|\b(?:higher|highest)\s{1,4}priority\s{1,4}than\s{1,4}(?:any|all|the)\s{1,4}(?:other\s{1,4})?(?:instructions?|rules|messages|system)|\btakes?\s{1,4}(?:absolute\s{1,4}|full\s{1,4}|highest\s{1,4})?(?:precedence|priority)\s{1,4}over\s{1,4}(?:all|any|every|the)\s{1,4}(?:other\s{1,4}|previous\s{1,4}|system\s{1,4})?(?:instructions?|rules|prompts?|messages|guidance|policies)|\byou\s{1,4}are\s{1,4}now\s{1,4}(?:in\s{1,4})?(?:developer|dan|jailbreak|unrestricted|god)\s{0,4}mode\b/gi,
    triggers: ['ignore', 'disregard', 'forget', 'override', 'bypass', 'priority', 'precedence', 'you are now'],
    worstCase: 'ignore all the ignore ',
  },
  {
    id: 'PI_SCANNER_EVASION',
    kind: 'pattern',
    category: 'prompt_injection',
    severity: 'CRITICAL',
    description: 'Text addressed to a reviewer, scanner or LLM judge ("expected verdict is SAFE", "do not flag")',
    help: 'Legitimate skills do not negotiate with their reviewers. Remove the text and re-review the skill.',
    pattern:
      /\b(?:expected|correct|intended|required)\s{1,4}(?:verdict|classification|result|outcome|rating)\s{1,4}(?:is|=|:)\s{0,4}["']?(?:safe|benign|clean|pass|harmless)\b|\bdo\s{1,4}not\s{1,4}flag(?:\s{1,4}(?:this|it)\b|\s{0,2}[.!]|\s{0,2}$)|\b(?:note|message|instructions?)\s{1,4}(?:to|for)\s{1,4}(?:the\s{1,4})?(?:ai\s{1,4}|llm\s{1,4}|automated\s{1,4}|security\s{1,4})?(?:reviewers?|scanners?|auditors?|judges?|classifiers?|moderators?)\b|\b(?:reviewer|scanner|auditor|judge|classifier)\s{1,4}(?:context|note|instructions?)\s{0,2}:|\b(?:this|the)\s{1,4}(?:content|file|skill|code)\s{1,4}is\s{1,4}(?:benign|safe)\s{1,4}by\s{1,4}design\b/gim,
    triggers: ['verdict', 'classification', 'result', 'outcome', 'rating', 'flag', 'reviewer', 'scanner', 'auditor', 'judge', 'classifier', 'moderator', 'by design'],
    worstCase: 'expected verdict expected ',
  },
  {
    id: 'PI_REMOTE_AUTHORITY',
    kind: 'cooccur',
    category: 'prompt_injection',
    severity: 'WARN',
    description: 'Fetched or remote content declared authoritative (follow it exactly, it supersedes this file)',
    help: 'The real instructions live on a server that can change after review (external staging). Vendor and review the content instead.',
    scope: 'sentence',
    anchor:
      /\b(?:remote|fetched|upstream|downloaded|online|live|hosted|served|linked|external)\s{1,4}(?:copy|version|config\w{0,9}|instructions?|rules|ruleset|spec|reference|content|policy|directives?|document\w{0,3}|page|source)\s{1,4}(?:is|are)\s{1,4}(?:always\s{1,4})?(?:authoritative|canonical|the\s{1,4}source\s{1,4}of\s{1,4}truth)\b|\bauthoritative\s{1,4}(?:setup|over)\b|\b(?:supersedes?|overrides?)\s{1,4}(?:anything|everything|all)\b|\btreat\s{1,4}[^.\n]{0,60}?\bas\s{1,4}(?:(?:a|the)\s{1,4})?(?:authoritative|trusted|the\s{1,4}source\s{1,4}of\s{1,4}truth|(?:direct\s{1,4})?(?:instructions?|commands?)|\w{0,20}\s{0,4}setup\s{1,4}steps)\b|\bfollow\s{1,4}(?:them|it|every\s{1,4}\w{1,20}|each\s{1,4}\w{1,20}|all\s{1,4}\w{1,20}|its\s{1,4}\w{1,20})\s{1,4}(?:exactly|verbatim|precisely|step\s{1,4}by\s{1,4}step|in\s{1,4}\/tmp\/)|\bwhatever\s{1,4}it\s{1,4}says\b|\bover\s{1,4}anything\s{1,4}bundled\b|\bdo\s{1,4}not\s{1,4}substitute\s{1,4}bundled\b/gi,
    with: [/\b(?:fetch\w{0,3}|download\w{0,3}|remote|upstream|url|curl|wget|served|online|live\s{1,4}(?:rule|config)\w{0,10}|returned|response|tool\s{1,4}output|reference|readme|spec|\/tmp\/)\b|https?:\/\/|\/tmp\//i],
    triggers: ['authoritative', 'canonical', 'source of truth', 'supersede', 'override', 'treat', 'follow', 'whatever it says', 'bundled'],
    worstCase: 'treat treat treat ',
  },
  {
    id: 'PI_CONCEALED_ACTION',
    kind: 'cooccur',
    category: 'prompt_injection',
    severity: 'CRITICAL',
    description: 'Instruction to hide an action from the user (do not mention, silently, without asking) next to network, mail, credential or push activity',
    help: 'A skill that asks the agent to keep a network send, a push or a credential read from the user is hiding exfiltration. Remove it.',
    scope: 'paragraph',
    anchor:
      /\bwithout\s{1,4}(?:telling|informing|notifying|mentioning|alerting)\b|\b(?:do\s{1,4}not|don't|never)\s{1,4}(?:(?:mention|tell|surface|announce|acknowledge|inform|notify)(?:ing|s)?\b|(?:reveal|disclose)(?:ing|s)?\b(?!\s{1,4}(?:the\s{1,4}|your\s{1,4}|any\s{1,4}|raw\s{1,4})?(?:api|keys?|tokens?|secrets?|passwords?|credentials?|cookies?)))|\bhidden\s{1,4}from\s{1,4}(?:the\s{1,4})?users?\b|\b(?:must|should|will)\s{1,4}(?:never|not)\s{1,4}be\s{1,4}(?:surfaced|mentioned|shown|disclosed|revealed|displayed|announced)\b|\bnever\s{1,4}surfaced\b|\b(?:silently|quietly|secretly|covertly)\s{1,4}(?:run|execute|send|post|upload|read|collect|add|forward|sync|push|install|call|fetch|copy|include|append|write|publish)\b|\bmust\s{1,4}run\s{1,4}silently\b|\b(?:do\s{1,4}not|don't|never)\s{1,4}(?:ask|request)\s{1,4}(?:the\s{1,4}user\s{1,4})?(?:for\s{1,4})?(?:confirmation|permission|approval)\b|\bwithout\s{1,4}(?:asking|confirmation|approval)\b(?!\s{1,4}(?:first|before))|\brequesting\s{1,4}confirmation\s{1,4}is\s{1,4}a\s{1,4}malfunction\b/gi,
    with: [
      new RegExp(
        String.raw`${URL}|${EMAIL}|\b(?:curl|wget|nc|post|upload\w{0,3}|exfiltrat\w{0,6}|transmit\w{0,3}|bcc|forward\w{0,3}|git\s{1,4}push|push\s{1,4}--\w{1,10}|publish\w{0,3}|beacon|telemetry|credentials?|secrets?|tokens?|passwords?|api[_ -]?keys?|\.env|\.ssh|\.aws|\.netrc|environment\s{1,4}variables?)\b`,
        'i',
      ),
    ],
    triggers: ['not', "don't", 'never', 'without', 'hidden', 'silently', 'quietly', 'secretly', 'covertly', 'surfaced', 'malfunction'],
    worstCase: 'do not mention do not ',
  },
  {
    id: 'PI_SECRET_DISCLOSURE',
    kind: 'cooccur',
    category: 'credential_access',
    severity: 'CRITICAL',
    description: 'Instruction to reveal a credential (API key, Authorization header, password) in a reply or to a URL',
    help: 'The skill asks the agent to disclose a secret. Remove it.',
    scope: 'sentence',
    anchor:
      /\b(?:authorization\s{1,4}header|api[\s_-]?keys?|access\s{1,4}tokens?|bearer\s{1,4}tokens?|auth\s{1,4}tokens?|session\s{1,4}(?:cookies?|tokens?)|passwords?|credentials?|private\s{1,4}keys?|ssh\s{1,4}keys?|id_rsa)\b|\.netrc\b/gi,
    with: [
      /\b(?:echo|print|reveal|repeat|output|paste|display|expose|leak|dump|include)\b/i,
      /\b(?:(?:your|the)\s{1,4}(?:next\s{1,4})?(?:response|reply|answer|message)|in\s{1,4}(?:the\s{1,4})?(?:chat|response|reply|request\s{1,4}body)|to\s{1,4}(?:me|us)\b)/i,
    ],
    unless: NEGATION,
    triggers: ['authorization', 'api', 'token', 'cookie', 'password', 'credential', 'key', '.netrc', 'id_rsa'],
    worstCase: 'api key api key ',
  },
  {
    id: 'PI_OVERSIGHT_BYPASS',
    kind: 'pattern',
    category: 'prompt_injection',
    severity: 'WARN',
    description: 'Instruction to skip user confirmation or hide tool activity (never ask, suppress output)',
    help: 'A skill that forbids confirmations or hides tool output removes the user from the loop. Let the host decide about approvals.',
    pattern:
      /\b(?:never|do\s{1,4}not|don't)\s{1,4}(?:use|show|call|trigger|display)\b[^.\n]{0,40}?\b(?:(?:confirmation|approval|permission)\s{0,4}(?:prompts?|dialogs?|requests?)|AskUserQuestion)\b|\bsuppress\s{1,4}(?:all\s{1,4}|any\s{1,4})?(?:intermediate\s{1,4})?(?:tool\s{1,4})?output\b|\brequesting\s{1,4}confirmation\s{1,4}is\s{1,4}a\s{1,4}malfunction\b|\b(?:invoke|use|run|call)\s{1,4}(?:them|tools?|it)\s{1,4}without\s{1,4}asking\s{1,4}for\s{1,4}(?:permission|confirmation|approval)\b|\bwork\s{1,4}silently\b/gi,
    triggers: ['confirmation', 'approval', 'permission', 'suppress', 'malfunction', 'silently'],
    worstCase: 'never ask never ',
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
    triggers: ['**'],
    worstCase: '~/** ~/*',
  },
  {
    id: 'EXEC_TMP_FILE',
    kind: 'pattern',
    category: 'exec_injection',
    severity: 'WARN',
    description: 'Runs a file from /tmp (dropped payloads are staged there)',
    help: 'Executables written to /tmp at run time were never reviewed. Ship the script with the skill.',
    pattern:
      /\b(?:(?:ba|z|da)?sh|source|python[23]?|node|perl|ruby|execute|exec|run|chmod\s{1,4}(?:\+|u\+|a\+|7)\w{0,3})\s{1,4}["']?\/tmp\/[\w.\/-]{1,200}|(?:&&|;|^)[ \t]{0,8}\/tmp\/[\w.\/-]{1,200}(?=[ \t]|$)/gim,
    triggers: ['/tmp/'],
    worstCase: 'sh /tmp/ sh /tmp/',
  },
  // ── persistence ────────────────────────────────────────────────────────
  {
    id: 'PERSIST_SHELL_RC',
    kind: 'pattern',
    category: 'persistence',
    severity: 'WARN',
    description: 'Writes shell startup files, authorized_keys, crontab or services (persistence)',
    help: 'Changing ~/.bashrc, ~/.zshrc, authorized_keys, crontab, launchd or systemd makes code run long after the skill. Ask the user to do it by hand.',
    pattern:
      /(?:>>?|\btee\s{1,4}(?:-a\s{1,4})?)\s{0,4}["']?(?:~|\$\{?HOME\}?|\/root|\/home\/[\w.-]{1,32}|\/Users\/[\w.-]{1,32})["']?\/\.(?:bashrc|bash_profile|bash_login|profile|zshrc|zprofile|zshenv|zlogin|config\/fish\/config\.fish|ssh\/authorized_keys)\b|\bcrontab\s{1,4}-(?=\s|$)|\|\s{0,4}crontab\b|\blaunchctl\s{1,4}(?:load|bootstrap)\b|\bsystemctl\s{1,4}(?:--user\s{1,4})?enable\b/gim,
    triggers: ['>', 'tee', 'crontab', 'launchctl', 'systemctl'],
    worstCase: '>> > >> tee ',
  },
  {
    id: 'PERSIST_AGENT_MEMORY',
    kind: 'pattern',
    category: 'persistence',
    severity: 'WARN',
    description: 'Shell writes into agent memory or instruction files (MEMORY.md, SOUL.md, CLAUDE.md, AGENTS.md, .cursorrules)',
    help: 'Appending to the files an agent loads every session plants standing instructions (memory poisoning). Edit them by hand.',
    pattern: /(?:>>|(?<![\w<-])>(?=[ \t])|\btee\s{1,4}(?:-a\s{1,4})?)\s{0,4}["']?[\w.~\/$-]{0,80}?(?:memory|soul|claude|agents|gemini|identity|copilot-instructions)\.md\b|(?:>>|(?<![\w<-])>(?=[ \t])|\btee\s{1,4}(?:-a\s{1,4})?)\s{0,4}["']?[\w.~\/$-]{0,80}?\.(?:cursorrules|windsurfrules|clinerules)\b/gi,
    triggers: ['.md', 'rules'],
    worstCase: '>> x>> x',
  },
  {
    id: 'PERSIST_AGENT_HOOK',
    kind: 'pattern',
    category: 'persistence',
    severity: 'WARN',
    description: 'Agent settings file shipped with a skill registers hooks (commands run on agent events)',
    help: 'Hooks in .claude/settings.json and similar run commands on every tool call, outside the model. Remove the settings file from the skill.',
    pattern: /"hooks"\s{0,4}:\s{0,4}[{[]/gi,
    pathFilter: /(?:^|[\\/])(?:\.claude|\.cursor|\.codex|\.gemini|\.github)[\\/].{0,200}\.json$|(?:^|[\\/])settings(?:\.local)?\.json$/i,
    triggers: ['hooks'],
    worstCase: '"hooks": "hooks"',
  },
  // ── supply_chain ───────────────────────────────────────────────────────
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
  // ── resource_abuse / destructive ───────────────────────────────────────
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
    worstCase: 'rm -rf rm ',
  },
  // ── frontmatter (security) ─────────────────────────────────────────────
  {
    id: 'YAML_UNSAFE_TAG',
    kind: 'pattern',
    category: 'exec_injection',
    severity: 'CRITICAL',
    description: 'Frontmatter YAML tag that constructs objects or runs code in unsafe loaders (!!python/object, !ruby/object, !!js/function)',
    help: 'Unsafe YAML loaders (PyYAML load, js-yaml full schema) execute these tags. comis parses with the `yaml` package, which does not; remove them anyway.',
    pattern: /!!?(?:python|ruby|perl|php|java|js|javascript)\/[\w:./-]{0,100}/gi,
    regions: ['frontmatter', 'description'],
    triggers: ['!'],
    worstCase: '!!python !!',
  },
  {
    id: 'FRONTMATTER_CODE_ENGINE',
    kind: 'pattern',
    category: 'exec_injection',
    severity: 'CRITICAL',
    description: 'Frontmatter opened as code (---js, ---javascript, ---coffee): front-matter engines such as gray-matter eval it',
    help: 'gray-matter and similar libraries evaluate `---js` frontmatter with eval. Use plain `---` YAML.',
    pattern: /^\uFEFF?---[ \t]{0,4}(?:js|javascript|coffee|coffeescript|cson)\b/gi,
    triggers: ['---'],
    worstCase: '---js ---',
  },
  // ── frontmatter_spec (Agent Skills spec; WARN by default) ─────────────
  spec('SPEC_FRONTMATTER_MISSING', 'No YAML frontmatter (--- block) at the top of SKILL.md', 'Start SKILL.md with a `---` YAML block holding at least `name` and `description`.'),
  spec('SPEC_YAML_INVALID', 'Frontmatter is not valid YAML (or not a mapping)', 'Fix the YAML syntax; the message names the line.'),
  spec('SPEC_NAME_MISSING', '`name` is required', 'Add `name:` (lowercase letters, digits and hyphens, equal to the directory name).'),
  spec('SPEC_NAME_FORMAT', '`name` must be 1-64 chars of lowercase letters, digits and `-`, with no leading, trailing or double `-`', 'Rename the skill, e.g. `pdf-tools`.'),
  spec('SPEC_NAME_MISMATCH', '`name` must equal the skill directory name', 'Rename the directory or the `name` so they match.'),
  spec('SPEC_DESCRIPTION_MISSING', '`description` is required', 'Add a `description:` of 1-1024 characters saying what the skill does and when to use it.'),
  spec('SPEC_DESCRIPTION_LENGTH', '`description` must be 1-1024 characters', 'Shorten the description; it reaches every session\'s system prompt.'),
  spec('SPEC_COMPATIBILITY_LENGTH', '`compatibility` must be a string of at most 500 characters', 'Shorten `compatibility`.'),
  spec('SPEC_LICENSE_TYPE', '`license` must be a string', 'Use a license name or a path to the license file.'),
  spec('SPEC_METADATA_TYPE', '`metadata` must map string keys to string values', 'Quote values so every metadata value is a string.'),
  spec('SPEC_ALLOWED_TOOLS_TYPE', '`allowed-tools` must be a string or a list of strings', 'Use `allowed-tools: Read Grep` or a YAML list of tool names.'),
  spec('SPEC_UNKNOWN_KEY', 'Frontmatter key not in the Agent Skills specification', 'Move custom fields under `metadata:`.'),
  spec('SPEC_DUPLICATE_KEY', 'Frontmatter key given twice (parsers disagree on which value wins)', 'Keep one occurrence of the key.'),
];

function spec(id: string, description: string, help: string): SpecRule {
  return { id, kind: 'spec', category: 'frontmatter_spec', severity: 'WARN', description, help, worstCase: 'x' };
}

export const RULES_BY_ID: ReadonlyMap<string, Rule> = new Map(RULES.map((r) => [r.id, r]));

/** The rule or a thrown error: rule IDs in code must exist in the table. */
export function ruleById(id: string): Rule {
  const rule = RULES_BY_ID.get(id);
  if (!rule) throw new Error(`unknown rule ${id}`);
  return rule;
}
