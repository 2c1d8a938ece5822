import { describe, expect, it } from 'vitest';

import { analyzeMarkdown } from '../../src/lib/skills/markdown-regions.js';

const spansOf = (text: string): unknown[] => analyzeMarkdown(text).spans.map((s) => ({ ...s }));
const inline = (start: number, end: number): unknown => ({ start, end, region: 'inline-code' });

describe('Markdown regions', () => {
  it('pairs backtick runs of the same length on a line, leaving an unmatched one', () => {
    expect(spansOf('a `x` b ``y`` c `z\n')).toEqual([inline(2, 5), inline(8, 13)]);
  });

  it('starts each line with no memory of the runs of the line before', () => {
    // With the per-length table left filled, the third run of line 2 would pair with a run of line 1.
    expect(spansOf('`a`\n`b` `\n')).toEqual([inline(0, 3), inline(4, 7)]);
  });

  it('pairs runs of 64 backticks or more by length too', () => {
    const fence = '`'.repeat(70);
    expect(spansOf(`x ${fence}q${fence} \`y\`\n`)).toEqual([inline(2, 143), inline(144, 147)]);
  });

  it('counts a line of Unicode white space as blank (trim), and a zero-width space as text', () => {
    expect(spansOf('para\n\u3000\n    code\n')).toEqual([{ start: 7, end: 15, region: 'indented-code', lang: '', leadIn: 'para' }]);
    expect(spansOf('para\n\u200b\n    code\n')).toEqual([]);
  });

  it('closes a fence on a line of its marker after Unicode white space, not after text', () => {
    expect(spansOf('```sh\nrm -rf /\n\u3000```\nafter `x`\n')).toEqual([{ start: 0, end: 19, region: 'fenced-code', lang: 'sh', leadIn: '' }, inline(26, 29)]);
    expect(spansOf('```\na\nx```\n')).toEqual([{ start: 0, end: 11, region: 'fenced-code', lang: '', leadIn: '' }]);
  });

  it('finds no comment inside inline code, and the comment after it', () => {
    const regions = analyzeMarkdown('`<!-- x -->` <!-- real -->\n');
    expect(regions.comments.map((c) => ({ ...c }))).toEqual([{ start: 13, end: 26, region: 'html-comment', terminated: true }]);
    expect(regions.spans.map((s) => [s.region, s.start, s.end])).toEqual([
      ['inline-code', 0, 12],
      ['html-comment', 13, 26],
    ]);
  });

  it('lets a comment over several lines swallow the code in it and resume after its last line', () => {
    expect(analyzeMarkdown('<!-- a\n`b`\n--> `c`\nd `e`\n').spans.map((s) => [s.region, s.start, s.end])).toEqual([
      ['html-comment', 0, 14],
      ['inline-code', 21, 24],
    ]);
  });
});
