/**
 * `comis skill scan` as a library call: expand paths (files, directories,
 * globs, `-` for stdin), find SKILL.md files and the text files beside them,
 * scan each, validate SKILL.md frontmatter, apply the baseline and (when
 * enabled) inline suppressions, and return one report. No terminal output.
 */
import { closeSync, existsSync, lstatSync, openSync, readdirSync, readSync, realpathSync, statSync } from 'node:fs';
import { basename, dirname, extname, isAbsolute, join, relative, resolve, sep } from 'node:path';

import { createRequire } from 'node:module';

import { ComisError } from '../errors.js';
import { findingFingerprint, type Baseline } from './baseline.js';
import { validateSkillFrontmatter } from './frontmatter.js';
import { computeLineStarts, lineIndexAt } from './markdown-regions.js';
import { ruleById } from './rules.js';
import { scanSkillContent } from './scanner.js';
import type { ContentKind, ContentScanFinding, ScanSeverity } from './types.js';
import { escapeForDisplay } from './unicode.js';

export type FailOn = 'critical' | 'warn' | 'never';

/** 4 MiB per file: generous (real skills are < 300 kB) and checked before any regex runs. */
export const DEFAULT_MAX_FILE_BYTES = 4 * 1024 * 1024;

export interface ScanPathsOptions {
  /** Files, directories, globs, or `-` for stdin. */
  paths: readonly string[];
  /** Content of stdin, required when `paths` contains `-`. */
  stdin?: string;
  cwd: string;
  /** Paths in the report are relative to this (default: the enclosing git work tree, else cwd). */
  root?: string;
  maxBytes?: number;
  failOn: FailOn;
  baseline?: Baseline;
  /** Honour `comis-scan-ignore RULE: reason` comments in scanned files (off by default: the attacker writes the file). */
  inlineSuppressions?: boolean;
  /**
   * Findings with a documentation `context` (examples, inline code, comments) are still
   * reported but do not fail the run. Off by default: the attacker writes that framing.
   */
  ignoreDocumented?: boolean;
}

export interface ReportFinding extends ContentScanFinding {
  /** `security` or `spec` (frontmatter specification problems). */
  class: 'security' | 'spec';
  fingerprint: string;
  /** The raw line around the match, display-safe, with the caret position inside it. */
  excerpt: { text: string; caretStart: number; caretLength: number };
}

export interface SuppressedFinding extends ReportFinding {
  suppression: { kind: 'baseline' | 'inline'; reason: string };
}

export interface FileReport {
  /** Relative to the report root, with `/` separators (`<stdin>` for stdin). */
  path: string;
  kind: ContentKind;
  bytes: number;
  findings: ReportFinding[];
  suppressed: SuppressedFinding[];
}

export interface ScanReport {
  version: 1;
  root: string;
  failOn: FailOn;
  files: FileReport[];
  /** Problems that are not findings: directories without SKILL.md, stale baseline entries. */
  warnings: string[];
  summary: {
    files: number;
    findings: number;
    critical: number;
    warn: number;
    spec: number;
    suppressed: number;
    /** True when an unsuppressed finding is at or above `failOn`. */
    failed: boolean;
  };
}

const SKIP_DIRS = new Set(['node_modules', '.git', '.hg', '.svn']);
const MARKDOWN_EXT = /\.(?:md|markdown|mdx|mdc)$/i;
const REVIEWABLE_BINARY_EXT = /\.(?:png|jpe?g|gif|webp|svg|ico|bmp|pdf|woff2?|ttf|otf|eot|mp[34]|wav|ogg|mov|webm)$/i;
const OPAQUE_EXT = /\.(?:zip|tar|tgz|gz|bz2|xz|7z|rar|jar|war|whl|egg|pyc|pyo|so|dll|dylib|exe|bin|dat|docx|xlsx|pptx|odt|class|wasm|node|deb|rpm|dmg|pkg|msi|apk)$/i;

interface Candidate {
  absolute: string;
  display: string;
  /** Directory of the SKILL.md this file belongs to, if any. */
  skillDir?: string;
  isSkillFile: boolean;
}

/** The enclosing git work tree of `cwd`, else `cwd`. */
export function findRepoRoot(cwd: string): string {
  let dir = resolve(cwd);
  for (;;) {
    if (existsSync(join(dir, '.git'))) return dir;
    const parent = dirname(dir);
    if (parent === dir) return resolve(cwd);
    dir = parent;
  }
}

