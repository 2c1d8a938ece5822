/**
 * What the script may see of a DuckDB error: never an absolute host path.
 * DuckDB's messages name files by their full path (the child's view or the
 * host's); {@link redactHostPaths} maps the known roots to the names the
 * script uses and blanks any other absolute path the query did not contain.
 */

/** Absolute-path-looking runs of text (`/a/b`), for redaction. */
const ABSOLUTE_PATH = /(^|[\s"'`(=,:[{])(\/[^\s"'`,;()[\]{}<>]+)/g;

/**
 * Makes a message safe to hand to the script: the results directory (as the
 * host or the child sees it) becomes `results`, the child's private directory
 * disappears, and any other absolute path that the query itself did not
 * contain becomes `<path>`. One line, at most 500 characters.
 */
export function redactHostPaths(message: string, context: { query: string; roots: readonly (readonly [string, string])[] }): string {
  let out = message.split('\n')[0]!.slice(0, 2000);
  const roots = [...context.roots].filter(([from]) => from.length > 1).sort((a, b) => b[0].length - a[0].length);
  for (const [from, to] of roots) {
    const trimmed = from.endsWith('/') ? from.slice(0, -1) : from;
    out = out
      .split(`${trimmed}/`)
      .join(to === '' ? '' : `${to}/`)
      .split(trimmed)
      .join(to === '' ? '.' : to);
  }
  out = out.replace(ABSOLUTE_PATH, (whole, lead: string, path: string) => (context.query.includes(path) ? whole : `${lead}<path>`));
  return out.length > 500 ? `${out.slice(0, 497)}...` : out;
}
