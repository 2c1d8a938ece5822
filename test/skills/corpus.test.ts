import { describe, expect, it } from 'vitest';

import { tempDir } from '../helpers/temp.js';
import { corpusAvailable, corpusDir, corpusRequired, evaluateCorpus, formatCorpusTable, type SampleResult } from './corpus.js';

/**
 * The development corpus targets (issue 5). Reads `COMIS_SKILL_CORPUS`, else
 * `<repo root>/../shared/corpus/skills`. A clone without the corpus skips with a
 * test name that says why; with COMIS_SKILL_CORPUS set (as .ci/run does) a missing
 * corpus fails, so CI always enforces the targets.
 */
const rate = (list: readonly SampleResult[], pick: (r: SampleResult) => boolean): number => (list.length === 0 ? 0 : list.filter(pick).length / list.length);

const runCorpus = corpusAvailable() || corpusRequired;
const title = runCorpus ? 'meets the false-positive and detection targets' : `meets the targets (SKIPPED: no corpus at ${corpusDir}; set COMIS_SKILL_CORPUS to the labelled corpus to run it)`;

// One visible line in the run's output, not only a skipped count.
if (!runCorpus) console.warn(`skill corpus test skipped: no corpus at ${corpusDir}; set COMIS_SKILL_CORPUS to run it`);

describe('development corpus', () => {
  it.skipIf(!runCorpus)(
    title,
    () => {
      expect(corpusAvailable(), `corpus not found at ${corpusDir} (COMIS_SKILL_CORPUS)`).toBe(true);
      const results = evaluateCorpus(tempDir('comis-corpus-'));
      // vitest prints this on the test's stdout: the per-source and per-family figures.
      console.log(formatCorpusTable(results));

      // Issue 19 targets, per benign source and overall.
      const benign = results.filter((r) => r.label === 'benign' && !r.twin);
      expect(benign.length).toBeGreaterThan(200);
      expect(
        rate(benign, (r) => r.critical),
        'benign files with a CRITICAL finding',
      ).toBeLessThanOrEqual(0.01);
      expect(
        rate(benign, (r) => r.security),
        'benign files with any security finding',
      ).toBeLessThanOrEqual(0.04);
      for (const source of new Set(benign.map((r) => r.source))) {
        const list = benign.filter((r) => r.source === source);
        expect(
          rate(list, (r) => r.critical),
          `${source}: benign with a CRITICAL`,
        ).toBeLessThanOrEqual(0.01);
        expect(
          rate(list, (r) => r.security),
          `${source}: benign with any finding`,
        ).toBeLessThanOrEqual(0.04);
      }
      // The SkillsGoat twins are built to look suspicious: reported separately (table above), not gated.

      const malicious = results.filter((r) => r.label === 'malicious');
      const calibration = malicious.filter((r) => r.family === 'calibration');
      expect(calibration.length).toBe(10);
      expect(
        calibration.filter((r) => !r.security).map((r) => r.id),
        'every SkillsGoat calibration case',
      ).toEqual([]);
      const cisco = malicious.filter((r) => r.source === 'cisco-ai-defense/skill-scanner' && !r.textless);
      expect(cisco.length).toBe(6);
      // Samples whose payload is not in the shipped text (omitted.tsv) cannot be caught by a text scanner: not gated.
      expect(malicious.filter((r) => r.textless).length).toBeLessThanOrEqual(10);
      expect(
        cisco.filter((r) => !r.security).map((r) => r.id),
        'every Cisco sample with text content',
      ).toEqual([]);
      expect(
        rate(
          malicious.filter((r) => !r.textless),
          (r) => r.security,
        ),
        'malicious samples flagged (payload shipped as text)',
      ).toBeGreaterThanOrEqual(0.9);

      const hiding = [
        'cisco-ai-defense/skill-scanner/evals/test_skills/malicious/ascii-smuggling',
        'optimuslabs-io/skillsgoat/pasture/obfuscation-encoding/200-rtl-override-labels/skill',
        'optimuslabs-io/skillsgoat/pasture/obfuscation-encoding/200-homoglyph-imports/skill',
        'optimuslabs-io/skillsgoat/pasture/context-truncation-padding/300-newline-canyon/skill',
        'optimuslabs-io/skillsgoat/pasture/calibration/000-hidden-html-comment-instruction/skill',
      ];
      const expected: Record<string, string> = {
        'ascii-smuggling': 'HIDE_TAG_CHARS',
        '200-rtl-override-labels': 'HIDE_BIDI',
        '200-homoglyph-imports': 'OBF_HOMOGLYPH',
        '300-newline-canyon': 'HIDE_PADDING',
        '000-hidden-html-comment-instruction': 'HIDE_HTML_COMMENT',
      };
      for (const id of hiding) {
        const sample = results.find((r) => r.id === id);
        const key = Object.keys(expected).find((k) => id.includes(k))!;
        expect(
          sample?.rules.map((r) => r.replace(/!$/, '')),
          id,
        ).toContain(expected[key]);
      }
    },
    120_000,
  );
});
