import { describe, expect, it } from 'vitest';

import { scanSkillContent } from '../../src/lib/skills/scanner.js';

describe('base64 runs that decode to bytes', () => {
  const base64 = (bytes: Buffer): string => bytes.toString('base64').replace(/=+$/, '');
  const readable = Buffer.from('please read this hidden note about the build steps here');

  it('still decodes a run whose text has a few control characters (under 5%)', () => {
    const bytes = Buffer.concat([readable, Buffer.from([0x01])]); // 1 in 56
    const found = scanSkillContent(`blob: ${base64(bytes)}\n`).findings.filter((f) => f.ruleId === 'OBF_BASE64_PAYLOAD');
    expect(found.map((f) => [f.position, f.severity])).toEqual([[6, 'WARN']]);
  });

  it('takes a run whose control bytes are 5% or more of its bytes for binary data', () => {
    const bytes = Buffer.concat([readable, Buffer.from([0x01, 0x02, 0x03])]); // 3 in 58
    expect(scanSkillContent(`blob: ${base64(bytes)}\n`).findings.filter((f) => f.ruleId === 'OBF_BASE64_PAYLOAD')).toEqual([]);
  });

  it('reads the base64url alphabet as the decoder does', () => {
    // Bytes whose base64 holds `+` and `/`: in base64url they are `-` and `_`, and decode to the same text.
    const bytes = Buffer.from('readable text?>?>?> with marks ~~~ and more words here');
    const url = bytes.toString('base64url');
    expect(url).toMatch(/[-_]/);
    const found = scanSkillContent(`blob: ${url}\n`).findings.filter((f) => f.ruleId === 'OBF_BASE64_PAYLOAD');
    expect(found.map((f) => f.message)).toEqual([expect.stringContaining('readable text?>?>?> with marks')]);
  });
});
