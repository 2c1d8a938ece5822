/**
 * The content scanner. Unlike the seed's (which inspects the sanitized
 * body), it scans the raw text and derived views (comments stripped; NFKC +
 * case fold + invisibles removed + tag characters decoded + confusable
 * skeleton) and reports every finding at its position and line in the raw
 * file. Hiding techniques are findings of their own. Nothing is truncated
 * silently: text over the size cap is itself a finding.
 *
 * Pure: no I/O, no clock. Linear time in the input (see rules.ts).
 */
import {
  BASE64_MIN_RUN,
  BASE64_RUN_CHARS,
  detectBase64,
  detectCharCodes,
  detectDownloadExec,
  detectHexPayload,
  detectHomoglyphs,
  detectHtmlComments,
  detectInvisibles,
  detectPadding,
  type DetectorInput,
  type InnerHit,
  type RawHit,
} from './detectors.js';
import { analyzeMarkdown, computeLineStarts, lastStartAtOrBefore, lineIndexAt, spanAt, type MarkdownRegions, type Span } from './markdown-regions.js';
import { RULES, ruleById, type CooccurRule, type PatternRule, type RuleMatchContext } from './rules.js';
import { CHECK_CONTEXT } from './rules/types.js';
import { sentenceBefore } from './rules/fragments.js';
import type { ContentKind, ContentScanFinding, ContentScanResult, ScanContext, ScanRegion, ScanSeverity, ScanView } from './types.js';
import { escapeForDisplay, nonAsciiRuns, type NonAsciiRuns } from './unicode.js';
import { firstTable, isWordCode, regexStarts, TriggerAutomaton } from './prefilter.js';
import { buildViews, scanWindows, toRawRange, type TextView } from './views.js';

export interface ScanOptions {
  /** `markdown` (default) has frontmatter, code blocks and comments; `script` is code throughout. */
  kind?: ContentKind;
  /** Path of the file (for path-specific rules such as agent settings files, and the script language). */
  path?: string;
  /** Hard cap in UTF-16 code units, checked before any regex; default {@link DEFAULT_MAX_SCAN_CHARS}. */
  maxChars?: number;
  /**
   * `false` runs every rule over every scanned range of every view, without the literal
   * prefilter: the reference the prefilter is tested against (same findings, slower).
   */
  prefilter?: boolean;
  /** `computeLineStarts(content)` when the caller already has it (built once per file). */
  lineStarts?: Int32Array;
}

/** 4 Mi code units: far above any real skill (the largest public ones are ~300 kB). */
export const DEFAULT_MAX_SCAN_CHARS = 4 * 1024 * 1024;
/** Findings kept per rule and file; the last one says how many more there were. */
export const MAX_FINDINGS_PER_RULE = 50;

/** What the prefilter needs of a rule's regex, computed once, on the rule's first trigger. */
interface Extent {
  /**
   * The same pattern, sticky, tried at single candidate positions: always for rules with unbounded
   * repetition (they declare a `lead`), else in windows of at most {@link PROBE_MAX} positions.
   */
  sticky: RegExp;
  /** Rules with unbounded repetition: the sticky pattern is the only way they run. */
  unbounded: boolean;
  /**
   * Entry c (128 for every non-ASCII code unit): whether a non-empty match can start with it
   * (regexStarts); a probe skips every other position without running the regex. Undefined: no test.
   */
  first: Uint8Array | undefined;
  /** Every non-empty match starts where no ASCII word character precedes it: a probe skips positions after one. */
  afterNonWord: boolean;
  /** A match starts at most this far before the end of a trigger it contains. */
  before: number;
  /** Characters a match attempt can inspect before / from its start (regexExtent). */
  back: number;
  reach: number;
  /** Windows of this rule closer than this are one window (see candidateWindows). */
  mergeGap: number;
}

/**
 * Windows of at most this many positions are probed position by position (a first-character
 * test, then the sticky regex) rather than searched with the global regex over a slice: the
 * search reads the slice's `reach` characters past the window too, and most windows, a trigger's
 * `lead` wide, hold a few positions (EXEC_BACKTICK: 2 positions, 382 characters of slice).
 */
const PROBE_MAX = 24;

/** A pattern or co-occurrence rule and its pattern (or anchor), global. */
interface CompiledRule {
  rule: PatternRule | CooccurRule;
  re: RegExp;
  extent: Extent | undefined;
}

/**
 * regexExtent of every rule's regex, keyed `<flags>/<source>`, as the skill-scan bundle's build
 * computed it (scripts/build-skill-scan-bundle.mjs declares it at the bundle's top): a derived
 * view needs every rule's extent (triggerMarginOf), and parsing 55 patterns was ~10 ms of a
 * one-file `comis skill scan`. Not declared when the modules load unbundled: they parse.
 */
declare const __comisRegexExtents: Readonly<Record<string, readonly [len: number, min: number, reach: number, back: number, lead: number | null, first: string | null, afterNonWord: boolean]>> | undefined;

/**
 * The extent of a rule, parsed from its regex on first need (a scan of one file meets the
 * triggers of a few rules; parsing all of them is most of a short command's start-up).
 */
