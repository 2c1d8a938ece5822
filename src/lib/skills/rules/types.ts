/**
 * The shapes of a scanner rule (pattern, co-occurrence, detector, artifact,
 * spec) and what a rule's `check` sees about a match. Rule files import
 * these; ../rules.ts assembles the one table.
 */
import type { ContentKind, ScanCategory, ScanRegion, ScanSeverity } from '../types.js';
import type { TextView } from '../views.js';

/**
 * What a rule's `check` sees about one match. `match.input` is the view's text or, in a
 * derived view scanned in windows, a slice of it holding at least {@link CHECK_CONTEXT}
 * characters on each side of the match (unless the view ends first): a check reads no
 * further than that from the match (`match.index` is relative to `match.input`).
 */
export interface RuleMatchContext {
  match: RegExpExecArray;
  view: TextView;
  raw: string;
  rawStart: number;
  rawEnd: number;
  region: ScanRegion;
  kind: ContentKind;
  /** `shell` for shell scripts and shell-ish code blocks, `code` for other languages, else `prose`. */
  flavor: 'shell' | 'code' | 'prose';
  path: string | undefined;
  /** True when a raw position sits inside a Markdown inline code span. */
  inInlineCode(position: number): boolean;
}

/** How far around its match (in `match.input`) a `check` or a co-occurrence rule's `notAfter` may read. */
export const CHECK_CONTEXT = 1024;

/** `false` drops the match; an object adjusts it. */
export type RuleCheck = (ctx: RuleMatchContext) => boolean | { severity?: ScanSeverity; message?: string };

export interface RuleBase {
  id: string;
  category: ScanCategory;
  severity: ScanSeverity;
  /** One line: what the rule detects. */
  description: string;
  /** What to do about a finding. */
  help: string;
  /** Repeated to 1 MB by the ReDoS test and the benchmark. */
  worstCase: string;
}

/** One regex over each view; every match is a finding. */
export interface PatternRule extends RuleBase {
  kind: 'pattern';
  /** Global; case-insensitive unless `literalViewsOnly`. */
  pattern: RegExp;
  /**
   * Lower-case literals, one of which every match contains: the rule runs only in
   * windows around their occurrences (prefilter.ts). Required unless the rule
   * should run over the whole text.
   */
  triggers?: readonly string[];
  /**
   * Those of `triggers` that every match containing them contains at a word start
   * (no ASCII word character [A-Za-z0-9_] before them, as `\bnc` or `\.put` require):
   * an occurrence inside a word (`nc` in `once`) does not open a window. Sound only
   * if every match contains a trigger outside this list anywhere, or one of these at
   * a word start.
   */
  wordStartTriggers?: readonly string[];
  /**
   * Every match starts at most this many characters before the start of a trigger
   * it contains. Required when the pattern has unbounded repetition (its match
   * length has no bound): such a rule is tried at those positions only. Optional
   * otherwise: the rule's windows then start this far before a trigger rather than
   * a whole match's length before it.
   */
  lead?: number;
  /**
   * For a rule with a `lead` (unbounded repetition): a class of characters such that a
   * match attempt at position p inspects nothing after the first character at or after p
   * outside this class (that character included). It lets a derived view be scanned in a
   * slice of it: an attempt whose run reaches the slice's end is retried on the whole view.
   * Without it, such a rule makes the scanner build the whole view.
   */
  attemptStops?: RegExp;
  /** Case-sensitive rules see only the raw and comments-stripped views. */
  literalViewsOnly?: boolean;
  /** Runs on Markdown content only. */
  markdownOnly?: boolean;
  /** Runs on scripts and other non-Markdown files only (code a skill ships and runs). */
  scriptOnly?: boolean;
  /** Only matches inside these regions count. */
  regions?: readonly ScanRegion[];
  /** Only for files whose path matches. */
  pathFilter?: RegExp;
  check?: RuleCheck;
}

/** An anchor and companions that must all occur in the same sentence or paragraph. */
export interface CooccurRule extends RuleBase {
  kind: 'cooccur';
  scope: 'sentence' | 'paragraph';
  /** Scope for non-Markdown files (scripts): whole file or paragraph. */
  scriptScope?: 'paragraph' | 'file';
  /** Global, case-insensitive; reported position. */
  anchor: RegExp;
  /** Each must match somewhere in the same unit. */
  with: readonly RegExp[];
  /** A unit matching this is skipped (negations such as "never send ..."). */
  unless?: RegExp;
  /** An anchor whose sentence, up to the anchor, ends in this is skipped (a negated or defensive instruction). */
  notAfter?: RegExp;
  /** Lower-case literals, one of which every anchor match contains (see PatternRule). */
  triggers?: readonly string[];
  /** Every anchor match starts at most this many characters before the start of a trigger it contains (see PatternRule). */
  lead?: number;
}

/** Implemented by code in detectors.ts (non-regex scanning). */
export interface DetectorRule extends RuleBase {
  kind: 'detector';
}

/** Reported by the file walker about files rather than text. */
export interface ArtifactRule extends RuleBase {
  kind: 'artifact';
}

/** Agent Skills specification checks on the frontmatter; a separate class from security findings. */
export interface SpecRule extends RuleBase {
  kind: 'spec';
}

export type Rule = PatternRule | CooccurRule | DetectorRule | ArtifactRule | SpecRule;
