/**
 * Strips what a reader of the page cannot see but a model reading its text
 * would: the classic carrier of prompt injection in web pages. Runs on the
 * parsed DOM BEFORE readable extraction, so Readability never scores, keeps
 * or returns hidden text.
 *
 * Removed: comments; <script>, <style>, <noscript>, <template>, <iframe>,
 * <object>, <embed>, <svg>, <canvas>, <head> metadata; elements with the
 * `hidden` attribute, `aria-hidden="true"`, `inert`; elements whose inline
 * style (or a rule of an inline <style> sheet with a plain selector) hides
 * them: display:none, visibility:hidden/collapse, content-visibility:hidden,
 * opacity (or filter: opacity()) under 0.05, a font size under 2px, zoom under
 * 0.05, zero width or height, a scale of 0, clip/clip-path to (almost)
 * nothing, or an off-screen position, margin, indent or translation (-500px
 * and beyond, or 5,000px and beyond, in px, or em/rem/vw/vh converted at a
 * 16px font and a 500px viewport); a closed <dialog>, <noembed>, <noframes>.
 * Declarations are read with CSS comments removed and CSS escapes decoded
 * (a comment between `display:` and `none`, `display:n\6f ne`). A page can still hide text in
 * ways that need a full layout engine (colour on same colour, overlap); the
 * envelope around the text is the second line for those.
 */

import type { DomDocument, DomNode } from './dom.js';

const REMOVED_TAGS = ['script', 'style', 'noscript', 'noembed', 'noframes', 'template', 'iframe', 'object', 'embed', 'svg', 'canvas', 'link', 'meta'];

/** CSS text without its comments, in one pass (an unclosed comment runs to the end, as in CSS). */
export function withoutCssComments(css: string): string {
  let out = '';
  let at = 0;
  for (let open = css.indexOf('/*'); open !== -1; open = css.indexOf('/*', at)) {
    out += css.slice(at, open);
    const close = css.indexOf('*/', open + 2);
    if (close === -1) return out;
    at = close + 2;
  }
  return out + css.slice(at);
}

/** CSS escapes decoded: `\6f ` (hex, with its optional space) and `\x` (the character itself). */
function unescapeCss(text: string): string {
  if (!text.includes('\\')) return text;
  return text.replace(/\\(?:([0-9a-fA-F]{1,6})[ \t\n]?|([^\n0-9a-fA-F]))/g, (_, hex: string | undefined, ch: string | undefined) => {
    if (hex === undefined) return ch ?? '';
    const cp = Number.parseInt(hex, 16);
    return cp > 0 && cp <= 0x10ffff && (cp < 0xd800 || cp > 0xdfff) ? String.fromCodePoint(cp) : '\ufffd';
  });
}

function declarations(style: string): Map<string, string> {
  const out = new Map<string, string>();
  // Split first, then decode: an escaped `;` (`\3b`) is part of its value, as in a browser.
  for (const raw of withoutCssComments(style).split(';')) {
    const decl = unescapeCss(raw);
    const i = decl.indexOf(':');
    if (i === -1) continue;
    out.set(
      decl.slice(0, i).trim().toLowerCase(),
      decl
        .slice(i + 1)
        .replace(/!important/i, '')
        .trim()
        .toLowerCase(),
    );
  }
  return out;
}

/** A CSS length that is zero (0, 0px, 0em, 0%, 0.0rem). */
function isZeroLength(v: string): boolean {
  const n = Number.parseFloat(v);
  return n === 0 && /^[+-]?0*\.?0*(px|em|rem|%|pt|vh|vw|ex|ch)?$/.test(v);
}

/**
 * Pixels per unit, at a 16px font and the narrowest viewport, 500px (a bare number is px). A
 * percentage is not converted: in a translate it is of the element's own size, and
 * `translate(-50%, -50%)` centres, it does not hide.
 */
const PX_PER: Readonly<Record<string, number>> = { '': 1, px: 1, em: 16, rem: 16, ex: 8, ch: 8, vw: 5, vh: 5, vmin: 5, vmax: 5, pt: 4 / 3, pc: 16, cm: 37.8, mm: 3.78, in: 96, q: 0.945 };

