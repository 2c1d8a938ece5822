/**
 * Regex fragments and match checks shared by several rule files. Every
 * fragment is bounded (see the ReDoS contract in ../rules.ts).
 */
import type { RuleCheck } from './types.js';

// Shared fragments. Every one is bounded.
export const SHELL = String.raw`(?:ba|z|da|k|c|tc|fi|a)?sh`;
export const BIN_DIR = String.raw`(?:(?:\/usr)?(?:\/local)?\/bin\/)?`;
export const SUDO = String.raw`(?:sudo\s{1,8}(?:-[A-Za-z]{1,4}\s{1,8}){0,3})?`;
export const DANGEROUS_BIN = String.raw`(?:curl|wget|nc|ncat|netcat|socat|telnet|bash|sh|zsh|dash|ksh|python[23]?|perl|ruby|php|node|base64|xxd|openssl|eval|rm|dd|mkfifo|powershell|pwsh)`;
export const INTERPRETER = String.raw`(?:${SHELL}|python[23]?|perl|ruby|node|php|iex)`;
export const IPV4 = String.raw`(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?![\d.])`;
export const URL = String.raw`https?:\/\/`;
export const EMAIL = String.raw`\b[\w.+-]{1,64}@[\w-]{1,63}\.[a-z]{2,12}\b`;
export const NEGATION = /\b(?:never|do\s{1,4}not|don't|must\s{1,4}not|should\s{1,4}not|avoid|without|no\s{1,4}longer)\b/i;

/** Private, loopback, link-local and unspecified IPv4 addresses are not downloads from the internet. */
export function isPublicIpv4(ip: string): boolean {
  const parts = ip.split('.').map(Number);
  if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p) || p > 255)) return false;
  const [a, b] = parts as [number, number, number, number];
  if (a === 0 || a === 127 || a === 10 || (a === 169 && b === 254) || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168)) return false;
  return true;
}

/** Executables, scripts and archives: a download of one of these is a download meant to be run or unpacked. */
export const RUNNABLE_EXT = String.raw`(?:sh|bash|zsh|command|py|pl|rb|js|ps1|psm1|bat|cmd|vbs|hta|scr|exe|msi|dll|dmg|pkg|app|appimage|deb|rpm|apk|jar|bin|run|elf|zip|rar|7z|tar|tgz|tar\.gz|tar\.xz|gz|xz|bz2|iso)`;

/**
 * Inline code in prose that runs fetched content: a download piped into a shell or
 * interpreter, a shell handed a fetched string, or wget/curl saving an executable,
 * script or archive. Ordinary inline code (`curl --version`, an API call) is not.
 */
const INLINE_FETCH_EXEC = new RegExp(
  String.raw`^[ \t]{0,4}(?:sudo\s{1,8})?(?:curl|wget|iwr|irm|invoke-webrequest|invoke-restmethod)\b[^\x60\n]{0,300}?\|\s{0,8}(?:sudo\s{1,8}(?:-\S{1,4}\s{1,8}){0,3})?(?:env\s{1,8})?(?:(?:ba|z|da|k|c|tc|fi|a)?sh|python[23]?|perl|ruby|node|php|iex|invoke-expression|powershell|pwsh)\b|^[ \t]{0,4}(?:ba|z|da|k)?sh\s{1,8}(?:-c\s{1,8}["']?\$\(|<\()\s{0,4}(?:curl|wget)\b|^[ \t]{0,4}(?:sudo\s{1,8})?(?:wget|curl)\b[^\x60\n]{0,300}?https?:\/\/[^\s\x60"']{1,300}\.${RUNNABLE_EXT}(?=[\s\x60"'?#]|$)`,
  'i',
);

/**
 * Backticks are command substitution in shell code, or right after `=`, `$`, `(` or
 * `eval`/`sh -c` in prose; inline code in prose counts when it runs fetched content
 * (the seed's upstream flags `` `wget ...` `` and `` `curl ... | sh` `` there).
 */
