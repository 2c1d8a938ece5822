/**
 * The development corpus (`<repo root>/../shared/corpus/skills`): rebuilds each
 * sample's directory tree from manifest.tsv into a temp dir, scans it with
 * scanSkillPaths, and computes the figures the corpus test asserts and
 * prints. Labels come from the manifest, never from the folder.
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

import { scanSkillPaths } from '../../src/lib/skills/scan-paths.js';
import { repoRoot } from '../helpers/cli.js';

/**
 * Where the corpus is: `COMIS_SKILL_CORPUS`, else `../shared/corpus/skills` beside the
 * checkout (where the development machines and CI have it). A clone without it skips.
 */
export const corpusDir = process.env.COMIS_SKILL_CORPUS ? resolve(process.env.COMIS_SKILL_CORPUS) : resolve(repoRoot, '..', 'shared', 'corpus', 'skills');

/** Set explicitly (as .ci/run does), the corpus is required: a missing one fails instead of skipping. */
export const corpusRequired = Boolean(process.env.COMIS_SKILL_CORPUS);

export interface ManifestRow {
  file: string;
  label: 'benign' | 'malicious';
  category: string;
  source_repo: string;
  source_path: string;
}

export interface SampleResult {
  id: string;
  label: 'benign' | 'malicious';
  source: string;
  family: string;
  /** SkillsGoat benign twins: benign samples built to look suspicious. */
  twin: boolean;
  /**
   * The sample's payload is not in the shipped text: a row of omitted.tsv names a file of it
   * that was left out (a binary, an archive, a symlink, .git/ content), e.g. Cisco eicar-test.
   */
  textless: boolean;
  security: boolean;
  critical: boolean;
  spec: boolean;
  rules: string[];
}

/** Sample directories (`<repo>/<sample_dir>`) with a file that omitted.tsv says was not shipped. */
export function loadOmittedSamples(): Set<string> {
  const file = join(corpusDir, 'omitted.tsv');
  if (!existsSync(file)) return new Set();
  const rows = readFileSync(file, 'utf8')
    .split('\n')
    .slice(1)
    .filter((l) => l.trim() !== '')
    .map((l) => l.split('\t'));
  return new Set(rows.filter((r) => !/WHOLE SAMPLE EXCLUDED/.test(r[3] ?? '')).map((r) => `${r[0]}/${r[1]}`));
}

export function loadManifest(): ManifestRow[] {
  const lines = readFileSync(join(corpusDir, 'manifest.tsv'), 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '');
  const header = lines[0]!.split('\t');
  return lines.slice(1).map((line) => {
    const cells = line.split('\t');
    const row = Object.fromEntries(header.map((h, i) => [h, cells[i] ?? '']));
    return row as unknown as ManifestRow;
  });
}

function sampleDirOf(row: ManifestRow): string {
  const parts = row.source_path.split('/');
  if (row.source_repo === 'optimuslabs-io/skillsgoat') return parts.slice(0, parts.indexOf('skill') + 1).join('/');
  if (row.source_repo === 'cisco-ai-defense/skill-scanner') return parts.slice(0, 4).join('/');
  return dirname(row.source_path);
}

/** Copies every file to `<tmp>/<repo>/<source_path>` and scans each sample. */
export function evaluateCorpus(tmp: string): SampleResult[] {
  const rows = loadManifest();
  const samples = new Map<string, { rows: ManifestRow[]; dir: string }>();
  for (const row of rows) {
    const target = join(tmp, row.source_repo, row.source_path);
    mkdirSync(dirname(target), { recursive: true });
    copyFileSync(join(corpusDir, row.file), target);
    const key = `${row.source_repo}/${sampleDirOf(row)}`;
    const sample = samples.get(key) ?? { rows: [], dir: join(tmp, row.source_repo, sampleDirOf(row)) };
    sample.rows.push(row);
    samples.set(key, sample);
  }
  const results: SampleResult[] = [];
  const omitted = loadOmittedSamples();
  for (const [id, sample] of samples) {
    const first = sample.rows[0]!;
    const benignRepo = first.source_repo === 'github/awesome-copilot' || first.source_repo === 'K-Dense-AI/claude-scientific-skills';
    // Benign repositories: one SKILL.md per sample (nested skills are samples of their own).
    const paths = benignRepo ? sample.rows.map((r) => join(tmp, r.source_repo, r.source_path)) : [sample.dir];
    const report = scanSkillPaths({ paths, cwd: tmp, root: tmp, failOn: 'critical' });
    const findings = report.files.flatMap((f) => f.findings);
    const security = findings.filter((f) => f.class === 'security');
    results.push({
      id,
      label: first.label,
      source: first.source_repo,
      family: first.category || '(benign repo)',
      twin: first.source_repo === 'optimuslabs-io/skillsgoat' && first.label === 'benign',
      textless: omitted.has(id),
      security: security.length > 0,
      critical: security.some((f) => f.severity === 'CRITICAL'),
      spec: findings.some((f) => f.class === 'spec'),
      rules: [...new Set(security.map((f) => `${f.ruleId}${f.severity === 'CRITICAL' ? '!' : ''}`))].sort(),
    });
  }
  return results;
}

