/**
 * Plans for `comis run`: a YAML file naming a lead and its child tasks,
 * validated by zod with errors that name the file, line and dotted key, and
 * checked as a DAG (unknown dependencies and cycles are refused before
 * anything runs).
 */
import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';

import { z } from 'zod';

import { CAPABILITIES, type Capability } from '../capabilities/capabilities.js';
import { ComisError } from '../errors.js';
import type { ScriptLanguage } from '../orchestrate/transpile.js';

export const DEFAULT_SUMMARY_MAX_CHARS = 2_000;
export const CHILD_ID_PATTERN = /^[a-z0-9][a-z0-9_-]{0,31}$/;

const childSchema = z
  .strictObject({
    id: z.string().regex(CHILD_ID_PATTERN, 'child ids are lowercase letters, digits, "-" and "_" (at most 32)').describe('Child id, unique in the plan.'),
    script: z.string().min(1).optional().describe('Path of the child script, relative to the plan file.'),
    inline: z.string().min(1).optional().describe('The child script itself (needs language).'),
    language: z.enum(['ts', 'js', 'py']).optional().describe('Script language; inferred from the script extension when omitted.'),
    capabilities: z.array(z.enum(CAPABILITIES)).default([]).describe('Capabilities the child requests; it gets lead caps ∩ these.'),
    timeoutMs: z.number().int().min(100).max(600_000).default(60_000).describe('Wall-clock timeout of the child run, in ms.'),
    dependsOn: z.array(z.string()).default([]).describe('Ids of children that must succeed first.'),
    include_parent_history: z.enum(['none', 'summary']).default('none').describe('none (default): a fresh window; summary: the lead context so far, bounded, as parent_summary.md.'),
    summaryMaxChars: z.number().int().min(100).max(20_000).optional().describe('Most characters of the summary the lead receives.'),
  })
  .describe('One child task.');

export const planSchema = z
  .strictObject({
    name: z.string().min(1).max(200).optional().describe('A name for the plan.'),
    lead: z
      .string()
      .regex(/^[a-z0-9][a-z0-9_-]{0,63}$/)
      .optional()
      .describe('The lead agent id (default: --agent, COMIS_AGENT or the default agent).'),
    concurrency: z.number().int().min(1).max(64).optional().describe('Children run at once (default 2; --concurrency wins).'),
    summaryMaxChars: z.number().int().min(100).max(20_000).default(DEFAULT_SUMMARY_MAX_CHARS).describe('Default summary budget per child.'),
    children: z.array(childSchema).min(1).max(10_000).describe('The child tasks.'),
  })
  .describe('A comis run plan.');

export interface PlanChild {
  id: string;
  language: ScriptLanguage;
  source: string;
  displayName: string;
  capabilities: Capability[];
  timeoutMs: number;
  dependsOn: string[];
  includeParentHistory: 'none' | 'summary';
  summaryMaxChars: number;
}

export interface Plan {
  file: string;
  name: string;
  lead: string | undefined;
  concurrency: number | undefined;
  children: PlanChild[];
}

export interface PlanProblem {
  file: string;
  line: number;
  key: string;
  message: string;
}

function planError(file: string, problems: PlanProblem[]): ComisError {
  const lines = problems.slice(0, 10).map((p) => `  ${p.file}:${p.line}${p.key ? ` ${p.key}` : ''}: ${p.message}`);
  return new ComisError('INPUT_INVALID', `Invalid plan ${file} (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n${lines.join('\n')}`, {
    hint: 'Fix the keys above; docs/commands/run.md describes the plan format.',
    details: { problems },
  });
}

function dotted(path: readonly PropertyKey[]): string {
  return path
    .map((p) => (typeof p === 'number' ? `[${p}]` : String(p)))
    .join('.')
    .replaceAll('.[', '[');
}

/** Reads, validates and resolves a plan file (scripts read, languages inferred, DAG checked). */
export async function loadPlan(file: string): Promise<Plan> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ComisError('IO_ERROR', `Cannot read the plan ${file}: ${(err as NodeJS.ErrnoException).code ?? 'error'}.`, { hint: 'Check the path.' });
  }
  return parsePlanText(text, file, await import('yaml'));
}

