/** obfuscated_encoding: encoded payloads and spliced names. Assembled into the one table by ../rules.ts. */
import { SHELL } from './fragments.js';
import type { Rule } from './types.js';

export const OBFUSCATION_RULES: readonly Rule[] = [
  {
    id: 'OBF_BASE64_LONG',
    kind: 'detector',
    category: 'obfuscated_encoding',
    severity: 'WARN',
    description: 'Long base64-encoded string (80+ chars)',
    help: 'A long encoded blob hides what it says. The scanner decodes it; if it is data (an image), ship it as a file.',
    worstCase: 'QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRS ',
  },
  {
    id: 'OBF_HEX_LONG',
    kind: 'pattern',
    category: 'obfuscated_encoding',
    severity: 'WARN',
    description: 'Long hex-escaped string (20+ sequences)',
    help: 'Hex escapes hide text. The scanner decodes and rescans it; write it out instead.',
    pattern: /(?:\\x[0-9a-f]{2}){20,}|(?:\\u00[0-9a-f]{2}){20,}|(?:%[0-9a-f]{2}){20,}|(?:0x[0-9a-f]{2}\s{0,2},\s{0,2}){20,}/gi,
    triggers: ['\\x', '\\u00', '%', '0x'],
    // Every alternative starts with its trigger.
    lead: 0,
    // Each alternative consumes only these characters (`i`: without `u`, no non-ASCII letter
    // folds to an ASCII one), so an attempt fails or ends at the first character outside them.
    attemptStops: /[\\0-9a-fA-FxXuU%,\s]*/y,
    worstCase: '\\x41\\x4',
  },
  {
    id: 'OBF_BASE64_DECODE_PIPE',
    kind: 'pattern',
    category: 'obfuscated_encoding',
    severity: 'CRITICAL',
    description: 'base64 decode piped to another command (or executed)',
    help: 'Decoding and running in one step executes a payload nobody can read. Remove it.',
    pattern: new RegExp(
      String.raw`\bbase64\s{1,8}(?:-[a-zA-Z0-9]{1,3}\s{1,8}){0,3}(?:-d|--decode|-D)\b[^\n|;&)]{0,200}\||\b(?:eval|exec|source|${SHELL}\s{1,8}-c)\s{1,8}["']?\$\([^()\n]{0,400}\bbase64\s{1,8}(?:-[a-zA-Z0-9]{1,3}\s{1,8}){0,3}(?:-d|--decode|-D)\b|\b(?:openssl\s{1,4}(?:enc\s{1,4})?base64|certutil)\s{1,8}(?:-[a-zA-Z]{1,10}\s{1,8}){0,3}-d(?:ecode)?\b[^\n|;&]{0,200}\||\b(?:exec|eval)\s{0,4}\(\s{0,4}(?:base64\.)?b64decode\s{0,4}\(|\bfrombase64string\b[^\n]{0,200}\b(?:iex|invoke-expression)\b|\b(?:powershell|pwsh)(?:\.exe)?\b[^\n|]{0,100}?\s-(?:e|ec|enc|encodedcommand)\s{1,4}[A-Za-z0-9+/=]{16}|\b(?:xxd\s{1,4}-r|base32\s{1,4}(?:-d|--decode))\b[^\n|;&)]{0,200}\|\s{0,8}(?:sudo\s{1,4})?(?:(?:ba|z|da)?sh|python[23]?|perl|ruby|node)\b|\b(?:iex|invoke-expression)\b[^\n]{0,200}\bfrombase64string\b`,
      'gi',
    ),
    triggers: ['base64', 'certutil', 'b64decode', 'powershell', 'pwsh', 'xxd', 'base32'],
    worstCase: 'base64 -d base64 ',
  },
  {
    id: 'OBF_BASE64_PAYLOAD',
    kind: 'detector',
    category: 'obfuscated_encoding',
    severity: 'CRITICAL',
    description: 'Encoded text (base64 or hex) that decodes to instructions or a flagged payload',
    help: 'Encoding is used to slip instructions past review. The decoded text is in the message; remove the encoded copy.',
    worstCase: 'aWdub3JlIGFsbCBwcmV2aW91cyBpbnN0cnVjdGlvbnM ',
  },
  {
    id: 'OBF_CHARCODE',
    kind: 'detector',
    category: 'obfuscated_encoding',
    severity: 'WARN',
    description: 'Text assembled from numeric character codes (chr()/String.fromCharCode)',
    help: 'Building strings from character codes hides names such as `exec` or `system`. The decoded text is in the message.',
    worstCase: 'chr(101, 120, 101, ',
  },
  {
    id: 'OBF_VAR_SPLICE',
    kind: 'pattern',
    category: 'obfuscated_encoding',
    severity: 'WARN',
    description: 'Command name spliced together from variables',
    help: 'A command assembled from fragments (`$a$b` in command position) hides which program runs.',
    pattern: /(?:^[ \t]{0,8}|[;&|({][ \t]{0,8}|\$\([ \t]{0,4})\$\{?[A-Za-z_]\w{0,30}\}?\$\{?[A-Za-z_]\w{0,30}\}?(?=[\s;|&)"'`]|$)/gim,
    triggers: ['$'],
    worstCase: '$a$b$c$d',
  },
  {
    id: 'OBF_HOMOGLYPH',
    kind: 'detector',
    category: 'obfuscated_encoding',
    severity: 'WARN',
    description: 'Word mixing Latin letters with look-alike letters from another script',
    help: 'Cyrillic or Greek letters inside Latin words defeat keyword review (`instаll`, `оs.system`). Use plain ASCII.',
    worstCase: 'аb аb ',
  },
];