/** A CSS length in px (undefined when it is not one). */
function lengthPx(v: string): number | undefined {
  const m = /^([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?)([a-z%]*)$/.exec(v.trim());
  if (!m) return undefined;
  const per = PX_PER[m[2]!];
  return per === undefined ? undefined : Number(m[1]) * per;
}

/** Off-screen: -500px and beyond, or 5,000px and beyond. */
function isFarOff(v: string): boolean {
  const px = lengthPx(v);
  return px !== undefined && Number.isFinite(px) && (px <= -500 || px >= 5000);
}

/** A plain zero: 0, -0, 0.0, .0. */
function isZeroNumber(v: string): boolean {
  return /^[+-]?(?:0+\.?0*|\.0+)$/.test(v);
}

/** A number (or percentage) under `limit`: opacity 0.01, 1%. */
function under(v: string, limit: number): boolean {
  const t = v.trim();
  const n = Number.parseFloat(t);
  if (!Number.isFinite(n)) return false;
  return (t.endsWith('%') ? n / 100 : n) < limit;
}

/** Whether a set of declarations hides its element. */
export function hidesElement(decls: Map<string, string>): boolean {
  const get = (k: string): string => decls.get(k) ?? '';
  if (get('display') === 'none') return true;
  if (get('visibility') === 'hidden' || get('visibility') === 'collapse') return true;
  if (get('content-visibility') === 'hidden') return true;
  if (decls.has('opacity') && under(get('opacity'), 0.05)) return true;
  // `[^()]*` stops at the next parenthesis: one read of the value, however many `opacity(` it holds.
  const filterOpacity = /opacity\(([^()]*)\)/.exec(get('filter'));
  if (filterOpacity && under(filterOpacity[1]!, 0.05)) return true;
  if (decls.has('zoom') && under(get('zoom'), 0.05)) return true;
  if (decls.has('font-size')) {
    const px = lengthPx(get('font-size'));
    if (isZeroLength(get('font-size')) || (px !== undefined && px < 2)) return true;
  }
  for (const k of ['width', 'height', 'max-width', 'max-height']) if (decls.has(k) && isZeroLength(get(k))) return true;
  for (const k of ['left', 'top', 'right', 'bottom', 'margin-left', 'margin-top', 'margin-right', 'margin-bottom', 'text-indent', 'inset']) if (decls.has(k) && isFarOff(get(k))) return true;
  const transform = get('transform');
  if (transform.includes('translate')) {
    for (const part of transform.split(/[(),\s]+/)) if (isFarOff(part)) return true;
  }
  // A scale of 0 on either axis, in the transform or as its own property.
  // (The z axis of a flat element shows nothing either way.)
  for (const m of transform.matchAll(/scale(3d|x|y|z)?\(([^()]*)\)/g)) {
    const axis = m[1] ?? '';
    if (axis === 'z') continue;
    const args = m[2]!.split(',').map((a) => a.trim());
    if ((axis === '3d' ? args.slice(0, 2) : args).some(isZeroNumber)) return true;
  }
  if (decls.has('scale') && get('scale').split(/\s+/).slice(0, 2).some(isZeroNumber)) return true;
  for (const part of get('translate').split(/\s+/)) if (isFarOff(part)) return true;
  const clip = /^rect\(([^)]*)\)$/.exec(get('clip'));
  const edges = clip ? clip[1]!.split(/[\s,]+/).filter(Boolean) : [];
  // rect(0 0 0 0), and the screen-reader-only rect(1px, 1px, 1px, 1px): at most 1px shown.
  if (edges.length === 4 && edges.every((p) => (lengthPx(p) ?? Infinity) <= 1)) return true;
  const clipPath = get('clip-path');
  // inset(top right bottom left), CSS shorthand: nothing left when top + bottom or left + right reach 100%.
  const inset = /^inset\(([^()]*)\)$/.exec(clipPath);
  if (inset) {
    const pct = inset[1]!
      .split(/\s+round\s+/)[0]!
      .trim()
      .split(/\s+/)
      .map((v) => (v.endsWith('%') ? Number.parseFloat(v) : isZeroNumber(v) ? 0 : Number.NaN));
    const [top, right = top, bottom = top, left = right] = pct;
    if ((top ?? 0) + (bottom ?? 0) >= 100 || (left ?? 0) + (right ?? 0) >= 100) return true;
  }
  if (/^(circle|ellipse)\(\s*0/.test(clipPath)) return true;
  const polygon = /^polygon\(([^)]*)\)$/.exec(clipPath);
  // A polygon whose points all coincide encloses nothing.
  if (polygon && new Set(polygon[1]!.split(',').map((pt) => pt.trim().replace(/\s+/g, ' '))).size === 1) return true;
  return false;
}

/** Rules of the page's own <style> sheets that hide: `selector { display: none }`. */
function hidingSelectors(doc: DomDocument): string[] {
  const selectors: string[] = [];
  for (const sheet of Array.from(doc.querySelectorAll('style'))) {
    // One pass: a lazy comment regex re-read the rest of the sheet from every unclosed `/*`.
    const css = withoutCssComments(sheet.textContent ?? '');
    for (const rule of css.split('}')) {
      // The innermost block: `@media x { .a { display: none }` yields `.a` and its declarations.
      const open = rule.lastIndexOf('{');
      if (open === -1) continue;
      const head = rule.slice(0, open);
      const inner = head.slice(head.lastIndexOf('{') + 1).trim();
      if (!inner || inner.startsWith('@')) continue;
      if (hidesElement(declarations(rule.slice(open + 1)))) selectors.push(inner);
    }
  }
  return selectors;
}

function removeComments(node: DomNode): void {
  for (let c = node.firstChild; c;) {
    const next = c.nextSibling;
    if (c.nodeType === 8) c.parentNode?.removeChild(c);
    else if (c.nodeType === 1) removeComments(c);
    c = next;
  }
}

/** Removes every hidden element and comment from `doc`, in place. */
export function stripHidden(doc: DomDocument): void {
  const selectors = hidingSelectors(doc);
  for (const selector of selectors) {
    try {
      for (const el of Array.from(doc.querySelectorAll(selector))) el.remove();
    } catch {
      /* a selector linkedom cannot run: skipped (the inline checks still apply) */
    }
  }
  for (const tag of REMOVED_TAGS) for (const el of Array.from(doc.querySelectorAll(tag))) el.remove();
  // A <dialog> is shown only when open.
  for (const el of Array.from(doc.querySelectorAll('dialog'))) if (!el.hasAttribute('open')) el.remove();
  removeComments(doc);
  for (const el of Array.from(doc.querySelectorAll('*'))) {
    if (el.hasAttribute('hidden') || el.hasAttribute('inert') || (el.getAttribute('aria-hidden') ?? '').trim().toLowerCase() === 'true') {
      el.remove();
      continue;
    }
    const style = el.getAttribute('style');
    if (style && hidesElement(declarations(style))) el.remove();
  }
}
