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

/** Backticks are command substitution only in shell code, or right after `=`, `$`, `(` or `eval`/`sh -c` in prose. */
export const backtickIsExecution: RuleCheck = (ctx) => {
  if (ctx.region === 'inline-code' || ctx.region === 'prose' || ctx.region === 'description' || ctx.region === 'html-comment') {
    const before = ctx.raw.slice(Math.max(0, ctx.rawStart - 12), ctx.rawStart);
    return /(?:=|\b(?:eval|exec|sh\s{1,4}-c)\s{1,4}["']?)$/.test(before);
  }
  return ctx.flavor === 'shell';
};

/** A shell pipe has a command before it on the same line; a Markdown table border does not. */
export const pipeHasCommandBefore: RuleCheck = (ctx) => {
  if (ctx.match[0][0] !== '|') return true;
  const text = ctx.match.input;
  const lineStart = text.lastIndexOf('\n', ctx.match.index - 1) + 1;
  const before = text.slice(Math.max(lineStart, ctx.match.index - 200), ctx.match.index).trimEnd();
  return before.length > 0 && !before.endsWith('|');
};
