/**
 * Frontmatter of a SKILL.md, checked against the Agent Skills specification.
 * Parsed with the `yaml` package (core schema, no custom tags): it never
 * evaluates code, unlike front-matter engines with a `---js` mode. One-line
 * `key: value` frontmatters are read without it, to the same result (the
 * package is loaded only for the others). Spec
 * problems are reported as SPEC_* findings, a separate class from security
 * findings (WARN by default).
 */
import { createRequire } from 'node:module';

import type { Node as YamlNode } from 'yaml';

import { computeLineStarts, findFrontmatter, lineIndexAt } from './markdown-regions.js';
import { ruleById } from './rules.js';
import type { ContentScanFinding } from './types.js';
import { escapeForDisplay } from './unicode.js';

/** Keys the Agent Skills specification defines. */
export const SPEC_KEYS: ReadonlySet<string> = new Set(['name', 'description', 'license', 'compatibility', 'metadata', 'allowed-tools']);

export interface FrontmatterResult {
  /** The parsed mapping (undefined when missing or invalid). */
  data: Record<string, unknown> | undefined;
  findings: ContentScanFinding[];
}

export interface FrontmatterOptions {
  /** Name of the directory holding SKILL.md; `name` must equal it. Omit to skip that check (stdin). */
  directoryName?: string;
  /**
   * `true` parses every frontmatter with the YAML parser, also the one-line `key: value` ones
   * the fast path reads itself: the reference the fast path is tested against (same result).
   */
  yamlOnly?: boolean;
}

/** One top-level key of the frontmatter with its value, and both ranges (raw offsets). */
export interface FrontmatterPair {
  key: string;
  keyRange: [number, number];
  value: unknown;
  valueRange: [number, number];
}

/** The `yaml` package, loaded on first need: most frontmatters are one-line keys that do not need it. */
let yamlModule: typeof import('yaml') | undefined;
function yaml(): typeof import('yaml') {
  yamlModule ??= createRequire(import.meta.url)('yaml') as typeof import('yaml');
  return yamlModule;
}

/** A top-level `key: value` line the fast path reads; anything else goes to the YAML parser. */
const SIMPLE_LINE = /^([A-Za-z_][A-Za-z0-9_-]*):( +)("[^"\\]*"|'[^']*'|[^-?:,[\]{}#&*!|>'"%@`+.0-9~ ][^\t]*?)( *)$/;
/** Characters YAML treats specially or refuses anywhere in a value (controls, C1, BOM, line separators). */
const UNSAFE_CHARS = /[\x00-\x1f\x7f-\x9f\u2028\u2029\ufeff\t]/;
/** Plain scalars the YAML 1.2 core schema reads as null or a boolean (numbers cannot start a simple value). */
const CORE_SPECIAL = /^(?:null|true|false)$/i;

/**
 * The fast path: a frontmatter made only of one-line top-level `key: value` pairs (plain,
 * or single- or double-quoted without escapes), blank lines between them, and top-level
 * `key:` lines holding one level of such pairs, all indented alike (`metadata:` with
 * `author: x` below it). It returns what the YAML parser would (values as strings or
 * objects of strings, the same node ranges), or undefined for anything else: deeper
 * nesting, lists, block scalars, comments, escapes, tabs, CR, a value YAML would read as a
 * number, a boolean or null, a `: ` or ` #` inside a plain value, trailing spaces or
 * blank lines of spaces inside a nested block.
 */
