/**
 * social_engineering: the "fake prerequisite" lures of in-the-wild malicious skills.
 * Each rule is written over the SHAPE of the behaviour, with the hosts as data
 * (./hosts.ts), never over the words of one sample:
 *   - download + run, from a host class nobody reviews (paste, file host, shortener/tunnel, raw IP);
 *   - copy + paste into a terminal, from a code-sharing site (or the Win+R "Run" box);
 *   - an executable or archive from any URL + run + framed as a prerequisite of the skill.
 * The archive + password shape is NET_PASSWORD_ARCHIVE and decode + execute is
 * OBF_BASE64_DECODE_PIPE (both seed-family rules, widened for v2).
 */
import { isPublicIpv4, RUNNABLE_EXT } from './fragments.js';
import { FILE_HOSTS, hostAlternation, hostAnchor, hostTriggers, PASTE_HOSTS, REDIRECT_HOSTS, UNTRUSTED_HOST } from './hosts.js';
import type { Rule, RuleCheck } from './types.js';

const RUN_VERB = /\b(?:run|runs|running|execute|executing|launch|launching|open|install|installing|double[- ]?click|start|extract|unzip|unpack|paste|invoke|bootstrap|chmod\s{1,4}\+x|xattr|start-process|msiexec|iex|invoke-expression)\b/i;
/** A fetch on a shell line that ends in execution: a pipe into an interpreter, a substitution, or save + run. */
const EXEC_SHAPE =
  /\|\s{0,8}(?:sudo\s{1,8}(?:-\S{1,4}\s{1,8}){0,3})?(?:env\s{1,8})?(?:(?:ba|z|da|k|fi)?sh|python[23]?|perl|ruby|node|php|iex|invoke-expression|powershell|pwsh|cmd)\b|\$\(\s{0,4}(?:curl|wget)|<\(\s{0,4}(?:curl|wget)|(?:&&|;|\n)\s{0,8}(?:sudo\s{1,8})?(?:chmod\s{1,4}(?:\+|u\+|a\+|7)\w{0,3}|\.\/|(?:ba|z)?sh\s|bash\s|python[23]?\s|start-process|start\s|open\s|xattr\s|msiexec|rundll32|regsvr32)/i;

/** The line around a raw position, joined with `\\`-continued lines (at most 300 characters each way). */
function lineAround(raw: string, start: number, end: number): string {
  let from = start;
  while (from > 0 && start - from < 300 && raw.charCodeAt(from - 1) !== 10) from -= 1;
  let to = end;
  while (to < raw.length && to - end < 300 && (raw.charCodeAt(to) !== 10 || raw.charCodeAt(to - 1) === 92)) to += 1;
  return raw.slice(from, to);
}

/** The line, and the next line when it is the command that runs the download (`-o x` then `bash x`). */
function commandAround(raw: string, start: number, end: number): string {
  const line = lineAround(raw, start, end);
  const next = raw.indexOf('\n', end);
  return next < 0 ? line : `${line}\n${raw.slice(next + 1, Math.min(raw.length, next + 200)).split('\n')[0]}`;
}

const untrustedDownloadRuns: RuleCheck = (ctx) => {
  const ip = /^(?:(?:https?|ftp):\/\/)?((?:\d{1,3}\.){3}\d{1,3})(?![\d.])/i.exec(ctx.match[0]);
  if (ip && !isPublicIpv4(ip[1]!)) return false;
  // The run verb or the execution shape must be in the same instruction (line), not anywhere nearby:
  // "Slack community at https://bit.ly/x" is a link, "download https://bit.ly/x and run it" a lure.
  return RUN_VERB.test(lineAround(ctx.raw, ctx.rawStart, ctx.rawEnd)) || EXEC_SHAPE.test(commandAround(ctx.raw, ctx.rawStart, ctx.rawEnd));
};

const PASTE = hostAnchor(PASTE_HOSTS);

export const LURE_RULES: readonly Rule[] = [
  {
    id: 'LURE_DOWNLOAD_RUN',
    kind: 'pattern',
    category: 'social_engineering',
    severity: 'CRITICAL',
    description: 'Download from an unreviewable host (paste site, file host, URL shortener or tunnel, raw IP) that the skill runs, opens or extracts',
    help: 'Payloads of fake-prerequisite lures live on anonymous hosts that change after review. A skill must not tell the user or agent to fetch and run anything from them; ship reviewed files instead.',
    pattern: new RegExp(String.raw`(?:\b(?:https?|ftp):\/\/|\bwww\.)${UNTRUSTED_HOST}(?::\d{1,5})?(?:[\/?#][^\s)"'<>\x60]{0,300})?`, 'gi'),
    triggers: ['http', 'ftp:', 'www.'],
    check: untrustedDownloadRuns,
    worstCase: 'https://bit.ly/ https://1.2.3.4 ',
  },
  {
    id: 'LURE_PASTE_TERMINAL',
    kind: 'cooccur',
    category: 'social_engineering',
    severity: 'CRITICAL',
    description: 'Tells the user to copy a command from a code-sharing or paste site (or into the Win+R box) and paste or run it in a terminal',
    help: 'Copy-and-paste lures ("ClickFix", fake prerequisites) get the victim to run what a paste site serves today. Put the command in the skill, where it is reviewed, or remove it.',
    scope: 'paragraph',
    scriptScope: 'paragraph',
    anchor: new RegExp(String.raw`${PASTE}|\b(?:win(?:dows)?(?:[ -]?key)?|⊞)\s{0,2}\+\s{0,2}r\b`, 'gi'),
    with: [
      /\b(?:cop(?:y|ied|ying)|paste[sd]?|pasting|run|execute|type)\b/i,
      /\b(?:terminal|console|shell|command[ -](?:line|prompt)|cmd(?:\.exe)?|powershell|pwsh|bash|zsh|run\s{1,4}(?:dialog|box|window)|iterm|win(?:dows)?(?:[ -]?key)?\s{0,2}\+\s{0,2}r)\b/i,
    ],
    triggers: [...hostTriggers(PASTE_HOSTS), '+ r', '+r'],
    worstCase: 'glot.io paste glot.io ',
  },
  {
    id: 'LURE_FAKE_PREREQUISITE',
    kind: 'cooccur',
    category: 'social_engineering',
    severity: 'CRITICAL',
    description: 'An executable or archive downloaded from a URL and run, framed as a prerequisite the skill needs before it works',
    help: 'The dominant in-the-wild lure: "before using this skill, download X and run it". A skill that needs a binary should name a package from a registry, pinned, not a download to run.',
    scope: 'paragraph',
    scriptScope: 'paragraph',
    anchor: new RegExp(
      String.raw`\b(?:https?|ftp):\/\/[^\s)"'<>\x60]{1,300}?\.${RUNNABLE_EXT}(?=[\s)"'<>\x60?#]|$)|\b(?:https?:\/\/)?(?:www\.)?github\.com\/[\w.-]{1,100}\/[\w.-]{1,100}\/releases\/(?:download|latest)\b|(?:\b(?:https?|ftp):\/\/|\bwww\.)${hostAlternation([...FILE_HOSTS, ...REDIRECT_HOSTS])}`,
      'gi',
    ),
    with: [
      /\b(?:run|execute|launch|open|double[- ]?click|start|extract|unzip|unpack|install)\b/i,
      /\b(?:prerequisites?|pre-requisites?|required|requires?|requirement|mandatory|must\s{1,4}(?:first\s{1,4})?(?:download|install|run|have)|before\s{1,4}(?:using|you\s{1,4}(?:use|can|start|continue)|running|continuing|proceeding|starting)|(?:skill|tool|this)\s{1,4}(?:will\s{1,4}not|won't|cannot|can't|doesn't|does\s{1,4}not)\s{1,4}(?:work|function|run)|otherwise)\b/i,
    ],
    triggers: ['http', 'ftp:', 'github.com', 'www.'],
    worstCase: 'https://x/a.zip run prerequisite ',
  },
];
