/**
 * Shared vocabulary of the SKILL.md scanner: severities, categories and the
 * finding shape. The first seven fields of {@link ContentScanFinding} are the
 * seed's `ContentScanFinding`; the rest say where the finding sits and how it
 * was seen, so that reporters can point at the raw file.
 */

/** `CRITICAL`: an active exploitation attempt, block the skill. `WARN`: suspicious, review it. */
export type ScanSeverity = 'CRITICAL' | 'WARN';

export type ScanCategory =
  | 'exec_injection'
  | 'env_harvesting'
  | 'crypto_mining'
  | 'network_exfiltration'
  | 'obfuscated_encoding'
  | 'xml_breakout'
  | 'hidden_content'
  | 'prompt_injection'
  | 'credential_access'
  | 'persistence'
  | 'supply_chain'
  | 'resource_abuse'
  | 'destructive_action'
  | 'social_engineering'
  | 'frontmatter_spec';

/**
 * Which text a finding was matched in. `raw` is the file as written; the
 * others are derived views whose offsets are mapped back to the raw file.
 */
export type ScanView = 'raw' | 'comments-stripped' | 'normalized' | 'normalized-comments-stripped' | 'decoded-base64' | 'decoded-hex' | 'decoded-charcodes' | 'decoded-tags';

/** Where in a Markdown file a position sits. Scripts and other files are `script`. */
export type ScanRegion = 'frontmatter' | 'description' | 'prose' | 'inline-code' | 'fenced-code' | 'indented-code' | 'html-comment' | 'script';

export interface ContentScanFinding {
  /** Rule ID, e.g. `EXEC_SUBSHELL`. */
  ruleId: string;
  category: ScanCategory;
  severity: ScanSeverity;
  /** The rule's one-line description. */
  description: string;
  /**
   * The matched raw text, at most 100 characters. Invisible, bidi, tag and
   * control characters are written as `<U+XXXX>` so that printing it can
   * neither hide nor reorder text.
   */
  matchedText: string;
  /** UTF-16 offset of the match in the raw content. */
  position: number;
  /** 1-based line of `position` in the raw content. */
  lineNumber: number;
  /** UTF-16 offset just past the match in the raw content. */
  endPosition: number;
  /** 1-based UTF-16 column of `position` in its line. */
  column: number;
  /** 1-based line and column of the last matched character. */
  endLineNumber: number;
  endColumn: number;
  /** What this occurrence means; more specific than `description` (e.g. the decoded hidden text). */
  message: string;
  /** The view the match was found in (`raw` unless obfuscation had to be undone first). */
  view: ScanView;
  region: ScanRegion;
  /**
   * True when the match sits where a skill usually documents rather than instructs
   * (see {@link ScanContext}). Reported only: it never lowers the severity, because
   * the attacker writes the words and the framing that would set it.
   */
  documented: boolean;
  /** Why `documented` is true; absent when it is false. */
  context?: ScanContext;
}

/**
 * Where a documented-looking match sits: a code block introduced as an example or
 * in a non-shell language (`fenced-doc`), an indented block introduced as an example
 * (`indented-doc`), inline code not preceded by "run" (`inline-doc`), prose with an
 * example/warning word or inside quotes (`prose-doc`), a comment line of a script
 * (`script-comment`). Users may choose to not fail on these (`--ignore-documented`);
 * by default they count like any other finding.
 */
export type ScanContext = 'fenced-doc' | 'indented-doc' | 'inline-doc' | 'prose-doc' | 'script-comment';

export interface ContentScanResult {
  /** True when no rule matched. */
  clean: boolean;
  findings: ContentScanFinding[];
}

/** What kind of file the content came from: decides which regions exist. */
export type ContentKind = 'markdown' | 'script' | 'text';