export function simpleFrontmatterPairs(source: string, offset: number): FrontmatterPair[] | undefined {
  if (UNSAFE_CHARS.test(source.replace(/\n/g, ' '))) return undefined;
  const pairs: FrontmatterPair[] = [];
  /** The open `key:` line and what was read below it, until a line that is not indented. */
  let nested: { pair: FrontmatterPair; indent: number; value: Record<string, string>; lastEnd: number } | undefined;
  const closeNested = (): boolean => {
    if (!nested) return true;
    if (nested.indent === 0) return false; // `key:` with nothing below it is null for YAML
    nested.pair.valueRange[1] = nested.lastEnd;
    pairs.push(nested.pair);
    nested = undefined;
    return true;
  };
  let lineStart = 0;
  while (lineStart < source.length) {
    const nl = source.indexOf('\n', lineStart);
    const lineEnd = nl < 0 ? source.length : nl;
    const line = source.slice(lineStart, lineEnd);
    if (line.trim() !== '') {
      const indent = line.length - line.trimStart().length;
      if (indent > 0) {
        // A line of the open nested block: same indentation throughout, no trailing spaces.
        if (!nested || (nested.indent !== 0 && indent !== nested.indent) || line.endsWith(' ')) return undefined;
        const m = SIMPLE_LINE.exec(line.slice(indent));
        if (!m) return undefined;
        const [, key, gap, raw] = m as unknown as [string, string, string, string];
        if (CORE_SPECIAL.test(key) || key === '__proto__') return undefined;
        let value = raw;
        if (raw[0] === '"' || raw[0] === "'") value = raw.slice(1, -1);
        else if (raw.includes(': ') || raw.includes(' #') || raw.endsWith(':') || CORE_SPECIAL.test(raw)) return undefined;
        const ks = offset + lineStart + indent;
        if (nested.indent === 0) {
          nested.indent = indent;
          nested.pair.valueRange[0] = ks;
        }
        nested.value[key] = value;
        // The YAML parser's block map ends after its last value and the line break after it.
        nested.lastEnd = ks + key.length + 1 + gap.length + raw.length + (nl < 0 ? 0 : 1);
      } else {
        if (!closeNested()) return undefined;
        const header = /^([A-Za-z_][A-Za-z0-9_-]*):$/.exec(line);
        if (header) {
          const key = header[1]!;
          if (CORE_SPECIAL.test(key)) return undefined;
          const ks = offset + lineStart;
          nested = { pair: { key, keyRange: [ks, ks + key.length], value: undefined, valueRange: [0, 0] }, indent: 0, value: {}, lastEnd: 0 };
          nested.pair.value = nested.value;
        } else {
          const m = SIMPLE_LINE.exec(line);
          if (!m) return undefined;
          const [, key, gap, raw] = m as unknown as [string, string, string, string];
          if (CORE_SPECIAL.test(key)) return undefined;
          let value = raw;
          if (raw[0] === '"' || raw[0] === "'") value = raw.slice(1, -1);
          else if (raw.includes(': ') || raw.includes(' #') || raw.endsWith(':') || CORE_SPECIAL.test(raw)) return undefined;
          const ks = offset + lineStart;
          const vs = ks + key.length + 1 + gap.length;
          pairs.push({ key, keyRange: [ks, ks + key.length], value, valueRange: [vs, vs + raw.length] });
        }
      }
    } else if (nested && nested.indent !== 0 && line !== '') return undefined;
    if (nl < 0) break;
    lineStart = nl + 1;
  }
  if (!closeNested()) return undefined;
  return pairs.length > 0 ? pairs : undefined;
}

const NAME_FORMAT = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

/**
 * Validates the frontmatter of a SKILL.md. Contract: findings carry raw
 * positions like the scanner's; every finding's rule is a `spec` rule of the
 * rule table; the function never throws on malformed input.
 */