export function parsePlanText(text: string, file: string, yaml: typeof import('yaml')): Plan {
  const lineCounter = new yaml.LineCounter();
  const doc = yaml.parseDocument(text, { lineCounter, uniqueKeys: true, prettyErrors: false });
  const lineOf = (offset: number | undefined): number => lineCounter.linePos(offset ?? 0).line;
  if (doc.errors.length > 0) {
    throw planError(
      file,
      doc.errors.map((e) => ({ file, line: lineOf(e.pos[0]), key: '', message: `YAML syntax error (${e.code})` })),
    );
  }
  const parsed = planSchema.safeParse(doc.toJS({ maxAliasCount: 100 }) ?? {});
  /**
   * The line of the deepest node of `path` that exists, taken from its KEY
   * (`timeoutMs:`), not from its value or its parent map: a key with no value
   * or an unknown key is then cited on its own line.
   */
  const nodeLine = (path: readonly (string | number)[]): number => {
    let node: unknown = doc.contents;
    let line = yaml.isNode(node) && node.range ? lineOf(node.range[0]) : 1;
    for (const seg of path) {
      if (yaml.isMap(node)) {
        const pair = node.items.find((p) => (yaml.isScalar(p.key) ? p.key.value : p.key) === seg);
        if (!pair) break;
        if (yaml.isNode(pair.key) && pair.key.range) line = lineOf(pair.key.range[0]);
        node = pair.value;
      } else if (yaml.isSeq(node) && typeof seg === 'number') {
        const item = node.items[seg];
        if (!yaml.isNode(item)) break;
        if (item.range) line = lineOf(item.range[0]);
        node = item;
      } else break;
    }
    return line;
  };
  if (!parsed.success) {
    throw planError(
      file,
      parsed.error.issues.flatMap((i) => {
        const path = i.path.map((p) => (typeof p === 'symbol' ? String(p) : p));
        // One problem per unknown key, each on the line of that key.
        if (i.code === 'unrecognized_keys') return i.keys.map((k) => ({ file, line: nodeLine([...path, k]), key: dotted([...path, k]), message: `unknown key "${k}"` }));
        return [{ file, line: nodeLine(path), key: dotted(path), message: i.message }];
      }),
    );
  }
  const raw = parsed.data;
  const problems: PlanProblem[] = [];
  const base = dirname(resolve(file));
  const seen = new Set<string>();
  const children: PlanChild[] = [];
  raw.children.forEach((c, index) => {
    const at = (key: string): PlanProblem['line'] => nodeLine(['children', index, key]);
    if (seen.has(c.id)) problems.push({ file, line: at('id'), key: `children[${index}].id`, message: `duplicate child id "${c.id}"` });
    seen.add(c.id);
    if ((c.script === undefined) === (c.inline === undefined)) {
      problems.push({ file, line: nodeLine(['children', index]), key: `children[${index}]`, message: 'give exactly one of script (a path) or inline (the code)' });
      return;
    }
    let language = c.language;
    let source = c.inline ?? '';
    let displayName = `${c.id}.${language ?? 'js'}`;
    if (c.script !== undefined) {
      const path = isAbsolute(c.script) ? c.script : resolve(base, c.script);
      language ??= /\.(ts|mts|cts)$/i.test(path) ? 'ts' : /\.(js|mjs|cjs)$/i.test(path) ? 'js' : /\.py$/i.test(path) ? 'py' : undefined;
      displayName = c.script;
      try {
        source = readFileSync(path, 'utf8');
      } catch (err) {
        problems.push({ file, line: at('script'), key: `children[${index}].script`, message: `cannot read ${c.script}: ${(err as NodeJS.ErrnoException).code ?? 'error'}` });
        return;
      }
    }
    if (!language) {
      problems.push({ file, line: nodeLine(['children', index]), key: `children[${index}].language`, message: 'required: ts, js or py (it cannot be told from the script)' });
      return;
    }
    if (c.inline !== undefined) displayName = `${c.id}.${language}`;
    children.push({
      id: c.id,
      language,
      source,
      displayName,
      capabilities: c.capabilities,
      timeoutMs: c.timeoutMs,
      dependsOn: c.dependsOn,
      includeParentHistory: c.include_parent_history,
      summaryMaxChars: c.summaryMaxChars ?? raw.summaryMaxChars,
    });
  });
  raw.children.forEach((c, index) => {
    c.dependsOn.forEach((d, j) => {
      if (!seen.has(d)) problems.push({ file, line: nodeLine(['children', index, 'dependsOn', j]), key: `children[${index}].dependsOn[${j}]`, message: `unknown child "${d}"` });
      if (d === c.id) problems.push({ file, line: nodeLine(['children', index, 'dependsOn', j]), key: `children[${index}].dependsOn[${j}]`, message: 'a child cannot depend on itself' });
    });
  });
  if (problems.length > 0) throw planError(file, problems);
  const cycle = findCycle(children);
  if (cycle) {
    const index = raw.children.findIndex((c) => c.id === cycle[0]);
    throw new ComisError('INPUT_INVALID', `Invalid plan ${file}: dependsOn has a cycle: ${cycle.join(' → ')} (line ${nodeLine(['children', index, 'dependsOn'])}).`, {
      hint: 'dependsOn must form a DAG; nothing was run.',
      details: { cycle },
    });
  }
  return { file, name: raw.name ?? file, lead: raw.lead, concurrency: raw.concurrency, children };
}

/** A dependency cycle as a closed path of ids (first = last), or undefined for a DAG. */
export function findCycle(children: readonly Pick<PlanChild, 'id' | 'dependsOn'>[]): string[] | undefined {
  const deps = new Map(children.map((c) => [c.id, c.dependsOn]));
  const color = new Map<string, 1 | 2>();
  const stack: string[] = [];
  const visit = (id: string): string[] | undefined => {
    color.set(id, 1);
    stack.push(id);
    for (const d of deps.get(id) ?? []) {
      if (!deps.has(d)) continue;
      if (color.get(d) === 1) return [...stack.slice(stack.indexOf(d)), d];
      if (color.get(d) === undefined) {
        const found = visit(d);
        if (found) return found;
      }
    }
    stack.pop();
    color.set(id, 2);
    return undefined;
  };
  for (const c of children) {
    if (color.get(c.id) === undefined) {
      const found = visit(c.id);
      if (found) return found;
    }
  }
  return undefined;
}
