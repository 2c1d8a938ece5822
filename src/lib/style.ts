/**
 * How text renderers mark words for a reader (a verdict, a severity, an error code)
 * without knowing about terminals: `src/lib` renders through a TextStyle it is
 * given, and only the CLI decides whether that is colour (chalk) or plain text.
 */
export interface TextStyle {
  /** A good outcome: ok, no failure. */
  good(text: string): string;
  /** A failure or a critical finding. */
  bad(text: string): string;
  /** A warning. */
  warn(text: string): string;
  /** Secondary text. */
  dim(text: string): string;
}

const same = (text: string): string => text;

/** No styling: what every renderer uses unless told otherwise (pipes, --json, NO_COLOR, tests). */
export const PLAIN_STYLE: TextStyle = { good: same, bad: same, warn: same, dim: same };
