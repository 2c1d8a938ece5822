import { describe, expect, it } from 'vitest';

import { scanSkillContent } from '../../src/lib/skills/scanner.js';

/** The downloads the detector looks at, as the global regex it used to run over the whole text finds them. */
const REFERENCE = /\b(?:curl|wget|iwr|invoke-webrequest)\b[^\n]{0,300}?\s(?:-o|-O|--output(?:-document)?|-OutFile)(?:=|[ \t]{1,4})["']?([^\s"';&|)]{1,200})/gi;

/**
 * Downloads whose output flag sits 298 to 301 characters after the command name (the detector
 * looks for names only that far before each `-o`/`-O`), flags met before a match and inside one,
 * names in both cases, each download of `f.sh` followed by running it.
 */
function texts(): string[] {
  const out: string[] = [];
  for (const name of ['curl', 'WGET', 'iwr', 'Invoke-WebRequest'])
    for (const flag of [' -o ', ' -O ', ' --output ', ' --Output-Document=', ' -OutFile ', '\n-o '])
      for (const gap of [0, 298, 299, 300, 301]) for (const before of ['', 'x -o y ', 'curl -o- | ', `${name} ${name} -O`]) out.push(`${before}${name}${' '.padEnd(gap, 'a')}${flag}f.sh && sh f.sh\n${name} -o -O f.sh; bash f.sh`);
  return out;
}

describe('download then run', () => {
  it('finds every download of a file run afterwards where the global regex does', () => {
    let found = 0;
    for (const text of texts()) {
      const expected = [...text.matchAll(REFERENCE)].filter((m) => m[1] === 'f.sh').map((m) => m.index);
      const actual = scanSkillContent(text, { kind: 'script', path: 'x.sh' })
        .findings.filter((f) => f.ruleId === 'EXEC_DOWNLOAD_EXEC')
        .map((f) => f.position);
      expect(actual, JSON.stringify(text)).toEqual(expected);
      found += actual.length;
    }
    expect(found).toBeGreaterThan(300);
  });
});
