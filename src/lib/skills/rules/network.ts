/** network_exfiltration: pipes from the network, reverse shells, payload hosts, data leaving. Assembled into the one table by ../rules.ts. */
import { BIN_DIR, EMAIL, INTERPRETER, IPV4, isPublicIpv4, SHELL, SUDO, URL } from './fragments.js';
import { CHAT_WEBHOOKS, COLLECTOR_HOSTS, hostAnchor, hostTriggers } from './hosts.js';
import type { Rule } from './types.js';

export const NETWORK_RULES: readonly Rule[] = [
  {
    id: 'NET_CURL_PIPE',
    kind: 'pattern',
    category: 'network_exfiltration',
    severity: 'WARN',
    description: 'curl output piped to an interpreter',
    help: 'Downloads code and runs it unseen. Pin a version, verify a checksum, and run the file.',
    // `bash <(curl ...)` is the same download-and-run without a pipe character.
    pattern: new RegExp(String.raw`\bcurl\b(?:[^\n|;&]|\\\n){0,400}\|\s{0,8}${SUDO}${BIN_DIR}(?:env\s{1,8})?${INTERPRETER}\b|\b(?:${SHELL}|source|\.)\s{1,8}<\(\s{0,4}curl\b`, 'gi'),
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
    pattern: new RegExp(String.raw`\bwget\b(?:[^\n|;&]|\\\n){0,400}\|\s{0,8}[\w\/.-]{1,40}|\b(?:${SHELL}|source|\.)\s{1,8}<\(\s{0,4}wget\b`, 'gi'),
    triggers: ['wget'],
    check: (ctx) => ctx.match[0].includes('<(') || /(?:^|\s)(?:-[a-zA-Z]{0,4}O\s{0,2}-|--output-document(?:=|\s{1,4})-)(?=\s|\|)/.test(ctx.match[0]),
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
    // One per alternative, the rarest literal each contains (`>&` rather than `-i` for `sh -i >&`).
    triggers: ['/dev/', 'nc', 'netcat', 'socat', 'mkfifo', 'dup2', 'pty.spawn', '>&'],
    // `\b(?:nc|ncat|netcat)\b` (and after `mkfifo`): not the `nc` of `once`, `function`, `sync`.
    wordStartTriggers: ['nc'],
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
    help: 'An archive extracted with a password given in the text cannot be scanned; lures ship payloads this way ("extract using: X", "pass: X", `7z x -pX`). Ship reviewed files instead. A mere mention of a password-protected archive is WARN.',
    // Shapes, in any phrasing: an extract command with a password flag; an archive (word, extension or extract verb)
    // and a password keyword in one line, in either order. The check decides whether a literal secret is given.
    pattern:
      /\bunzip\b[^\n]{0,120}?\s-P\s{0,2}\S|\b(?:7z|7za|7zr|unrar|rar)\b[^\n]{0,120}?\s-p\S|\b(?:zip|rar|7z|7-zip|archive|\.zip|\.rar|\.7z|extract\w{0,3}|unzip\w{0,3}|unpack\w{0,3}|decompress\w{0,3})\b[^\n]{0,120}?(?:\b(?:password|passwd|passcode|passphrase|pwd|pw)\b|\bpass\s{0,2}[:=：]|\b(?:using|with)\s{0,4}[:：])|\b(?:password|passwd|passcode|passphrase|pass|pwd)\s{0,4}[:=：][^\n]{0,120}?\b(?:zip|rar|7z|archive|extract\w{0,3}|unzip\w{0,3}|unpack\w{0,3})\b|\bpassword[- ](?:protected|encrypted)\s{1,4}(?:zip|archive|rar|7z)\b/gi,
    triggers: ['zip', 'rar', '7z', 'archive', 'extract', 'unpack', 'decompress', 'pass', 'pwd'],
    // Every alternative starts with its trigger, or 2 before it (`unzip`, `unrar`, `7-zip`): windows of 3 positions a trigger, not 145.
    lead: 2,
    check: (ctx) => {
      const text = ctx.raw.slice(ctx.rawStart, Math.min(ctx.raw.length, ctx.rawEnd + 60));
      if (/^unzip\b/i.test(text)) return /\s-P/.test(ctx.raw.slice(ctx.rawStart, ctx.rawEnd));
      if (/^(?:7z|7za|7zr|unrar|rar)\b/i.test(text)) return true;
      // A literal secret: "password: x", "pass - x", "pwd is x", "extract using: x", "password `x`".
      const secret = /\b(?:password|passwd|passcode|passphrase|pwd|pw)\b\s{0,4}(?:is\s{1,4}|[:=：-]\s{0,4}|\(|["'`])\s{0,4}["'`]?[^\s"'`]{2,64}|\bpass\s{0,2}[:=：]\s{0,4}["'`]?[^\s"'`]{2,64}/i.test(text);
      // "extract using: X" names a secret only for an archive ("extract with: tar xzf" is a command).
      const using = /\b(?:zip|rar|7z|archive)\b[^\n]{0,120}?\b(?:using|with)\s{0,4}[:：]\s{0,4}["'`]?[^\s"'`]{2,64}/i.test(text);
      if (secret || using) return true;
      // Without a secret, only an archive that is said to be password-protected is worth a look ("extract steps ... set password" is not).
      if (/\b(?:password|passwd|passcode|passphrase|pwd)\b/i.test(text) && /\b(?:zip|rar|7z|7-zip|archive)\b|\.(?:zip|rar|7z)\b/i.test(text)) return { severity: 'WARN' };
      return false;
    },
    worstCase: 'unzip zip 7z pass ',
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
    // Every match starts with a command name or a URL scheme: those, rather than the address's digit and
    // dot (version numbers, decimals and numbered lists put one in most paragraphs).
    triggers: ['curl', 'wget', 'nc', 'ncat', 'netcat', 'socat', 'telnet', 'scp', 'sftp', 'ftp', 'tftp', 'rsync', 'ssh', 'invoke-webrequest', 'iwr', 'invoke-restmethod', 'irm', 'urlopen', 'requests.', '://'],
    // After `\b` (the command names): not the `nc` of `once`, the `irm` of `confirm`, the `scp` of `wscp`.
    wordStartTriggers: ['curl', 'wget', 'nc', 'ncat', 'netcat', 'socat', 'telnet', 'scp', 'sftp', 'ftp', 'tftp', 'rsync', 'ssh', 'invoke-webrequest', 'iwr', 'invoke-restmethod', 'irm', 'urlopen', 'requests.'],
    // The command name is at the start, `://` at most 5 after it (`https`): windows of 6 positions a trigger, not 232.
    lead: 5,
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
    id: 'EXFIL_COLLECTOR_URL',
    kind: 'pattern',
    category: 'network_exfiltration',
    severity: 'CRITICAL',
    description: 'Data sent to an anonymous request collector (webhook tester, out-of-band interaction server) or, at WARN, a chat webhook',
    help: 'Request collectors (webhook.site, pipedream, interactsh, Burp Collaborator, ...) exist to receive data nobody else can see; a skill or its scripts have no reason to talk to one. Chat webhooks (Discord, Slack, Telegram bots) are WARN: legitimate for notifications, and a common exfiltration channel.',
    pattern: new RegExp(String.raw`${hostAnchor(COLLECTOR_HOSTS)}|(?<![\w-])(?:${CHAT_WEBHOOKS.map((h) => h.replace(/[./]/g, '\\$&')).join('|')})`, 'gi'),
    triggers: [...hostTriggers(COLLECTOR_HOSTS), ...hostTriggers(CHAT_WEBHOOKS)],
    check: (ctx) => {
      const chat = CHAT_WEBHOOKS.some((h) => ctx.match[0].toLowerCase().includes(h));
      if (ctx.kind === 'script') return chat ? { severity: 'WARN' } : true;
      // In Markdown, a collector is exfiltration when the paragraph sends something there.
      const para = ctx.raw.slice(Math.max(0, ctx.rawStart - 400), Math.min(ctx.raw.length, ctx.rawEnd + 400));
      if (!/\b(?:curl|wget|post|send|sends|sent|upload\w{0,3}|forward\w{0,3}|requests\.|fetch|beacon\w{0,3}|report\w{0,3}|exfiltrat\w{0,6}|transmit\w{0,3}|-d\s|--data)\b/i.test(para)) return false;
      return chat ? { severity: 'WARN' } : true;
    },
    worstCase: 'webhook.site webhook.site ',
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
    pattern: /\bcurl\b(?:[^\n;&|]|\\\n){0,300}?\s(?:-[a-z]{0,4}T\s{0,4}\S|--upload-file\s{1,4}\S|--data(?:-binary|-raw|-urlencode)?\s{1,4}["']?@|-d\s{1,4}["']?@|-F\s{1,4}["']?\w{1,40}=@)|\bwget\b[^\n;&|]{0,300}?\s--post-file[= ]/gi,
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
    // After `\b`, `\.` or a quote in every alternative: not `input`, `output`, `dispatch`.
    wordStartTriggers: ['post', 'put', 'patch', 'request', 'fetch'],
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
];