function extentOf(c: CompiledRule): Extent {
  if (c.extent) return c.extent;
  const { rule, re } = c;
  const triggers = rule.triggers ?? [];
  const wordStart = rule.kind === 'pattern' ? rule.wordStartTriggers : undefined;
  const built = typeof __comisRegexExtents === 'undefined' ? undefined : __comisRegexExtents[`${re.flags}/${re.source}`];
  const extent = built ? { len: built[0], min: built[1], reach: built[2], back: built[3], lead: built[4] ?? undefined, first: built[5] ?? undefined, afterNonWord: built[6] } : regexStarts(re, triggers, wordStart);
  // The declared lead and the one shown from the pattern both hold: the smaller one bounds the window.
  const lead = Math.min(rule.lead ?? Infinity, extent.lead ?? Infinity);
  const longestTrigger = Math.max(0, ...triggers.map((t) => t.length));
  const sticky = new RegExp(re.source, `${re.flags}y`);
  const first = extent.first === undefined ? undefined : firstTable(extent.first);
  if (extent.len === Infinity || extent.reach === Infinity || extent.back === Infinity) {
    if (rule.lead === undefined) throw new Error(`rule ${rule.id}: a pattern with unbounded repetition needs a lead (rules/types.ts)`);
    c.extent = { sticky, unbounded: true, first, afterNonWord: extent.afterNonWord, before: longestTrigger + lead, back: 0, reach: 0, mergeGap: 0 };
  } else {
    const before = Math.min(extent.len, longestTrigger + lead);
    const reach = Math.max(1, extent.reach);
    c.extent = { sticky, unbounded: false, first, afterNonWord: extent.afterNonWord, before, back: extent.back, reach, mergeGap: extent.back + reach };
  }
  return c.extent;
}

/** Pattern rules first, then co-occurrence rules (the order findings of one view are collected in). */
const COMPILED: readonly CompiledRule[] = [...RULES.filter((r): r is PatternRule => r.kind === 'pattern'), ...RULES.filter((r): r is CooccurRule => r.kind === 'cooccur')].map((rule) => ({
  rule,
  re: rule.kind === 'pattern' ? rule.pattern : rule.anchor,
  extent: undefined,
}));
/**
 * The one pass over a view: every rule's triggers. Rules without triggers run over the whole view.
 * Over the raw text it also records the base64 detector's candidate runs (DetectorInput.base64Runs).
 */
const AUTOMATON = new TriggerAutomaton(
  COMPILED.map((c) => ({ triggers: c.rule.triggers ?? [], wordStart: c.rule.kind === 'pattern' ? c.rule.wordStartTriggers : undefined })),
  { chars: BASE64_RUN_CHARS, min: BASE64_MIN_RUN },
);
/** How far after a derived view's window triggers are looked for (every rule's extent: computed when a derived view is first scanned). */
let triggerMargin: number | undefined;
function triggerMarginOf(): number {
  triggerMargin ??= Math.max(...COMPILED.map((c) => extentOf(c).before)) + 1;
  return triggerMargin;
}

/**
 * Per rule, the merged windows [from, to] (inclusive, pairs in one array) where a
 * match of it can start, for match starts in text[lo, hi). Undefined for a rule
 * that has no trigger occurrence there. With `base64Runs` (and the prefilter), the
 * text is scanned whole: the starts of its base64 candidate runs are appended to it.
 */
function candidateWindows(text: string, ranges: readonly (readonly [number, number])[], prefilter: boolean, base64Runs?: number[]): (number[] | undefined)[] {
  const windows: (number[] | undefined)[] = COMPILED.map(() => undefined);
  for (const [lo, hi] of ranges) {
    for (let r = 0; r < COMPILED.length; r++) {
      if (prefilter && COMPILED[r]!.rule.triggers) continue;
      if (hi > lo) (windows[r] ??= []).push(lo, hi - 1);
    }
    if (!prefilter) continue;
    // A match contains its trigger, so a trigger that starts before lo opens no window here: the
    // scan starts at lo. After hi it goes on as far as a match starting before hi can reach (the
    // raw view is scanned whole: no margin, nor every rule's extent, needed).
    const margin = lo === 0 && hi === text.length ? 0 : triggerMarginOf();
    AUTOMATON.scan(
      text,
      lo,
      Math.min(text.length, hi + margin),
      (r, start, end) => {
        const c = extentOf(COMPILED[r]!);
        const from = Math.max(lo, end - c.before);
        const to = Math.min(hi - 1, start);
        if (to < from) return;
        const w = windows[r];
        if (!w) {
          windows[r] = [from, to];
          return;
        }
        const n = w.length;
        // Windows whose regex slices would overlap are one window (one exec loop); probed ones only when they touch.
        if (from <= w[n - 1]! + c.mergeGap + 1) {
          if (to > w[n - 1]!) w[n - 1] = to;
        } else w.push(from, to);
      },
      lo === 0 && hi === text.length ? base64Runs : undefined,
    );
  }
  return windows;
}

/**
 * Every match of `c` starting inside `windows`, exactly as a global exec loop over
 * the whole `text` finds them (same matches, same order, non-overlapping): each
 * window's regex sees a slice long enough for everything an attempt inside it can
 * inspect, and no match can start outside the windows. `match.index` and
 * `match.input` are those of the whole text.
 */
function execInWindows(compiled: CompiledRule, text: string, windows: readonly number[], onMatch: (m: RegExpExecArray, start: number, end: number) => void): void {
  execInSlice(compiled, text, 0, text.length, windows, { at: 0 }, onMatch);
}