function toPosix(path: string): string {
  return sep === '/' ? path : path.split(sep).join('/');
}

function displayPath(root: string, absolute: string): string {
  const rel = relative(root, absolute);
  return rel === '' ? basename(absolute) : rel.startsWith('..') || isAbsolute(rel) ? toPosix(absolute) : toPosix(rel);
}

function ioError(path: string, err: unknown, action = 'read'): ComisError {
  const code = (err as NodeJS.ErrnoException).code;
  return new ComisError('IO_ERROR', `Cannot ${action} ${path}: ${code === 'ENOENT' ? 'no such file or directory' : (code ?? String(err))}`, {
    hint: code === 'ENOENT' ? 'Check the path; globs must be quoted so that comis, not the shell, expands them.' : undefined,
  });
}

/** An input that yields nothing to scan fails the run (exit 2): a typo in CI must not pass green. */
function noFilesMatched(input: string, what: 'glob' | 'directory'): ComisError {
  return new ComisError('NOT_FOUND', `No files matched ${input}: ${what === 'glob' ? 'the glob matches no file' : 'the directory holds no SKILL.md'}, so nothing would be scanned`, {
    hint: what === 'glob' ? "Check the pattern (quote it so comis, not the shell, expands it), e.g. 'skills/**/SKILL.md'." : 'Give the directory that holds the skills, or a SKILL.md file.',
    details: { input },
  });
}

const GLOB_CHARS = /[*?[\]{}]/;

function walk(dir: string, visit: (path: string, isDir: boolean) => void, depth = 0): void {
  if (depth > 32) return;
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch (err) {
    throw ioError(dir, err, 'list');
  }
  entries.sort((a, b) => a.name.localeCompare(b.name));
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (SKIP_DIRS.has(entry.name)) continue;
      visit(path, true);
      walk(path, visit, depth + 1);
    } else visit(path, false);
  }
}

/** picomatch only when a glob is given (most scans name files and directories). */
function loadPicomatch(): typeof import('picomatch') {
  return createRequire(import.meta.url)('picomatch') as typeof import('picomatch');
}

