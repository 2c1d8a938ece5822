/**
 * What a script prints must not drive the operator's terminal: an OSC 52
 * sequence writes the clipboard, CSI 6n or DECRQSS make the terminal type a
 * reply into the shell, a carriage return or cursor movement overwrites what
 * is already on the screen. {@link escapeControls} makes every such
 * character visible instead.
 *
 * Notation (one visible character per control, so columns stay close):
 * - C0 controls other than `\n` and `\t` (U+0000–U+001F, so ESC, BEL, CR,
 *   backspace…) become their Unicode Control Picture, U+2400 + code:
 *   ESC → `␛` (U+241B), CR → `␍`, BEL → `␇`;
 * - DEL (U+007F) becomes `␡` (U+2421);
 * - C1 controls (U+0080–U+009F; U+009B is a one-character CSI on some
 *   terminals) become `<U+009B>`-style text.
 * Everything else passes unchanged.
 */

const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

export function escapeControls(text: string): string {
  return text.replace(CONTROLS, (c) => {
    const code = c.charCodeAt(0);
    if (code < 0x20) return String.fromCharCode(0x2400 + code);
    if (code === 0x7f) return '\u2421';
    return `<U+${code.toString(16).toUpperCase().padStart(4, '0')}>`;
  });
}