export function corpusAvailable(): boolean {
  return existsSync(join(corpusDir, 'manifest.tsv'));
}

function pct(n: number, d: number): string {
  return d === 0 ? '-' : `${((100 * n) / d).toFixed(1)}%`;
}

/** The per-source and per-family table printed by the corpus test. */
export function formatCorpusTable(results: readonly SampleResult[]): string {
  const out: string[] = [];
  const benign = results.filter((r) => r.label === 'benign');
  out.push('Benign (false positives), per source:');
  const groups = new Map<string, SampleResult[]>();
  for (const r of benign) {
    const key = r.twin ? 'optimuslabs-io/skillsgoat (benign twins)' : r.source;
    groups.set(key, [...(groups.get(key) ?? []), r]);
  }
  for (const [key, list] of groups) {
    out.push(
      `  ${key.padEnd(44)} n=${String(list.length).padStart(3)}  any security finding ${pct(list.filter((r) => r.security).length, list.length).padStart(6)}  CRITICAL ${pct(list.filter((r) => r.critical).length, list.length).padStart(6)}  spec ${pct(list.filter((r) => r.spec).length, list.length).padStart(6)}`,
    );
  }
  const malicious = results.filter((r) => r.label === 'malicious');
  out.push('Malicious (detection = any security finding), per source:');
  for (const source of [...new Set(malicious.map((r) => r.source))]) {
    const list = malicious.filter((r) => r.source === source);
    out.push(
      `  ${source.padEnd(44)} n=${String(list.length).padStart(3)}  detected ${pct(list.filter((r) => r.security).length, list.length).padStart(6)}  with CRITICAL ${pct(list.filter((r) => r.critical).length, list.length).padStart(6)}`,
    );
  }
  out.push(`  ${'all malicious samples'.padEnd(44)} n=${String(malicious.length).padStart(3)}  detected ${pct(malicious.filter((r) => r.security).length, malicious.length).padStart(6)}`);
  const shipped = malicious.filter((r) => !r.textless);
  out.push(
    `  ${'  with the payload shipped as text (gated)'.padEnd(44)} n=${String(shipped.length).padStart(3)}  detected ${pct(shipped.filter((r) => r.security).length, shipped.length).padStart(6)}  with CRITICAL ${pct(shipped.filter((r) => r.critical).length, shipped.length).padStart(6)}`,
  );
  const textless = malicious.filter((r) => r.textless);
  out.push(
    `  ${'  payload not shipped (omitted.tsv)'.padEnd(44)} n=${String(textless.length).padStart(3)}  detected ${pct(textless.filter((r) => r.security).length, textless.length).padStart(6)}  (${textless
      .map((r) =>
        r.id
          .split('/')
          .filter((p) => p !== 'skill')
          .pop(),
      )
      .join(', ')})`,
  );
  out.push('Malicious, per family (detected/n):');
  const families = [...new Set(malicious.map((r) => `${r.source === 'cisco-ai-defense/skill-scanner' ? 'cisco:' : ''}${r.family}`))].sort();
  for (const family of families) {
    const list = malicious.filter((r) => `${r.source === 'cisco-ai-defense/skill-scanner' ? 'cisco:' : ''}${r.family}` === family);
    const missed = list
      .filter((r) => !r.security)
      .map(
        (r) =>
          r.id
            .split('/')
            .filter((p) => p !== 'skill')
            .pop() ?? r.id,
      );
    out.push(`  ${family.padEnd(36)} ${list.filter((r) => r.security).length}/${list.length} (n=${list.length})${missed.length ? `  missed: ${missed.join(', ')}` : ''}`);
  }
  return out.join('\n');
}
