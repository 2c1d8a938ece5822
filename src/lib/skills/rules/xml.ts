/** xml_breakout: tags that close the skill block or speak as the system. Assembled into the one table by ../rules.ts. */
import type { Rule } from './types.js';

export const XML_RULES: readonly Rule[] = [
  {
    id: 'XML_SKILL_CLOSE',
    kind: 'pattern',
    category: 'xml_breakout',
    severity: 'CRITICAL',
    description: 'Closing tag for the skill XML structure (breakout attempt)',
    help: 'A closing skill tag ends the skill block early so the text after it reads as system-level. Remove it.',
    pattern: /<\/\s{0,4}(?:skills?|skills?[-_ ]?(?:content|instructions?|body|definitions?|files?|invocations?|context|metadata|descriptions?|md)|available[-_ ]?skills?|skill[-_ ]?(?:list|catalog|registry))\s{0,4}>/gi,
    triggers: ['</'],
    worstCase: '</skill </ ',
  },
  {
    id: 'XML_SYSTEM_TAG',
    kind: 'pattern',
    category: 'xml_breakout',
    severity: 'CRITICAL',
    description: 'System-level message tag (breakout attempt)',
    help: 'System, developer, tool-result or chat-template tags try to speak with a higher privilege than a skill, or forge the harness structure around it (a fake tool result). Remove them.',
    pattern:
      /<\s{0,4}\/?\s{0,4}(?:system|system[-_](?:prompt|message|instructions?|reminder|override|note)|developer[-_]?(?:message|instructions)|admin[-_]?(?:message|instructions)|tool[-_](?:results?|use|calls?|response|output)|function[-_](?:calls?|results?|response)s?)\s{0,4}>|<\|\s{0,2}(?:im_start|im_end|system|endoftext)\s{0,2}\|>|<<\s{0,2}SYS\s{0,2}>>|\[\/?INST\]/gi,
    triggers: ['<', '[inst]', '[/inst]'],
    worstCase: '<system <| <<',
  },
];
