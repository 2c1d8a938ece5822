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
 * them: display:none, visibility:hidden/collapse, opacity:0, font-size:0,
 * zero width or height, clip/clip-path to nothing, or an off-screen position
 * or indent (-500px and beyond). A page can still hide text in ways that
 * need a full layout engine (colour on same colour, overlap); the envelope
 * around the text is the second line for those.
 */

import type { DomDocument, DomNode } from './dom.js';

const REMOVED_TAGS = ['script', 'style', 'noscript', 'template', 'iframe', 'object', 'embed', 'svg', 'canvas', 'link', 'meta'];

function declarations(style: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const decl of style.split(';')) {
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

function isFarNegative(v: string): boolean {
  const n = Number.parseFloat(v);
  return Number.isFinite(n) && n <= -500;
}

/** Whether a set of declarations hides its element. */
export function hidesElement(decls: Map<string, string>): boolean {
  const get = (k: string): string => decls.get(k) ?? '';
  if (get('display') === 'none') return true;
  if (get('visibility') === 'hidden' || get('visibility') === 'collapse') return true;
  if (decls.has('opacity') && Number.parseFloat(get('opacity')) === 0) return true;
  if (decls.has('font-size') && isZeroLength(get('font-size'))) return true;
  for (const k of ['width', 'height', 'max-width', 'max-height']) if (decls.has(k) && isZeroLength(get(k))) return true;
  for (const k of ['left', 'top', 'right', 'bottom', 'margin-left', 'margin-top', 'text-indent']) if (decls.has(k) && isFarNegative(get(k))) return true;
  const transform = get('transform');
  if (transform.includes('translate')) {
    for (const part of transform.split(/[(),\s]+/)) if (isFarNegative(part)) return true;
    if (/scale\(\s*0\s*[,)]/.test(transform)) return true;
  }
  if (/^rect\(\s*0(px)?[\s,]+0(px)?[\s,]+0(px)?[\s,]+0(px)?\s*\)$/.test(get('clip'))) return true;
  if (get('clip-path') === 'inset(50%)' || get('clip-path') === 'inset(100%)' || get('clip-path').startsWith('circle(0')) return true;
  return false;
}

/** Rules of the page's own <style> sheets that hide: `selector { display: none }`. */
function hidingSelectors(doc: DomDocument): string[] {
  const selectors: string[] = [];
  for (const sheet of Array.from(doc.querySelectorAll('style'))) {
    const css = (sheet.textContent ?? '').replace(/\/\*[\s\S]*?\*\//g, '');
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