const SHELL_LANGS = new Set(['', 'sh', 'bash', 'shell', 'zsh', 'console', 'shellsession', 'terminal', 'ksh', 'fish', 'powershell', 'ps1', 'pwsh', 'bat', 'cmd', 'text', 'txt', 'plaintext']);
const CODE_EXTENSIONS = /\.(?:py|pyw|js|mjs|cjs|ts|tsx|jsx|rb|pl|php|go|rs|java|kt|cs|c|h|cpp|json|ya?ml|toml|ini|cfg|xml|html?|css|sql|lua|r|swift)$/i;
const SHELL_EXTENSIONS = /\.(?:sh|bash|zsh|ksh|fish|ps1|bat|cmd|command|inc|shx)$/i;

/** Words in prose that mark a quoted example or a warning about attackers. */
const DOCUMENTATION_CUE =
  /\b(?:e\.g\.|for\s{1,4}example|for\s{1,4}instance|example|such\s{1,4}as|patterns?\s{1,4}like|insecure|malicious|attack(?:er|ers|s)?|vulnerab\w{0,8}|anti-?pattern|detect\w{0,4}|flag\w{0,3}|reject\w{0,3})\b|❌|✗|🚫/i;
/** Lead-ins that introduce a code block as an example or a counter-example. */
const LEAD_IN_DOCUMENTATION_CUE = new RegExp(`${DOCUMENTATION_CUE.source}|\\b(?:avoid|never|don't|do\\s{1,4}not|bad|wrong|unsafe|dangerous|block\\w{0,3})\\b`, 'i');
/** Words that tell the agent to run what follows. */
const EXECUTION_CUE = /\b(?:run|execute|exec|paste|type|invoke|bootstrap)\b/i;

/** Categories whose matches are commands: inert on a script's comment lines. */
const INERT_IN_COMMENTS = new Set(['exec_injection', 'env_harvesting', 'network_exfiltration']);

/**
 * True when `position` is on a comment line. Looks back at most 200 characters (a
 * per-match `lastIndexOf` over a file without newlines would be quadratic); a longer
 * line counts as code, so the finding is kept.
 */