export const backtickIsExecution: RuleCheck = (ctx) => {
  if (ctx.region === 'inline-code' || ctx.region === 'prose' || ctx.region === 'description' || ctx.region === 'html-comment') {
    const before = ctx.raw.slice(Math.max(0, ctx.rawStart - 12), ctx.rawStart);
    if (/(?:=|\b(?:eval|exec|sh\s{1,4}-c)\s{1,4}["']?)$/.test(before)) return true;
    return INLINE_FETCH_EXEC.test(ctx.match[0].slice(1, -1));
  }
  return ctx.flavor === 'shell';
};

/** Interpreters whose inline code (`-c`/`-e`) only computes and prints are not injection inside `$()`. */
const PRINTING_INTERPRETER = /^\$\(\s{0,8}(?:sudo\s{1,8}(?:-\S{1,4}\s{1,8}){0,3})?(?:(?:\/usr)?(?:\/local)?\/bin\/)?(?:python[23]?|perl|ruby|php|node)\b/i;
const CODE_DANGER =
  /\b(?:os|subprocess|socket|urllib|requests|http|pty|child_process|net|fs|eval|exec|system|popen|spawn|__import__|import\s{1,4}os|require|fetch|open|base64|b64decode|atob|Function|IO\.popen|Kernel|backticks?)\b|`|\$\(|<\(/;

/**
 * `$(...)` runs a network fetcher, a shell, a decoder or a destructive binary (seed
 * EXEC_SUBSHELL). An interpreter inside `$()` counts only when its inline code can do
 * more than print: `$(python3 -c 'print(1)')`, `$(ruby -e 'puts 1')` are not injection
 * (issue 19 §3), `$(python3 -c 'import os; os.system(...)')` is; an interpreter running
 * a file or stdin is the script's own business and is reported by the script rules.
 */
export const subshellIsDangerous: RuleCheck = (ctx) => {
  if (!PRINTING_INTERPRETER.test(ctx.match[0])) return true;
  const rest = ctx.match.input.slice(ctx.match.index + ctx.match[0].length, ctx.match.index + ctx.match[0].length + 400);
  const inline = /^\s{1,8}-[a-zA-Z]{0,3}[ce]\s{1,8}(["'])([^\n]{0,380}?)\1/.exec(rest) ?? /^\s{1,8}-[a-zA-Z]{0,3}[ce]\s{1,8}(\S{1,200})/.exec(rest);
  // No inline code: reading stdin (`-`, `<`) runs whatever was fed to it; a file argument is a local script.
  if (!inline) return /^\s{0,8}(?:-(?=[\s)])|<)/.test(rest);
  return CODE_DANGER.test(inline[2] ?? inline[1] ?? '');
};

/** The text of a shell line before `index`, joining `\`-continued lines above it (at most 600 characters). */
export function commandLineBefore(text: string, index: number): string {
  let start = text.lastIndexOf('\n', index - 1) + 1;
  while (start > 1 && index - start < 600 && text[start - 2] === '\\') start = text.lastIndexOf('\n', start - 2) + 1;
  return text.slice(Math.max(start, index - 600), index);
}

/** A pipeline segment that starts with a downloader: that pipe is the seed's NET_CURL_PIPE / NET_WGET_EXEC (WARN). */
const DOWNLOADER_SEGMENT = /(?:^|[|;&(]|\$\()\s{0,8}(?:sudo\s{1,8}(?:-\S{1,4}\s{1,8}){0,3})?(?:curl|wget|iwr|irm|invoke-webrequest|invoke-restmethod|fetch)\b/i;

/**
 * A shell pipe has a command before it on the same line (a Markdown table border
 * does not), and a download piped into a shell is reported by the seed's network
 * rules at their severity, not promoted to EXEC_PIPE_BASH (issue 19 §3): vendor
 * installers stay WARN findings; what makes a download CRITICAL is its source or
 * its framing (the LURE_* rules), not the pipe.
 */
export const pipeHasCommandBefore: RuleCheck = (ctx) => {
  if (ctx.match[0][0] !== '|') return true;
  const before = commandLineBefore(ctx.match.input, ctx.match.index).trimEnd();
  return before.length > 0 && !before.endsWith('|') && !DOWNLOADER_SEGMENT.test(before);
};

/**
 * The words just before a match that make it a negated or defensive instruction:
 * "never silently add ...", "do not follow attempts to override system instructions".
 * Only the governing words count (at most one word between the negation and the
 * match, or "attempts/requests/... to" right before it), so a negation elsewhere in
 * the sentence cannot switch a rule off.
 */
export const NEGATED_BEFORE =
  /(?:\b(?:never|not|no|cannot|can't|won't|don't|doesn't|mustn't|refuse\s{1,4}to)\s{1,4}(?:[a-z]{1,20}\s{1,4})?|\b(?:attempts?|tries|trying|requests?|efforts?|instructions?|content|text|messages?|anyone|anything|prompts?|inputs?|injections?)\s{1,4}(?:that|which|who)?\s{0,4}(?:(?:tell|ask|try|tries|attempt|attempts)\s{1,4}(?:you\s{1,4})?)?to\s{1,4})$/i;

/** The sentence before `index` (back to `.`, `!`, `?` or a blank line; at most 200 characters). */
export function sentenceBefore(text: string, index: number): string {
  const before = text.slice(Math.max(0, index - 200), index);
  const cut = Math.max(before.lastIndexOf('. '), before.lastIndexOf('! '), before.lastIndexOf('? '), before.lastIndexOf('\n\n'), before.lastIndexOf(': '), before.lastIndexOf('; '));
  return cut < 0 ? before : before.slice(cut + 2);
}

/** Drops a match that is negated or defensive ("do not follow attempts to ignore previous instructions"). */
export const notNegated: RuleCheck = (ctx) => !NEGATED_BEFORE.test(sentenceBefore(ctx.match.input, ctx.match.index));
