/**
 * The docs describe only what exists. Every `comis_tools.<name>(` (and
 * `comis_tools.<name>.<x>(`) in README.md and docs/**.md must be a tool of the
 * tool table (or an SDK built-in), and every `comis <command>` written as code
 * (an inline `code span` or a line of a fenced block) must be a command of
 * oclif.manifest.json.
 *
 * The rule for what is not built yet: a doc may name it only on a line that
 * says "not yet" (case-insensitive), e.g. "`comis replay` (not yet)". Anything
 * else that names a missing tool or command fails here, with its file:line.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

import { describe, expect, it } from 'vitest';

import { TOOL_TABLE } from '../../src/lib/capabilities/tool-table.js';
import { repoRoot } from '../helpers/cli.js';

/** Functions of the SDK object itself, not tools (see src/lib/sdk/emit.ts). */
const SDK_BUILTINS = new Set(['describe', 'invoke']);
const NOT_YET = /not yet/i;

export interface DocProblem {
  where: string;
  what: string;
}

function markdownFiles(): string[] {
  const out = [join(repoRoot, 'README.md')];
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(dir, e.name));
      else if (e.name.endsWith('.md')) out.push(join(dir, e.name));
    }
  };
  walk(join(repoRoot, 'docs'));
  return out;
}

/** Tool calls: `comis_tools.<name>(` or `comis_tools.<name>.<x>(`; <name> must be a table tool. */
export function toolProblems(file: string, text: string, tools: ReadonlySet<string>): DocProblem[] {
  const problems: DocProblem[] = [];
  text.split('\n').forEach((line, i) => {
    if (NOT_YET.test(line)) return;
    for (const m of line.matchAll(/comis_tools\.([A-Za-z_]\w*)((?:\.[A-Za-z_]\w*)*)\s*\(/g)) {
      const name = m[1]!;
      if (tools.has(name) || (m[2] === '' && SDK_BUILTINS.has(name))) continue;
      // comis_tools.mcp.<server>.<tool>( is the runtime MCP namespace (src/lib/mcp), and mcp.describe( its catalog.
      if (name === 'mcp' && /^\.(?:describe|[a-z]\w*\.[A-Za-z_]\w*)$/.test(m[2]!)) continue;
      problems.push({ where: `${file}:${i + 1}`, what: `${m[0]} names no tool of src/lib/capabilities/tool-table.ts` });
    }
  });
  return problems;
}

/** The pieces of text written as code: inline spans, and each line of a fenced block. */
function codeLines(text: string): { line: number; code: string; raw: string }[] {
  const out: { line: number; code: string; raw: string }[] = [];
  let fenced = false;
  text.split('\n').forEach((raw, i) => {
    if (/^\s*(```|~~~)/.test(raw)) {
      fenced = !fenced;
      return;
    }
    if (fenced) out.push({ line: i + 1, code: raw, raw });
    else for (const m of raw.matchAll(/`([^`\n]+)`/g)) out.push({ line: i + 1, code: m[1]!, raw });
  });
  return out;
}

/**
 * Commands: an invocation `comis …`, `./bin/comis.js …` or `$ comis …` at the
 * start of a code piece (or after a shell separator). The words after it, up
 * to the first flag or argument, must begin with a manifest command id.
 */
export function commandProblems(file: string, text: string, commands: ReadonlySet<string>, seen?: string[]): DocProblem[] {
  const topics = new Set([...commands].flatMap((id) => id.split(':').slice(0, -1)));
  const problems: DocProblem[] = [];
  for (const { line, code, raw } of codeLines(text)) {
    if (NOT_YET.test(raw)) continue;
    for (const m of code.matchAll(/(?:^|[;&|(]\s*|\$\s+|&&\s*)(?:[A-Z_]+=\S+\s+)*(?:\.\/bin\/comis\.js|comis)((?:\s+[a-z][a-z0-9-]*)*)/g)) {
      const words = m[1]!.trim().split(/\s+/).filter(Boolean);
      if (words.length === 0) continue; // `comis --help`, `comis` alone
      seen?.push(words.join(' '));
      // Longest prefix that is a command; a bare topic (`comis jail`) is fine too.
      let ok = false;
      for (let n = Math.min(words.length, 3); n >= 1 && !ok; n--) {
        const id = words.slice(0, n).join(':');
        ok = commands.has(id) || (n === words.length && topics.has(id));
      }
      if (!ok) problems.push({ where: `${file}:${line}`, what: `\`comis ${words.slice(0, 2).join(' ')}\` is no command of oclif.manifest.json` });
    }
  }
  return problems;
}

const tools = new Set(TOOL_TABLE.map((t) => t.name));
const commands = new Set(Object.keys((JSON.parse(readFileSync(join(repoRoot, 'oclif.manifest.json'), 'utf8')) as { commands: Record<string, unknown> }).commands));

describe('docs describe only what exists', () => {
  const files = markdownFiles().map((f) => ({ name: relative(repoRoot, f), text: readFileSync(f, 'utf8') }));

  it('reads README.md and the docs tree', () => {
    expect(files.map((f) => f.name)).toEqual(expect.arrayContaining(['README.md', 'docs/resultref-sql.md', 'docs/commands/orchestrate.md']));
  });

  it('every comis_tools.<name>( in the docs is a tool of the tool table', () => {
    expect(files.flatMap((f) => toolProblems(f.name, f.text, tools))).toEqual([]);
    expect(files.map((f) => f.text.match(/comis_tools\.\w+\(/g)?.length ?? 0).reduce((a, b) => a + b)).toBeGreaterThan(5);
  });

  it('every `comis <command>` in the docs is a command of the manifest', () => {
    const seen: string[] = [];
    expect(files.flatMap((f) => commandProblems(f.name, f.text, commands, seen))).toEqual([]);
    // Not vacuous: the docs' own invocations were found and checked.
    expect(seen.length).toBeGreaterThan(20);
    expect(seen).toEqual(expect.arrayContaining(['orchestrate first', 'explain', 'run plan', 'sdk emit', 'jail probe']));
  });

  it('the docs give .sql() the shape the runner returns: an array of row objects, not an envelope', () => {
    // src/lib/orchestrate/phases/socket.ts hands the script `r.rows` of the slicer's {rows, rowCount, columns}.
    const envelope = /\.sql\([^)]*\)`? (?:returns|resolves to) `?\{/;
    expect(files.filter((f) => envelope.test(f.text)).map((f) => f.name)).toEqual([]);
    expect(envelope.test('`.sql()` returns `{rows, rowCount, columns, truncated: false}`')).toBe(true);
  });

  // Positive controls: the checks above would see a missing tool or command.
  it('catches a tool that does not exist, in both call forms, unless the line says "not yet"', () => {
    const doc = [
      'const page = await comis_tools.web_crawl({ url });',
      'comis_tools.mcp.github({ q }); comis_tools.mcp.github.search({ q })',
      'await comis_tools.read({ path }); comis_tools.describe()',
      '`comis_tools.web_search()` is not yet available',
    ].join('\n');
    expect(toolProblems('x.md', doc, tools).map((p) => p.where + ' ' + p.what)).toEqual([
      'x.md:1 comis_tools.web_crawl( names no tool of src/lib/capabilities/tool-table.ts',
      'x.md:2 comis_tools.mcp.github( names no tool of src/lib/capabilities/tool-table.ts',
    ]);
  });

  it('catches a command that does not exist, inline and fenced, unless the line says "not yet"', () => {
    const doc = [
      'Run `comis rewind r-1` to re-run.',
      'Use `comis skill scan skills/` and `comis --version` and `comis jail`.',
      '```sh',
      '$ comis mcp logout',
      'COMIS_HOME=x ./bin/comis.js orchestrate job.ts && comis outbox purge',
      'comis explain --last',
      '```',
      'Prose about how comis runs the script is not a command.',
      '`comis rewind` is not yet implemented.',
    ].join('\n');
    expect(commandProblems('y.md', doc, commands).map((p) => p.where + ' ' + p.what)).toEqual([
      'y.md:1 `comis rewind r-1` is no command of oclif.manifest.json',
      'y.md:4 `comis mcp logout` is no command of oclif.manifest.json',
      'y.md:5 `comis outbox purge` is no command of oclif.manifest.json',
    ]);
  });
});