export function validateSkillFrontmatter(content: string, options: FrontmatterOptions = {}): FrontmatterResult {
  let lineStarts: Int32Array | undefined;
  const findings: ContentScanFinding[] = [];
  const report = (ruleId: string, start: number, end: number, message?: string): void => {
    const rule = ruleById(ruleId);
    lineStarts ??= computeLineStarts(content);
    const line = lineIndexAt(lineStarts, start);
    const endLine = lineIndexAt(lineStarts, Math.max(start, end - 1));
    findings.push({
      ruleId,
      category: rule.category,
      severity: rule.severity,
      description: rule.description,
      matchedText: escapeForDisplay(content.slice(start, Math.min(end, start + 100))).slice(0, 100),
      position: start,
      lineNumber: line + 1,
      endPosition: end,
      column: start - lineStarts[line]! + 1,
      endLineNumber: endLine + 1,
      endColumn: Math.max(start, end - 1) - lineStarts[endLine]! + 2,
      message: message ?? rule.description,
      view: 'raw',
      region: 'frontmatter',
      documented: false,
    });
  };

  const fm = findFrontmatter(content.slice(0, 200_000));
  if (!fm) {
    report('SPEC_FRONTMATTER_MISSING', 0, Math.min(content.length, Math.max(1, content.indexOf('\n'))));
    return { data: undefined, findings };
  }
  const source = content.slice(fm.contentStart, fm.contentEnd);
  const pairs = (options.yamlOnly ? undefined : simpleFrontmatterPairs(source, fm.contentStart)) ?? yamlPairs(source, fm, report);
  if (!pairs) return { data: undefined, findings };
  const seen = new Set<string>();
  const data: Record<string, unknown> = {};
  for (const { key, keyRange, value: parsed, valueRange } of pairs) {
    const [ks, ke] = keyRange;
    if (seen.has(key)) report('SPEC_DUPLICATE_KEY', ks, ke, `Frontmatter key "${key}" is given more than once`);
    seen.add(key);
    if (!SPEC_KEYS.has(key)) report('SPEC_UNKNOWN_KEY', ks, ke, `Frontmatter key "${key}" is not in the Agent Skills specification`);
    data[key] = parsed;
    const [vs, ve] = valueRange;
    const value = data[key];
    switch (key) {
      case 'name':
        if (typeof value !== 'string' || value.length === 0) report('SPEC_NAME_MISSING', vs, ve, '`name` is empty or not a string');
        else if (value.length > 64 || !NAME_FORMAT.test(value)) report('SPEC_NAME_FORMAT', vs, ve, `\`name\` "${escapeForDisplay(value.slice(0, 80))}" must be 1-64 lowercase letters, digits and single hyphens`);
        else if (options.directoryName !== undefined && value !== options.directoryName) report('SPEC_NAME_MISMATCH', vs, ve, `\`name\` "${value}" differs from the directory name "${escapeForDisplay(options.directoryName)}"`);
        break;
      case 'description':
        if (typeof value !== 'string' || value.trim().length === 0) report('SPEC_DESCRIPTION_MISSING', vs, ve, '`description` is empty or not a string');
        else if (value.length > 1024) report('SPEC_DESCRIPTION_LENGTH', vs, ve, `\`description\` has ${value.length} characters (at most 1024)`);
        break;
      case 'compatibility':
        if (typeof value !== 'string' || value.length > 500 || value.length === 0) report('SPEC_COMPATIBILITY_LENGTH', vs, ve);
        break;
      case 'license':
        if (typeof value !== 'string') report('SPEC_LICENSE_TYPE', vs, ve);
        break;
      case 'metadata':
        if (value === null || typeof value !== 'object' || Array.isArray(value) || Object.values(value).some((v) => typeof v !== 'string')) report('SPEC_METADATA_TYPE', vs, ve);
        break;
      case 'allowed-tools':
        if (!(typeof value === 'string' || (Array.isArray(value) && value.every((v) => typeof v === 'string')))) report('SPEC_ALLOWED_TOOLS_TYPE', vs, ve);
        break;
      default:
        break;
    }
  }
  if (!seen.has('name')) report('SPEC_NAME_MISSING', fm.start, Math.min(fm.end, fm.start + 3));
  if (!seen.has('description')) report('SPEC_DESCRIPTION_MISSING', fm.start, Math.min(fm.end, fm.start + 3));
  findings.sort((a, b) => a.position - b.position);
  return { data, findings };
}

type Report = (ruleId: string, start: number, end: number, message?: string) => void;

/** The top-level pairs as the YAML parser reads them, or undefined (reported) when the frontmatter is not a valid mapping. */
function yamlPairs(source: string, fm: { contentStart: number; contentEnd: number }, report: Report): FrontmatterPair[] | undefined {
  const { isMap, isScalar, parseDocument } = yaml();
  const doc = parseDocument(source, { uniqueKeys: false, prettyErrors: false, strict: false });
  const at = (node: YamlNode | null | undefined): [number, number] => {
    const range = node?.range;
    return range ? [fm.contentStart + range[0], fm.contentStart + Math.max(range[0] + 1, range[1])] : [fm.contentStart, fm.contentEnd];
  };
  if (doc.errors.length > 0) {
    const first = doc.errors[0]!;
    const start = fm.contentStart + (first.pos?.[0] ?? 0);
    report('SPEC_YAML_INVALID', start, Math.max(start + 1, fm.contentStart + (first.pos?.[1] ?? 1)), `Frontmatter is not valid YAML: ${first.message.split('\n')[0]}`);
    return undefined;
  }
  if (!isMap(doc.contents)) {
    report('SPEC_YAML_INVALID', fm.contentStart, Math.max(fm.contentStart + 1, fm.contentEnd), 'Frontmatter is not a YAML mapping');
    return undefined;
  }
  return doc.contents.items.map((pair) => {
    const keyNode = pair.key as YamlNode | null;
    const key = isScalar(keyNode) ? String(keyNode.value) : String(keyNode);
    const keyRange = at(keyNode);
    const valueNode = pair.value as YamlNode | null;
    // toJSON of a core-schema document: plain data, no constructors run.
    const value = valueNode && 'toJSON' in valueNode ? (valueNode as { toJSON(): unknown }).toJSON() : null;
    return { key, keyRange, value, valueRange: valueNode ? at(valueNode) : keyRange };
  });
}

/** The body of a SKILL.md: everything after the frontmatter block and the blank lines below it (the whole text when there is none). */
export function skillBody(content: string): string {
  const fm = findFrontmatter(content.slice(0, 200_000));
  return fm ? content.slice(fm.end).replace(/^(?:[ \t]*\r?\n)+/, '') : content;
}
