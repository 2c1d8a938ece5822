/**
 * A failed child's stderr tail, made safe to print on a terminal: the child
 * is untrusted and its stderr could carry escape sequences that move the
 * cursor, retitle the window or rewrite what the TUI drew. Every control
 * character except newline and tab is shown as visible text (`\x1b`,
 * `\r`), as are C1 controls and the Unicode bidirectional overrides
 * (`\u{202e}`) that reorder what is displayed. The input is already redacted
 * by the runner (secrets) and bounded; the escaped text is bounded again.
 */
import { detached } from './summary.js';

export const CHILD_STDERR_TAIL_CHARS = 2_000;

const NAMED: Record<string, string> = { '\r': '\\r', '\b': '\\b', '\f': '\\f', '\v': '\\v', '\0': '\\0' };

// C0 (but \t \n), DEL, C1, and the bidi embeddings/overrides/isolates and marks.
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/gu;

export function escapeForTerminal(text: string): string {
  return text.replace(UNSAFE, (c) => {
    const cp = c.codePointAt(0)!;
    return NAMED[c] ?? (cp <= 0xff ? `\\x${cp.toString(16).padStart(2, '0')}` : `\\u{${cp.toString(16)}}`);
  });
}

/** The last `max` characters of an escaped tail, cut at a line start when one is near; a copy that keeps nothing of the runner's stderr alive. */
export function childStderrTail(stderrTail: string | undefined, max = CHILD_STDERR_TAIL_CHARS): string | undefined {
  if (stderrTail === undefined || stderrTail.trim() === '') return undefined;
  const escaped = escapeForTerminal(stderrTail.replace(/\n+$/, ''));
  if (escaped.length <= max) return detached(escaped);
  const cut = escaped.slice(escaped.length - max);
  const nl = cut.indexOf('\n');
  return detached(nl !== -1 && nl < 200 ? cut.slice(nl + 1) : cut);
}