function expandGlob(pattern: string, cwd: string): string[] {
  const absolutePattern = toPosix(isAbsolute(pattern) ? pattern : join(cwd, pattern));
  const parts = absolutePattern.split('/');
  const firstGlob = parts.findIndex((p) => GLOB_CHARS.test(p));
  const base = parts.slice(0, firstGlob).join('/') || '/';
  if (!existsSync(base)) return [];
  // picomatch: `*`, `**`, `?`, `[...]` classes and nested `{a,{b,c}}` braces, as shells and CI tools expand them.
  // `dot: true` because the walker scans dot-directories too (a skill's `.config/` is part of it).
  // picomatch reads `[!a]` as the class {!, a}; shells (and users) mean "not a", as `[^a]`.
  const isMatch = loadPicomatch()(
    parts
      .slice(firstGlob)
      .join('/')
      .replace(/(?<!\\)\[!/g, '[^'),
    { dot: true },
  );
  const out: string[] = [];
  walk(base, (path) => {
    if (isMatch(toPosix(relative(base, path)))) out.push(path);
  });
  return out;
}

/** Files to scan: SKILL.md files and the text files in their directories; explicit files as given. */
function discover(options: ScanPathsOptions, root: string, warnings: string[], artifacts: { path: string; ruleId: string; message: string }[]): Candidate[] {
  const byPath = new Map<string, Candidate>();
  let matched = 0; // files (or artifacts) the current input produced, counted even when an earlier input had them
  const add = (absolute: string, skillDir: string | undefined): void => {
    matched += 1;
    if (byPath.has(absolute)) return;
    byPath.set(absolute, { absolute, display: displayPath(root, absolute), skillDir, isSkillFile: basename(absolute) === 'SKILL.md' });
  };
  const addDirectory = (dir: string, quiet = false): void => {
    const skillDirs: string[] = [];
    walk(dir, (path, isDir) => {
      if (!isDir && basename(path) === 'SKILL.md') skillDirs.push(dirname(path));
    });
    const unique = [...new Set(skillDirs)].sort();
    if (unique.length === 0) {
      if (!quiet) warnings.push(`No SKILL.md found under ${displayPath(root, dir)}`);
      return;
    }
    for (const skillDir of unique) {
      const realSkill = realpathSync(skillDir);
      add(join(skillDir, 'SKILL.md'), skillDir);
      walk(skillDir, (path, isDir) => {
        const stat = lstatSync(path);
        if (stat.isSymbolicLink()) {
          let target: string;
          try {
            target = realpathSync(path);
          } catch {
            target = '(dangling)';
          }
          if (target === '(dangling)' || !(target === realSkill || target.startsWith(realSkill + sep))) {
            matched += 1;
            artifacts.push({ path, ruleId: 'HIDE_SYMLINK_ESCAPE', message: `symbolic link to ${target} leaves the skill directory` });
          }
          return;
        }
        if (isDir) return;
        if (OPAQUE_EXT.test(path)) {
          matched += 1;
          artifacts.push({ path, ruleId: 'HIDE_BINARY_ARTIFACT', message: `${extname(path)} file cannot be reviewed as text` });
          return;
        }
        if (REVIEWABLE_BINARY_EXT.test(path) && !/\.svg$/i.test(path)) return;
        add(path, skillDir);
      });
    }
  };

  for (const input of options.paths) {
    if (input === '-') continue;
    matched = 0;
    const absolute = resolve(options.cwd, input);
    let stat;
    try {
      stat = statSync(absolute);
    } catch (err) {
      if (GLOB_CHARS.test(input)) {
        for (const match of expandGlob(input, options.cwd)) {
          // `skills/**` also matches every subdirectory: only the directories holding skills count.
          if (statSync(match).isDirectory()) addDirectory(match, true);
          else add(match, basename(match) === 'SKILL.md' ? dirname(match) : undefined);
        }
        if (matched === 0) throw noFilesMatched(input, 'glob');
        continue;
      }
      throw ioError(input, err, 'scan');
    }
    if (stat.isDirectory()) addDirectory(absolute);
    else add(absolute, basename(absolute) === 'SKILL.md' ? dirname(absolute) : undefined);
    if (matched === 0) throw noFilesMatched(input, 'directory');
  }
  return [...byPath.values()];
}

function readCapped(path: string, maxBytes: number): { buffer: Buffer; size: number } {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const size = statSync(path).size;
    const buffer = Buffer.alloc(Math.min(size, maxBytes));
    let read = 0;
    while (read < buffer.length) {
      const n = readSync(fd, buffer, read, buffer.length - read, read);
      if (n === 0) break;
      read += n;
    }
    return { buffer: buffer.subarray(0, read), size };
  } catch (err) {
    throw ioError(path, err);
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

function isBinary(buffer: Buffer): boolean {
  const head = buffer.subarray(0, 8192);
  if (head.includes(0)) return true;
  const magic = head.subarray(0, 4).toString('latin1');
  return magic.startsWith('PK\x03\x04') || magic.startsWith('\x7fELF') || magic.startsWith('\x1f\x8b') || magic.startsWith('MZ');
}

const INLINE_SUPPRESSION = /comis-scan-ignore[ \t]+([A-Z0-9_, \t]+?)[ \t]*:[ \t]*((?!-->)\S[^\n]*?)[ \t]*(?:-->|\*\/)?[ \t]*$/;

function inlineSuppression(content: string, lineStarts: Int32Array, line: number, ruleId: string): string | undefined {
  for (const l of [line, line - 1]) {
    if (l < 0) continue;
    const start = lineStarts[l]!;
    const end = l + 1 < lineStarts.length ? lineStarts[l + 1]! - 1 : content.length;
    const m = INLINE_SUPPRESSION.exec(content.slice(start, Math.min(end, start + 500)));
    if (m && m[1]!.split(/[\s,]+/).includes(ruleId)) return m[2];
  }
  return undefined;
}

function excerptFor(content: string, lineStarts: Int32Array, finding: ContentScanFinding): ReportFinding['excerpt'] {
  const line = finding.lineNumber - 1;
  const lineStart = lineStarts[line] ?? 0;
  const lineEnd = line + 1 < lineStarts.length ? lineStarts[line + 1]! - 1 : content.length;
  const windowStart = Math.max(lineStart, finding.position - 60);
  const windowEnd = Math.min(lineEnd, Math.max(finding.position + 60, windowStart + 120));
  const before = escapeForDisplay(content.slice(windowStart, finding.position));
  const matchEnd = Math.min(finding.endPosition, windowEnd);
  const matched = escapeForDisplay(content.slice(finding.position, matchEnd));
  const after = escapeForDisplay(content.slice(matchEnd, windowEnd));
  const prefix = windowStart > lineStart ? '…' : '';
  const suffix = windowEnd < lineEnd ? '…' : '';
  return { text: `${prefix}${before}${matched}${after}${suffix}`.replace(/\r$/, ''), caretStart: prefix.length + before.length, caretLength: Math.max(1, matched.length) };
}

function severityRank(severity: ScanSeverity): number {
  return severity === 'CRITICAL' ? 2 : 1;
}

/** Whether a finding of this severity fails the run under `failOn`. */
export function failsThreshold(severity: ScanSeverity, failOn: FailOn): boolean {
  if (failOn === 'never') return false;
  return severityRank(severity) >= (failOn === 'critical' ? 2 : 1);
}

function scanOne(
  display: string,
  content: string,
  kind: ContentKind,
  skillDirName: string | undefined,
  isSkillFile: boolean,
  size: number,
  maxBytes: number,
  absolute: string | undefined,
): { findings: ReportFinding[]; lineStarts: Int32Array } {
  const lineStarts = computeLineStarts(content);
  const scanned = scanSkillContent(content, { kind, path: absolute ?? display, maxChars: Number.MAX_SAFE_INTEGER, lineStarts });
  const all: { f: ContentScanFinding; cls: 'security' | 'spec' }[] = scanned.findings.map((f) => ({ f, cls: 'security' }));
  if (size > maxBytes) {
    const rule = ruleById('HIDE_SIZE_CAP');
    const position = content.length;
    const line = lineIndexAt(lineStarts, position);
    all.push({
      cls: 'security',
      f: {
        ruleId: rule.id,
        category: rule.category,
        severity: rule.severity,
        description: rule.description,
        matchedText: '',
        position,
        lineNumber: line + 1,
        endPosition: position,
        column: position - lineStarts[line]! + 1,
        endLineNumber: line + 1,
        endColumn: position - lineStarts[line]! + 1,
        message: `file is ${size} bytes, over the ${maxBytes}-byte cap: only the first ${maxBytes} bytes were scanned`,
        view: 'raw',
        region: 'prose',
        documented: false,
      },
    });
  }
  if (isSkillFile) {
    for (const f of validateSkillFrontmatter(content, { directoryName: skillDirName }).findings) all.push({ f, cls: 'spec' });
  }
  const occurrences = new Map<string, number>();
  const findings = all
    .sort((a, b) => a.f.position - b.f.position || a.f.ruleId.localeCompare(b.f.ruleId))
    .map(({ f, cls }) => {
      const matched = content.slice(f.position, Math.min(f.endPosition, f.position + 500));
      // Counted over the text as the fingerprint sees it (whitespace collapsed): two padding runs of different
      // lengths hash the same text, and must differ by occurrence or one baseline entry hides both.
      const key = `${f.ruleId}\0${matched.replace(/\s+/g, ' ').trim()}`;
      const occurrence = occurrences.get(key) ?? 0;
      occurrences.set(key, occurrence + 1);
      return { ...f, class: cls, fingerprint: findingFingerprint(f.ruleId, display, matched, occurrence), excerpt: excerptFor(content, lineStarts, f) };
    });
  return { findings, lineStarts };
}

/**
 * Runs the whole scan. Throws ComisError IO_ERROR for unreadable inputs and
 * USAGE when `-` is given without stdin content; otherwise returns a report
 * whose `summary.failed` says whether CI should fail.
 */
export function scanSkillPaths(options: ScanPathsOptions): ScanReport {
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_FILE_BYTES;
  const root = resolve(options.root ?? findRepoRoot(options.cwd));
  const warnings: string[] = [];
  const artifacts: { path: string; ruleId: string; message: string }[] = [];
  const files: FileReport[] = [];
  const baselineByFingerprint = new Map((options.baseline?.suppressions ?? []).map((e) => [e.fingerprint, e]));
  const usedBaseline = new Set<string>();

  const finish = (path: string, kind: ContentKind, bytes: number, content: string, findings: ReportFinding[], lineStarts: Int32Array): void => {
    const kept: ReportFinding[] = [];
    const suppressed: SuppressedFinding[] = [];
    for (const f of findings) {
      const entry = baselineByFingerprint.get(f.fingerprint);
      if (entry) {
        usedBaseline.add(entry.fingerprint);
        suppressed.push({ ...f, suppression: { kind: 'baseline', reason: entry.reason } });
        continue;
      }
      const inline = options.inlineSuppressions ? inlineSuppression(content, lineStarts, f.lineNumber - 1, f.ruleId) : undefined;
      if (inline) suppressed.push({ ...f, suppression: { kind: 'inline', reason: inline } });
      else kept.push(f);
    }
    files.push({ path, kind, bytes, findings: kept, suppressed });
  };

  if (options.paths.includes('-')) {
    if (options.stdin === undefined) throw new ComisError('USAGE', '`-` reads a SKILL.md from stdin, but no stdin was given');
    const content = options.stdin;
    const { findings, lineStarts } = scanOne('<stdin>', content, 'markdown', undefined, true, Buffer.byteLength(content), maxBytes, undefined);
    finish('<stdin>', 'markdown', Buffer.byteLength(content), content, findings, lineStarts);
  }

  for (const candidate of discover(options, root, warnings, artifacts)) {
    const { buffer, size } = readCapped(candidate.absolute, maxBytes);
    if (isBinary(buffer)) {
      if (candidate.skillDir && !REVIEWABLE_BINARY_EXT.test(candidate.absolute)) {
        artifacts.push({ path: candidate.absolute, ruleId: 'HIDE_BINARY_ARTIFACT', message: 'binary file beside a skill cannot be reviewed as text' });
      }
      continue;
    }
    const content = buffer.toString('utf8');
    const kind: ContentKind = MARKDOWN_EXT.test(candidate.absolute) ? 'markdown' : 'script';
    const skillDirName = candidate.isSkillFile ? basename(dirname(candidate.absolute)) : undefined;
    const { findings, lineStarts } = scanOne(candidate.display, content, kind, skillDirName, candidate.isSkillFile, size, maxBytes, candidate.absolute);
    finish(candidate.display, kind, size, content, findings, lineStarts);
  }

  for (const artifact of artifacts) {
    const rule = ruleById(artifact.ruleId);
    const display = displayPath(root, artifact.path);
    const finding: ReportFinding = {
      ruleId: rule.id,
      category: rule.category,
      severity: rule.severity,
      description: rule.description,
      matchedText: '',
      position: 0,
      lineNumber: 1,
      endPosition: 0,
      column: 1,
      endLineNumber: 1,
      endColumn: 1,
      message: artifact.message,
      view: 'raw',
      region: 'script',
      documented: false,
      class: 'security',
      fingerprint: findingFingerprint(rule.id, display, '', 0),
      excerpt: { text: '', caretStart: 0, caretLength: 1 },
    };
    finish(display, 'text', 0, '', [finding], new Int32Array([0]));
  }

  const stale = (options.baseline?.suppressions ?? []).filter((e) => !usedBaseline.has(e.fingerprint));
  if (stale.length > 0) warnings.push(`${stale.length} baseline entr${stale.length === 1 ? 'y matches' : 'ies match'} no current finding (fixed or moved); remove them`);

  files.sort((a, b) => a.path.localeCompare(b.path));
  const active = files.flatMap((f) => f.findings);
  const summary = {
    files: files.length,
    findings: active.length,
    critical: active.filter((f) => f.severity === 'CRITICAL').length,
    warn: active.filter((f) => f.severity === 'WARN').length,
    spec: active.filter((f) => f.class === 'spec').length,
    suppressed: files.reduce((n, f) => n + f.suppressed.length, 0),
    failed: active.some((f) => failsThreshold(f.severity, options.failOn) && !(options.ignoreDocumented && f.documented)),
  };
  return { version: 1, root, failOn: options.failOn, files, warnings, summary };
}

/**
 * The files `--sanitize` prints: SKILL.md files under directories, and
 * explicit files as given (stdin is handled by the caller).
 */
export function listSkillFiles(paths: readonly string[], cwd: string): string[] {
  const warnings: string[] = [];
  const root = resolve(cwd);
  const found = discover({ paths: paths.filter((p) => p !== '-'), cwd, failOn: 'never' }, root, warnings, []);
  return found.filter((c) => c.isSkillFile || c.skillDir === undefined).map((c) => c.absolute);
}
