/**
 * The hidden-content strip (web/hidden.ts) on the spellings a page uses to hide text from a
 * reader and show it to a model, each next to the visible idioms that look like them (centring
 * with translate(-50%), a full-bleed -50vw margin, a faded but readable paragraph): hidden text
 * goes, visible text stays.
 */
import { describe, expect, it } from 'vitest';

import { extractHtml } from '../../src/lib/web/extract.js';
import { withoutCssComments } from '../../src/lib/web/hidden.js';

const HIDDEN: Record<string, string> = {
  'TRAP-CSSCOMMENT': '<p style="display:/**/none">',
  'TRAP-ESCAPE': '<p style="display:n\\6f ne">',
  'TRAP-SCALE0': '<p style="transform:scale(0)">',
  'TRAP-SCALEX0': '<p style="transform:scaleX(0)">',
  'TRAP-SCALE-PROP': '<p style="scale:0">',
  'TRAP-LEFT-EM': '<p style="position:absolute;left:-100em">',
  'TRAP-LEFT-VW': '<p style="position:absolute;left:-200vw">',
  'TRAP-RIGHT-FAR': '<p style="position:absolute;right:9999px">',
  'TRAP-TRANSLATE-EM': '<p style="transform:translateX(-100em)">',
  'TRAP-SR-ONLY': '<p style="position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(1px,1px,1px,1px)">',
  'TRAP-CLIP-INSET': '<p style="clip-path:inset(100% 0 0 0)">',
  'TRAP-CLIP-INSET-HALVES': '<p style="clip-path:inset(50%)">',
  'TRAP-CLIP-POLY': '<p style="clip-path:polygon(0 0,0 0,0 0)">',
  'TRAP-CONTENT-VIS': '<p style="content-visibility:hidden">',
  'TRAP-FILTER': '<p style="filter:opacity(0)">',
  'TRAP-OPACITY-TINY': '<p style="opacity:0.001">',
  'TRAP-FONT-TINY': '<p style="font-size:0.1px">',
  'TRAP-FONT-EM': '<p style="font-size:0.01em">',
  'TRAP-ZOOM': '<p style="zoom:0.001">',
  'TRAP-SHEET-COMMENT': '<p class="sc">',
  'TRAP-DIALOG': '<dialog>',
  'TRAP-NOEMBED': '<noembed>',
  'TRAP-NOFRAMES': '<noframes>',
};
const VISIBLE: Record<string, string> = {
  'SHOWN-CENTRED': '<p style="position:absolute;left:50%;top:50%;transform:translate(-50%, -50%)">',
  'SHOWN-FULL-BLEED': '<p style="position:relative;left:50%;width:100vw;margin-left:-50vw">',
  'SHOWN-FADED': '<p style="opacity:0.6">',
  'SHOWN-SMALL': '<p style="font-size:0.8em">',
  'SHOWN-SCALED': '<p style="transform:scale(1.1)">',
  'SHOWN-OPEN-DIALOG': '<dialog open>',
  'SHOWN-NUDGED': '<p style="position:relative;left:-20px;text-indent:-1em">',
  'SHOWN-HALF-CLIPPED': '<p style="clip-path:inset(50% 0 0 0)">',
  'SHOWN-EMPTY-RECT': '<p style="position:absolute;clip:rect()">',
  'SHOWN-FLAT-Z': '<p style="transform:scaleZ(0);scale:1 1 0">',
  'SHOWN-ESCAPED-SEMICOLON': '<p style="font-family:a\\3b display:none">',
};

const close = (open: string): string => `</${/^<(\w+)/.exec(open)![1]}>`;
const body = (items: Record<string, string>): string =>
  Object.entries(items)
    .map(([word, open]) => `${open}${word} is a sentence of the article that a reader would see on this page.${close(open)}`)
    .join('\n');

const PAGE = `<!doctype html><html><head><title>Traps</title><style>.sc { display: none } /* an unclosed comment follows the rule, to the end of the sheet
</style></head><body><article><h1>Heading</h1>
<p>VISIBLE-LEAD: the first visible paragraph of the article, written long enough that Readability keeps it as the content of the page.</p>
${body(HIDDEN)}
${body(VISIBLE)}
<p>VISIBLE-TAIL: the last visible paragraph of the article, also long enough that Readability counts it as content of the page.</p>
</article></body></html>`;

describe('the hidden-content strip', () => {
  it('removes every hiding spelling and keeps the visible idioms that resemble them', async () => {
    const { text } = await extractHtml(PAGE, 'http://example.test/');
    expect(text).toContain('VISIBLE-LEAD');
    expect(text).toContain('VISIBLE-TAIL');
    for (const word of Object.keys(HIDDEN)) expect(text, word).not.toContain(word);
    for (const word of Object.keys(VISIBLE)) expect(text, word).toContain(word);
  });

  it('reads CSS comments in one pass: closed ones go, an unclosed one runs to the end', () => {
    expect(withoutCssComments('a/* x */b/**/c')).toBe('abc');
    expect(withoutCssComments('a{x}/* open')).toBe('a{x}');
    expect(withoutCssComments('/*/ a */b')).toBe('b');
    expect(withoutCssComments('no comment')).toBe('no comment');
    // Many unclosed starts: one pass, not one re-read of the rest per start.
    const many = `${'/* '.repeat(200_000)}x`;
    expect(withoutCssComments(many)).toBe('');
  });
});
