/**
 * Bounds what re-enters the caller: at most about `maxChars` characters of
 * the script's stdout, keeping the head and the tail with a marker between.
 */
export const DEFAULT_REENTRY_CHARS = 30_000;

export function boundStdout(text: string, maxChars = DEFAULT_REENTRY_CHARS): { text: string; truncated: boolean } {
  if (text.length <= maxChars) return { text, truncated: false };
  const head = Math.floor(maxChars * 0.6);
  const tail = maxChars - head;
  const omitted = text.length - head - tail;
  return {
    text: `${text.slice(0, head)}\n[… ${omitted} characters of stdout omitted by comis …]\n${text.slice(text.length - tail)}`,
    truncated: true,
  };
}

/** The last `maxChars` characters, for diagnosis. */
export function tailOf(text: string, maxChars: number): string {
  return text.length <= maxChars ? text : `…${text.slice(text.length - maxChars + 1)}`;
}