function isScriptCommentLine(raw: string, position: number): boolean {
  let lineStart = position;
  while (lineStart > 0 && position - lineStart < 200 && raw.charCodeAt(lineStart - 1) !== 10) lineStart -= 1;
  if (lineStart > 0 && raw.charCodeAt(lineStart - 1) !== 10) return false;
  return /^\s*(?:#(?!!)|\/\/|--\s|;|\*|\/\*)/.test(raw.slice(lineStart, Math.min(position + 1, lineStart + 200)));
}

const VIEW_NOTES: Record<ScanView, string> = {
  raw: '',
  'comments-stripped': ' (visible once HTML comments are removed)',
  normalized: ' (visible once Unicode is normalized: NFKC, invisibles removed, tag characters decoded, look-alike letters folded)',
  'normalized-comments-stripped': ' (visible once HTML comments are removed and Unicode is normalized)',
  'decoded-base64': '',
  'decoded-hex': '',
  'decoded-charcodes': '',
  'decoded-tags': '',
};

interface Document {
  raw: string;
  kind: ContentKind;
  path: string | undefined;
  regions: MarkdownRegions | undefined;
  /** The raw text's line starts, when the caller has them (the scan of a file does). */
  lineStarts: Int32Array | undefined;
  scriptFlavor: 'shell' | 'code';
  /** Rules only in windows around their triggers (see ScanOptions.prefilter). */
  prefilter: boolean;
  /** The non-ASCII runs of `raw`: found once for the views and the detectors. */
  nonAscii: NonAsciiRuns;
  /** The base64 detector's candidate runs, recorded by the trigger pass over the raw text (runTextRules); undefined without one. */
  base64Runs?: number[];
}

function scriptFlavorOf(path: string | undefined, raw: string): 'shell' | 'code' {
  if (/^#!.{0,80}\b(?:ba|z|da|k)?sh\b/.test(raw)) return 'shell';
  if (path && SHELL_EXTENSIONS.test(path)) return 'shell';
  if (path && CODE_EXTENSIONS.test(path)) return 'code';
  return 'shell';
}

function regionOf(doc: Document, position: number): { region: ScanRegion; span: Span | undefined } {
  if (doc.kind !== 'markdown' || !doc.regions) return { region: 'script', span: undefined };
  const { frontmatter, description, spans } = doc.regions;
  if (description && position >= description.start && position < description.end) return { region: 'description', span: undefined };
  if (frontmatter && position >= frontmatter.start && position < frontmatter.end) return { region: 'frontmatter', span: undefined };
  const span = spanAt(spans, position);
  return { region: span?.region ?? 'prose', span };
}

function flavorOf(doc: Document, region: ScanRegion, span: Span | undefined): 'shell' | 'code' | 'prose' {
  if (region === 'script') return doc.scriptFlavor;
  if (region === 'indented-code') return 'shell';
  if (region === 'fenced-code') return SHELL_LANGS.has(span?.lang ?? '') ? 'shell' : 'code';
  return 'prose';
}

function lineAround(raw: string, position: number): { before: string; line: string } {
  const lineStart = raw.lastIndexOf('\n', position - 1) + 1;
  const nl = raw.indexOf('\n', position);
  const lineEnd = nl < 0 ? raw.length : nl;
  return { before: raw.slice(Math.max(lineStart, position - 200), position), line: raw.slice(Math.max(lineStart, position - 300), Math.min(lineEnd, position + 300)) };
}

/**
 * The documentation context of a match, or undefined when it reads as an
 * instruction: a code block in a non-shell language (unless the lead-in says to
 * run it), inline code or a quotation in prose, anything introduced as an example
 * or a warning, a comment line in a script. A reported property only: the
 * attacker writes these words, so they never change a severity.
 */
function documentationContext(doc: Document, region: ScanRegion, span: Span | undefined, position: number): ScanContext | undefined {
  const { before, line } = lineAround(doc.raw, position);
  switch (region) {
    case 'fenced-code': {
      const leadIn = span?.leadIn ?? '';
      if (LEAD_IN_DOCUMENTATION_CUE.test(leadIn) || /^\s*(?:#|\/\/)/.test(line)) return 'fenced-doc';
      if (SHELL_LANGS.has(span?.lang ?? '')) return undefined;
      return EXECUTION_CUE.test(leadIn) ? undefined : 'fenced-doc';
    }
    case 'indented-code':
      return LEAD_IN_DOCUMENTATION_CUE.test(span?.leadIn ?? '') ? 'indented-doc' : undefined;
    case 'inline-code':
      return !EXECUTION_CUE.test(before.slice(-80)) || DOCUMENTATION_CUE.test(line) ? 'inline-doc' : undefined;
    case 'prose': {
      if (DOCUMENTATION_CUE.test(line)) return 'prose-doc';
      const quotes = (before.match(/["“”]/g) ?? []).length;
      return quotes % 2 === 1 ? 'prose-doc' : undefined;
    }
    case 'script': {
      // Comment lines are not executed.
      const lineStart = doc.raw.lastIndexOf('\n', position - 1) + 1;
      return /^\s*(?:#(?!!)|\/\/|--\s|;)/.test(doc.raw.slice(lineStart, Math.min(position + 1, lineStart + 200))) ? 'script-comment' : undefined;
    }
    default:
      return undefined;
  }
}

function displayExcerpt(raw: string, start: number, end: number): string {
  let out = '';
  for (const ch of raw.slice(start, Math.min(end, start + 100))) {
    const next = escapeForDisplay(ch);
    if (out.length + next.length > 100) break;
    out += next;
  }
  return out;
}

interface Collected extends RawHit {
  view: ScanView;
}

class FindingSink {
  readonly hits: Collected[] = [];
  private readonly byRule = new Map<string, { ranges: [number, number][]; dropped: number; last?: Collected }>();

  add(hit: Collected): void {
    let state = this.byRule.get(hit.ruleId);
    if (!state) {
      state = { ranges: [], dropped: 0 };
      this.byRule.set(hit.ruleId, state);
    }
    for (const [s, e] of state.ranges) if (hit.start < e && s < hit.end) return; // same finding seen in another view
    if (state.ranges.length >= MAX_FINDINGS_PER_RULE) {
      state.dropped += 1;
      return;
    }
    state.ranges.push([hit.start, Math.max(hit.end, hit.start + 1)]);
    state.last = hit;
    this.hits.push(hit);
  }

  finish(): void {
    for (const state of this.byRule.values()) {
      if (state.dropped > 0 && state.last) state.last.message = `${state.last.message ?? ''} (and ${state.dropped} more occurrences of this rule not listed)`.trim();
    }
  }
}

const SENTENCE_END = /[.!?](?=[\s"'”)]|$)|\n(?=[ \t]{0,8}(?:[-*+>#]|\d{1,3}[.)])[ \t])/g;

/**
 * The paragraph breaks of `text` (the matches of /\n[ \t\r]*\n/g, left to right), found from its line
 * starts: recorded into `starts`/`ends` (the paragraph before each break) when given. Returns the
 * number of breaks, or with arrays, where the paragraph after the last one starts.
 */
function paragraphBreaks(text: string, lineStarts: Int32Array, starts: Int32Array | undefined, ends: Int32Array | undefined): number {
  let count = 0;
  let from = 0;
  for (let k = 1; k < lineStarts.length; k++) {
    const nl = lineStarts[k]! - 1;
    if (nl < from) continue; // the line feed that ended the last break
    let j = nl + 1;
    let c = text.charCodeAt(j);
    while (c === 0x20 || c === 0x09 || c === 0x0d) c = text.charCodeAt(++j);
    if (c !== 0x0a) continue;
    if (starts && ends) {
      starts[count] = from;
      ends[count] = nl;
    }
    count += 1;
    from = j + 1;
  }
  return starts ? from : count;
}

/**
 * The sentences and paragraphs of a text, for co-occurrence rules: paragraphs split
 * once (one linear pass), sentences only inside the paragraphs that hold an anchor.
 * A unit is [start, end); a position between paragraphs belongs to the unit before it.
 */
class Units {
  private paragraphs: { starts: Int32Array; ends: Int32Array } | undefined;
  private readonly sentences = new Map<number, { starts: number[]; ends: number[] }>();

  /** `lineStarts`: the text's, when at hand (else computed if a paragraph is asked for). */
  constructor(
    private readonly text: string,
    private lineStarts?: Int32Array,
  ) {}

  private paragraphBounds(): { starts: Int32Array; ends: Int32Array } {
    if (this.paragraphs) return this.paragraphs;
    // The matches of /\n[ \t\r]*\n/g, from the line feed before each line start: the file's line starts
    // are at hand, and reading them costs about half a search of the text for its line feeds. Two
    // passes, one to count the breaks and one to record them in arrays of that size: arrays grown by
    // push cost more than the second pass (most of the first one, for a 2.8 MB text).
    const text = this.text;
    const lineStarts = (this.lineStarts ??= computeLineStarts(text));
    const count = paragraphBreaks(text, lineStarts, undefined, undefined);
    const starts = new Int32Array(count + 1);
    const ends = new Int32Array(count + 1);
    const from = paragraphBreaks(text, lineStarts, starts, ends);
    starts[count] = from;
    ends[count] = text.length;
    this.paragraphs = { starts, ends };
    return this.paragraphs;
  }

  unitAt(scope: 'sentence' | 'paragraph' | 'file', position: number): [number, number] {
    if (scope === 'file') return [0, this.text.length];
    const paragraphs = this.paragraphBounds();
    const p = lastStartAtOrBefore(paragraphs.starts, position);
    const ps = paragraphs.starts[p]!;
    const pe = paragraphs.ends[p]!;
    if (scope === 'paragraph') return [ps, pe];
    let inside = this.sentences.get(p);
    if (!inside) {
      const starts: number[] = [];
      const ends: number[] = [];
      SENTENCE_END.lastIndex = ps;
      let start = ps;
      for (let m = SENTENCE_END.exec(this.text); m && m.index < pe; m = SENTENCE_END.exec(this.text)) {
        starts.push(start);
        ends.push(m.index + 1);
        start = m.index + 1;
      }
      starts.push(start);
      ends.push(pe);
      inside = { starts, ends };
      this.sentences.set(p, inside);
    }
    const k = lastStartAtOrBefore(inside.starts, position);
    return [inside.starts[k]!, inside.ends[k]!];
  }
}

/**
 * Runs the pattern and co-occurrence rules on every view. Derived views are
 * scanned only in windows around their changes (the rest is identical to the
 * raw text, already scanned); co-occurrence rules run their anchor first and
 * test the companions only on the sentence or paragraph of a match.
 */
function runTextRules(doc: Document, views: readonly TextView[], sink: FindingSink): void {
  const ctxBase = (view: TextView, match: RegExpExecArray, rawStart: number, rawEnd: number): RuleMatchContext => {
    const { region, span } = regionOf(doc, rawStart);
    return {
      match,
      view,
      raw: doc.raw,
      rawStart,
      rawEnd,
      region,
      kind: doc.kind,
      flavor: doc.kind === 'text' ? 'shell' : flavorOf(doc, region, span),
      path: doc.path,
      inInlineCode: (position) => regionOf(doc, position).region === 'inline-code',
    };
  };
  for (const view of views) {
    // Derived views only where they differ from the raw text; one trigger pass per view.
    const ranges = scanWindows(view);
    if (ranges && doc.prefilter) {
      // In slices of the view around its windows, without building the whole view; when a
      // rule could read past a slice (see scanViewInSlices), the whole view after all.
      const hits: Collected[] = [];
      if (scanViewInSlices(doc, view, ranges, hits, ctxBase)) {
        for (const hit of hits) sink.add(hit);
        continue;
      }
    }
    // The raw view (never in windows) is scanned whole: its pass records the base64 runs too.
    const base64Runs = view.name === 'raw' && !ranges && doc.prefilter ? [] : undefined;
    scanView(doc, view, candidateWindows(view.text, ranges ?? [[0, view.text.length]], doc.prefilter, base64Runs), sink, ctxBase);
    if (base64Runs && view.text === doc.raw) doc.base64Runs = base64Runs;
  }
}

/** Characters of a view a slice holds beyond its windows (set on first use: every rule's reach and the checks' context). */
let sliceContext: number | undefined;
function sliceContextOf(): number {
  if (sliceContext === undefined) {
    let most = triggerMarginOf();
    for (const c of COMPILED) most = Math.max(most, extentOf(c).back, extentOf(c).reach);
    sliceContext = most + CHECK_CONTEXT + 64;
  }
  return sliceContext;
}

/** Thrown inside a slice scan when a rule could read outside the slice. */
const OUTSIDE_SLICE = Symbol('outside the slice');

/** A pattern rule's match at raw [start, end), as a finding, or undefined where its region, a script comment line or its check rules it out. */
function patternHit(rule: PatternRule, doc: Document, view: TextView, ctx: RuleMatchContext, start: number, end: number): Collected | undefined {
  if (rule.regions && !rule.regions.includes(ctx.region)) return undefined;
  // A command on a comment line of a script is never executed by it (unlike Markdown, which the model reads whole).
  if (doc.kind === 'script' && INERT_IN_COMMENTS.has(rule.category) && isScriptCommentLine(doc.raw, start)) return undefined;
  const verdict = rule.check ? rule.check(ctx) : true;
  if (verdict === false) return undefined;
  const adjust = typeof verdict === 'object' ? verdict : {};
  return { ruleId: rule.id, start, end, view: view.name, severity: adjust.severity, message: adjust.message };
}

/**
 * Scans a derived view in its windows `ranges` (view offsets) as `scanView` over the
 * whole view would, hit for hit and in the same order (into `hits`), reading only slices
 * of it: each slice holds a group of windows and {@link sliceContextOf} characters on both
 * sides, so triggers, every bounded rule's regex and every check (`CHECK_CONTEXT`) see the
 * characters they would in the whole view; groups are far enough apart that no rule window
 * spans two of them. Returns false (the caller scans the whole view) when something could
 * depend on text outside a slice: a sticky rule's attempt that runs to a slice's end (see
 * `attemptStops`), a sentence or paragraph that touches one, a file-wide unit.
 */
function scanViewInSlices(doc: Document, view: TextView, ranges: readonly [number, number][], hits: Collected[], ctxBase: (view: TextView, match: RegExpExecArray, rawStart: number, rawEnd: number) => RuleMatchContext): boolean {
  const context = sliceContextOf();
  const n = view.length;
  const slices: { at: number; text: string; windows: (number[] | undefined)[]; units: Units; solid: number }[] = [];
  for (let g = 0; g < ranges.length;) {
    let h = g + 1;
    while (h < ranges.length && ranges[h]![0] - ranges[h - 1]![1] < 3 * context) h += 1;
    const at = Math.max(0, ranges[g]![0] - context);
    const end = Math.min(n, ranges[h - 1]![1] + context);
    const text = view.slice(at, end);
    const local = ranges.slice(g, h).map(([lo, hi]) => [lo - at, hi - at] as [number, number]);
    // Paragraph breaks are runs of line feeds and blanks, split left to right: the slice's split agrees
    // with the view's from its first other character on (before it, a run may be split out of step).
    let solid = 0;
    while (solid < text.length && /[\n \t\r]/.test(text[solid]!)) solid += 1;
    slices.push({ at, text, windows: candidateWindows(text, local, true), units: new Units(text), solid });
    g = h;
  }
  const literalView = view.name === 'raw' || view.name === 'comments-stripped';
  try {
    for (let r = 0; r < COMPILED.length; r++) {
      const c = COMPILED[r]!;
      const rule = c.rule;
      if (rule.kind === 'pattern' && !patternRuleApplies(rule, doc, literalView)) continue;
      const resume = { at: 0 };
      for (const slice of slices) {
        const w = slice.windows[r];
        if (!w) continue;
        const { at, text, units, solid } = slice;
        const bounded = (from: number, to: number, before: number, after: number): void => {
          if ((at > 0 && from - before < 0) || (at + text.length < n && to + after > text.length)) throw OUTSIDE_SLICE;
        };
        if (rule.kind === 'pattern') {
          execInSlice(c, slice.text, at, n, w, resume, (m, from, to) => {
            bounded(from, to, CHECK_CONTEXT, CHECK_CONTEXT);
            const { start, end } = toRawRange(view, at + from, at + to);
            const hit = patternHit(rule, doc, view, ctxBase(view, m, start, end), start, end);
            if (hit) hits.push(hit);
          });
          continue;
        }
        const scope = doc.kind === 'markdown' || doc.kind === 'text' ? rule.scope : (rule.scriptScope ?? rule.scope);
        if (scope === 'file' && (at > 0 || at + text.length < n)) throw OUTSIDE_SLICE;
        const verdicts = new Map<number, boolean>();
        execInSlice(c, text, at, n, w, resume, (_m, from, to) => {
          bounded(from, to, CHECK_CONTEXT, 0);
          if (rule.notAfter?.test(sentenceBefore(text, from))) return;
          const [unitStart, unitEnd] = units.unitAt(scope, from);
          // A unit is the view's only when the slice holds its paragraph, split in step with the view's, and what the sentence split looks at after it.
          if (scope !== 'file') {
            const [ps, pe] = units.unitAt('paragraph', from);
            if ((at > 0 && ps <= solid) || (at + text.length < n && pe + 32 > text.length)) throw OUTSIDE_SLICE;
          }
          if (!unitVerdict(rule, verdicts, text, unitStart, unitEnd)) return;
          const { start, end } = toRawRange(view, at + from, at + to);
          hits.push({ ruleId: rule.id, start, end, view: view.name });
        });
      }
    }
  } catch (error) {
    if (error === OUTSIDE_SLICE) return false;
    throw error;
  }
  return true;
}

/**
 * A rule's regex over its windows of a slice `text` of a view (the slice starts at view offset
 * `at`; the view is `n` long), with `resume` (view offset) carried from slice to slice. Throws
 * OUTSIDE_SLICE when an attempt could read past the slice (never for the whole view:
 * {@link execInWindows}).
 */
function execInSlice(compiled: CompiledRule, text: string, at: number, n: number, windows: readonly number[], resume: { at: number }, onMatch: (m: RegExpExecArray, start: number, end: number) => void): void {
  const c = extentOf(compiled);
  const cut = at + text.length < n;
  if (c.unbounded) {
    // In a cut slice an attempt reads up to the first character outside `attemptStops`: it must be in the slice.
    // Only the whole view (execInWindows, or one slice that is all of it) needs no stops.
    const stops = compiled.rule.kind === 'pattern' ? compiled.rule.attemptStops : undefined;
    if (!stops && (at > 0 || cut)) throw OUTSIDE_SLICE;
    let runEnd = -1;
    for (let k = 0; k < windows.length; k += 2) {
      const to = windows[k + 1]!;
      for (let p = Math.max(windows[k]!, resume.at - at); p <= to; p++) {
        if (stops && cut) {
          if (p >= runEnd) {
            stops.lastIndex = p;
            runEnd = p + stops.exec(text)![0].length;
          }
          if (runEnd >= text.length) throw OUTSIDE_SLICE;
        }
        const m = probe(c, text, p);
        if (!m || m[0].length === 0) continue;
        const end = p + m[0].length;
        onMatch(m, p, end);
        resume.at = at + end;
        p = end - 1;
      }
    }
    return;
  }
  const re = compiled.re;
  for (let k = 0; k < windows.length; k += 2) {
    const from = Math.max(windows[k]!, resume.at - at);
    const to = windows[k + 1]!;
    if (from > to) continue;
    if ((at > 0 && from - c.back < 0) || (cut && to + c.reach > text.length)) throw OUTSIDE_SLICE;
    if (to - from < PROBE_MAX) {
      // Each position an attempt of the global search would make, in turn: the first that matches is
      // the match it would find (the same attempt, reading the same characters), and after a match the
      // search goes on from its end. Positions a match cannot start with are skipped untried.
      for (let p = from; p <= to; p++) {
        const m = probe(c, text, p);
        if (!m) continue;
        if (m[0].length === 0) {
          resume.at = at + p + 1;
          continue;
        }
        const end = p + m[0].length;
        resume.at = at + end;
        onMatch(m, p, end);
        p = end - 1;
      }
      continue;
    }
    const sliceStart = Math.max(0, from - c.back);
    const sliceEnd = Math.min(text.length, to + c.reach);
    const slice = sliceStart === 0 && sliceEnd === text.length ? text : text.slice(sliceStart, sliceEnd);
    re.lastIndex = from - sliceStart;
    for (let m = re.exec(slice); m && m.index + sliceStart <= to; m = re.exec(slice)) {
      const start = m.index + sliceStart;
      if (m[0].length === 0) {
        re.lastIndex = m.index + 1;
        resume.at = at + start + 1;
        continue;
      }
      const end = start + m[0].length;
      resume.at = at + end;
      const next = re.lastIndex;
      m.index = start;
      m.input = text;
      onMatch(m, start, end);
      re.lastIndex = next;
    }
  }
}

/**
 * The rule's attempt at text[p] (its sticky pattern), or null; untried where a match cannot start:
 * a first character it cannot start with, or (afterNonWord) a word character before p.
 */
function probe(c: Extent, text: string, p: number): RegExpExecArray | null {
  if (c.first) {
    const code = text.charCodeAt(p);
    if (c.first[code < 128 ? code : 128] === 0) return null;
  }
  if (c.afterNonWord && p > 0 && isWordCode(text.charCodeAt(p - 1))) return null;
  c.sticky.lastIndex = p;
  return c.sticky.exec(text);
}

/** Whether a co-occurrence rule's unit [unitStart, unitEnd) of `text` holds all its `with` and none of its `unless`, decided once per unit (keyed by its start). */
function unitVerdict(rule: CooccurRule, verdicts: Map<number, boolean>, text: string, unitStart: number, unitEnd: number): boolean {
  let ok = verdicts.get(unitStart);
  if (ok === undefined) {
    const unitText = text.slice(unitStart, unitEnd);
    ok = rule.with.every((re) => re.test(unitText)) && !rule.unless?.test(unitText);
    verdicts.set(unitStart, ok);
  }
  return ok;
}

/** Whether a pattern rule runs on this view of this document at all (its view, kind and path filters). */
function patternRuleApplies(rule: PatternRule, doc: Document, literalView: boolean): boolean {
  if (rule.literalViewsOnly && !literalView) return false;
  if (rule.markdownOnly && doc.kind !== 'markdown') return false;
  if (rule.scriptOnly && doc.kind !== 'script') return false;
  return !rule.pathFilter || (!!doc.path && rule.pathFilter.test(doc.path));
}

function scanView(doc: Document, view: TextView, windows: readonly (number[] | undefined)[], sink: FindingSink, ctxBase: (view: TextView, match: RegExpExecArray, rawStart: number, rawEnd: number) => RuleMatchContext): void {
  const text = view.text;
  const literalView = view.name === 'raw' || view.name === 'comments-stripped';
  const units = new Units(text, view.name === 'raw' ? doc.lineStarts : undefined);
  for (let r = 0; r < COMPILED.length; r++) {
    const w = windows[r];
    if (!w) continue;
    const c = COMPILED[r]!;
    const rule = c.rule;
    if (rule.kind === 'pattern') {
      if (!patternRuleApplies(rule, doc, literalView)) continue;
      execInWindows(c, text, w, (m, from, to) => {
        const { start, end } = toRawRange(view, from, to);
        const hit = patternHit(rule, doc, view, ctxBase(view, m, start, end), start, end);
        if (hit) sink.add(hit);
      });
      continue;
    }
    const scope = doc.kind === 'markdown' || doc.kind === 'text' ? rule.scope : (rule.scriptScope ?? rule.scope);
    const verdicts = new Map<number, boolean>();
    execInWindows(c, text, w, (m, from, to) => {
      if (rule.notAfter?.test(sentenceBefore(text, from))) return;
      const [unitStart, unitEnd] = units.unitAt(scope, from);
      if (!unitVerdict(rule, verdicts, text, unitStart, unitEnd)) return;
      const { start, end } = toRawRange(view, from, to);
      sink.add({ ruleId: rule.id, start, end, view: view.name });
    });
  }
}

/** Regex rules on decoded text (base64, hex, char codes): which rules fire, no positions. */
function rescanDecoded(text: string, depth: number, prefilter: boolean): InnerHit[] {
  const raw = text.slice(0, 100_000);
  const doc: Document = { raw, kind: 'text', path: undefined, regions: undefined, lineStarts: undefined, scriptFlavor: 'shell', prefilter, nonAscii: nonAsciiRuns(raw) };
  const sink = new FindingSink();
  const views = buildViews(doc.raw, false, doc.nonAscii);
  runTextRules(doc, views, sink);
  runDetectors(doc, sink, depth + 1, false);
  return sink.hits.map((h) => ({ ruleId: h.ruleId, matched: doc.raw.slice(h.start, h.end) }));
}

function runDetectors(doc: Document, sink: FindingSink, depth: number, hiding: boolean): void {
  const input: DetectorInput = {
    raw: doc.raw,
    kind: doc.kind,
    regions: doc.regions,
    earlier: sink.hits,
    rescan: (text) => rescanDecoded(text, depth, doc.prefilter),
    depth,
    nonAscii: doc.nonAscii,
    base64Runs: doc.base64Runs,
  };
  const emit = (hit: RawHit): void => sink.add({ ...hit, view: hit.view ?? 'raw' });
  detectBase64(input, emit);
  detectHexPayload(input, emit);
  detectCharCodes(input, emit);
  detectDownloadExec(input, emit);
  if (!hiding) return;
  detectHomoglyphs(input, emit);
  detectInvisibles(input, emit);
  detectPadding(input, emit);
  detectHtmlComments(input, emit);
}

/**
 * Scans one file's content. Contract: every finding's `position`,
 * `lineNumber` and `column` point into `content` as given (UTF-16 offsets),
 * whatever view the match was found in; findings are sorted by position;
 * `clean` is true exactly when there are none. Security property: the text
 * is never truncated silently (over `maxChars` a HIDE_SIZE_CAP finding says
 * how much was not scanned), and every regex runs in linear time.
 */
export function scanSkillContent(content: string, options: ScanOptions = {}): ContentScanResult {
  const maxChars = options.maxChars ?? DEFAULT_MAX_SCAN_CHARS;
  const kind = options.kind ?? 'markdown';
  const sink = new FindingSink();
  let raw = content;
  if (content.length > maxChars) {
    raw = content.slice(0, maxChars);
    sink.add({
      ruleId: 'HIDE_SIZE_CAP',
      start: maxChars,
      end: content.length,
      view: 'raw',
      message: `${content.length} characters exceed the ${maxChars}-character scan cap; the last ${content.length - maxChars} were not scanned`,
    });
  }
  const lineStarts = options.lineStarts ?? computeLineStarts(content);
  // The raw text's line starts are the content's when nothing was cut (a cut text ends inside its last line).
  const rawLineStarts = raw === content ? lineStarts : computeLineStarts(raw);
  const regions = kind === 'markdown' ? analyzeMarkdown(raw, rawLineStarts) : undefined;
  const doc: Document = { raw, kind, path: options.path, regions, lineStarts: rawLineStarts, scriptFlavor: scriptFlavorOf(options.path, raw), prefilter: options.prefilter ?? true, nonAscii: nonAsciiRuns(raw) };
  const views = buildViews(raw, kind === 'markdown', doc.nonAscii);
  runTextRules(doc, views, sink);
  runDetectors(doc, sink, 0, true);
  sink.finish();

  const findings = sink.hits.map((hit) => toFinding(doc, content, lineStarts, hit));
  findings.sort((a, b) => a.position - b.position || a.ruleId.localeCompare(b.ruleId));
  return { clean: findings.length === 0, findings };
}

function toFinding(doc: Document, content: string, lineStarts: Int32Array, hit: Collected): ContentScanFinding {
  const rule = ruleById(hit.ruleId);
  const position = Math.min(hit.start, content.length);
  const endPosition = Math.max(position + (content.length > position ? 1 : 0), Math.min(hit.end, content.length));
  const { region, span } = position < doc.raw.length ? regionOf(doc, position) : { region: 'prose' as ScanRegion, span: undefined };
  let severity: ScanSeverity = hit.severity ?? rule.severity;
  const hiding = rule.category === 'hidden_content';
  // Context is reported beside the severity, never subtracted from it (issue 19 §1).
  const context = hiding || doc.kind === 'text' ? undefined : documentationContext(doc, region, span, position);
  // The description reaches every session's system prompt, whether or not the skill is used: context may only raise.
  if (region === 'description' && severity === 'WARN') severity = 'CRITICAL';
  const line = lineIndexAt(lineStarts, position);
  const endLine = lineIndexAt(lineStarts, Math.max(position, endPosition - 1));
  let message = hit.message ?? rule.description;
  if (!hit.message) message += VIEW_NOTES[hit.view];
  if (region === 'description' && severity !== (hit.severity ?? rule.severity)) message += ' [in the frontmatter description, which reaches every system prompt]';
  return {
    ruleId: rule.id,
    category: rule.category,
    severity,
    description: rule.description,
    matchedText: displayExcerpt(content, position, endPosition),
    position,
    lineNumber: line + 1,
    endPosition,
    column: position - lineStarts[line]! + 1,
    endLineNumber: endLine + 1,
    endColumn: Math.max(position, endPosition - 1) - lineStarts[endLine]! + 2,
    message,
    view: hit.view,
    region,
    documented: context !== undefined,
    ...(context ? { context } : {}),
  };
}
