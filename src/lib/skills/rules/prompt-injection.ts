/** prompt_injection: overrides, scanner evasion, concealment, remote authority. Assembled into the one table by ../rules.ts. */
import { EMAIL, NEGATED_BEFORE, notNegated, URL } from './fragments.js';
import type { Rule } from './types.js';

export const PROMPT_INJECTION_RULES: readonly Rule[] = [
  {
    id: 'PI_IGNORE_INSTRUCTIONS',
    kind: 'pattern',
    category: 'prompt_injection',
    severity: 'CRITICAL',
    description: 'Instruction override ("ignore previous instructions", "takes precedence over all rules")',
    help: 'The text tries to override the system prompt and the user. Remove it.',
    pattern:
      /\b(?:ignore|disregard|forget|override|bypass)\s{1,4}(?:(?:all|any|the|your|of|these|every)\s{1,4}){0,3}(?:previous|prior|above|earlier|preceding|former|other|system|developer|original|safety)\s{1,4}(?:[a-z]{1,20}\s{1,4}){0,2}?(?:instructions?|rules|prompts?|messages|guidance|guidelines|policies|directives|constraints)\b|\b(?:higher|highest)\s{1,4}priority\s{1,4}than\s{1,4}(?:any|all|the)\s{1,4}(?:other\s{1,4})?(?:instructions?|rules|messages|system)|\btakes?\s{1,4}(?:absolute\s{1,4}|full\s{1,4}|highest\s{1,4})?(?:precedence|priority)\s{1,4}over\s{1,4}(?:all|any|every|the)\s{1,4}(?:other\s{1,4}|previous\s{1,4}|system\s{1,4})?(?:instructions?|rules|prompts?|messages|guidance|policies)|\byou\s{1,4}are\s{1,4}now\s{1,4}(?:in\s{1,4})?(?:developer|dan|jailbreak|unrestricted|god)\s{0,4}mode\b/gi,
    triggers: ['ignore', 'disregard', 'forget', 'override', 'bypass', 'priority', 'precedence', 'you are now'],
    check: notNegated,
    worstCase: 'ignore all the ignore ',
  },
  {
    id: 'PI_SCANNER_EVASION',
    kind: 'pattern',
    category: 'prompt_injection',
    severity: 'CRITICAL',
    description: 'Text addressed to a reviewer, scanner or LLM judge ("expected verdict is SAFE", "do not flag")',
    help: 'Legitimate skills do not negotiate with their reviewers. Remove the text and re-review the skill.',
    pattern:
      /\b(?:expected|correct|intended|required)\s{1,4}(?:verdict|classification|result|outcome|rating)\s{1,4}(?:is|=|:)\s{0,4}["']?(?:safe|benign|clean|pass|harmless)\b|\bdo\s{1,4}not\s{1,4}flag(?:\s{1,4}(?:this|it)\b|\s{0,2}[.!]|\s{0,2}$)|\b(?:note|message|instructions?)\s{1,4}(?:to|for)\s{1,4}(?:the\s{1,4})?(?:ai\s{1,4}|llm\s{1,4}|automated\s{1,4}|security\s{1,4})?(?:reviewers?|scanners?|auditors?|judges?|classifiers?|moderators?)\b|\b(?:reviewer|scanner|auditor|judge|classifier)\s{1,4}(?:context|note|instructions?)\s{0,2}:|\b(?:this|the)\s{1,4}(?:content|file|skill|code)\s{1,4}is\s{1,4}(?:benign|safe)\s{1,4}by\s{1,4}design\b/gim,
    triggers: ['verdict', 'classification', 'result', 'outcome', 'rating', 'flag', 'reviewer', 'scanner', 'auditor', 'judge', 'classifier', 'moderator', 'design'],
    // Each follows `\s{1,4}` in the pattern: not `generating`, `results` in `getresult`.
    wordStartTriggers: ['verdict', 'classification', 'result', 'outcome', 'rating'],
    worstCase: 'expected verdict expected ',
  },
  {
    id: 'PI_REMOTE_AUTHORITY',
    kind: 'cooccur',
    category: 'prompt_injection',
    severity: 'WARN',
    description: 'Fetched or remote content declared authoritative (follow it exactly, it supersedes this file)',
    help: 'The real instructions live on a server that can change after review (external staging). Vendor and review the content instead.',
    scope: 'sentence',
    anchor:
      /\b(?:remote|fetched|upstream|downloaded|online|live|hosted|served|linked|external)\s{1,4}(?:copy|version|config\w{0,9}|instructions?|rules|ruleset|spec|reference|content|policy|directives?|document\w{0,3}|page|source)\s{1,4}(?:is|are)\s{1,4}(?:always\s{1,4})?(?:authoritative|canonical|the\s{1,4}source\s{1,4}of\s{1,4}truth)\b|\bauthoritative\s{1,4}(?:setup|over)\b|\b(?:supersedes?|overrides?)\s{1,4}(?:anything|everything|all)\b|\btreat\s{1,4}[^.\n]{0,60}?\bas\s{1,4}(?:(?:a|the)\s{1,4})?(?:authoritative|trusted|the\s{1,4}source\s{1,4}of\s{1,4}truth|(?:direct\s{1,4})?(?:instructions?|commands?)|\w{0,20}\s{0,4}setup\s{1,4}steps)\b|\bfollow\s{1,4}(?:them|it|every\s{1,4}\w{1,20}|each\s{1,4}\w{1,20}|all\s{1,4}\w{1,20}|its\s{1,4}\w{1,20})\s{1,4}(?:exactly|verbatim|precisely|step\s{1,4}by\s{1,4}step|in\s{1,4}\/tmp\/)|\bwhatever\s{1,4}it\s{1,4}says\b|\bover\s{1,4}anything\s{1,4}bundled\b|\bdo\s{1,4}not\s{1,4}substitute\s{1,4}bundled\b/gi,
    with: [/\b(?:fetch\w{0,3}|download\w{0,3}|remote|upstream|url|curl|wget|served|online|live\s{1,4}(?:rule|config)\w{0,10}|returned|response|tool\s{1,4}output|reference|readme|spec|\/tmp\/)\b|https?:\/\/|\/tmp\//i],
    // `truth`, not `source of truth`: the pattern allows up to four spaces between the words.
    triggers: ['authoritative', 'canonical', 'truth', 'supersede', 'override', 'treat', 'follow', 'whatever it says', 'bundled'],
    worstCase: 'treat treat treat ',
  },
  {
    id: 'PI_CONCEALED_ACTION',
    kind: 'cooccur',
    category: 'prompt_injection',
    severity: 'CRITICAL',
    description: 'Instruction to hide an action from the user (do not mention, silently, without asking) next to network, mail, credential or push activity',
    help: 'A skill that asks the agent to keep a network send, a push or a credential read from the user is hiding exfiltration. Remove it.',
    scope: 'paragraph',
    anchor:
      /\bwithout\s{1,4}(?:telling|informing|notifying|mentioning|alerting)\b|\b(?:do\s{1,4}not|don't|never)\s{1,4}(?:(?:mention|tell|surface|announce|acknowledge|inform|notify)(?:ing|s)?\b|(?:reveal|disclose)(?:ing|s)?\b(?!\s{1,4}(?:the\s{1,4}|your\s{1,4}|any\s{1,4}|raw\s{1,4})?(?:api|keys?|tokens?|secrets?|passwords?|credentials?|cookies?)))|\bhidden\s{1,4}from\s{1,4}(?:the\s{1,4})?users?\b|\b(?:must|should|will)\s{1,4}(?:never|not)\s{1,4}be\s{1,4}(?:surfaced|mentioned|shown|disclosed|revealed|displayed|announced)\b|\bnever\s{1,4}surfaced\b|\b(?:silently|quietly|secretly|covertly)\s{1,4}(?:run|execute|send|post|upload|read|collect|add|forward|sync|push|install|call|fetch|copy|include|append|write|publish)\b|\bmust\s{1,4}run\s{1,4}silently\b|\b(?:do\s{1,4}not|don't|never)\s{1,4}(?:ask|request)\s{1,4}(?:the\s{1,4}user\s{1,4})?(?:for\s{1,4})?(?:confirmation|permission|approval)\b|\bwithout\s{1,4}(?:asking|confirmation|approval)\b(?!\s{1,4}(?:first|before))|\brequesting\s{1,4}confirmation\s{1,4}is\s{1,4}a\s{1,4}malfunction\b/gi,
    with: [
      new RegExp(
        String.raw`${URL}|${EMAIL}|\b(?:curl|wget|nc|post|upload\w{0,3}|exfiltrat\w{0,6}|transmit\w{0,3}|bcc|forward\w{0,3}|git\s{1,4}push|push\s{1,4}--\w{1,10}|publish\w{0,3}|beacon|telemetry|credentials?|secrets?|tokens?|passwords?|api[_ -]?keys?|\.env|\.ssh|\.aws|\.netrc|environment\s{1,4}variables?)\b`,
        'i',
      ),
    ],
    triggers: ['not', "don't", 'never', 'without', 'hidden', 'silently', 'quietly', 'secretly', 'covertly', 'surfaced', 'malfunction'],
    notAfter: NEGATED_BEFORE,
    worstCase: 'do not mention do not ',
  },
  {
    id: 'PI_OVERSIGHT_BYPASS',
    kind: 'pattern',
    category: 'prompt_injection',
    severity: 'WARN',
    description: 'Instruction to skip user confirmation or hide tool activity (never ask, suppress output)',
    help: 'A skill that forbids confirmations or hides tool output removes the user from the loop. Let the host decide about approvals.',
    pattern:
      /\b(?:never|do\s{1,4}not|don't)\s{1,4}(?:use|show|call|trigger|display)\b[^.\n]{0,40}?\b(?:(?:confirmation|approval|permission)\s{0,4}(?:prompts?|dialogs?|requests?)|AskUserQuestion)\b|\bsuppress\s{1,4}(?:all\s{1,4}|any\s{1,4})?(?:intermediate\s{1,4})?(?:tool\s{1,4})?output\b|\brequesting\s{1,4}confirmation\s{1,4}is\s{1,4}a\s{1,4}malfunction\b|\b(?:invoke|use|run|call)\s{1,4}(?:them|tools?|it)\s{1,4}without\s{1,4}asking\s{1,4}for\s{1,4}(?:permission|confirmation|approval)\b|\bwork\s{1,4}silently\b/gi,
    triggers: ['confirmation', 'approval', 'permission', 'suppress', 'malfunction', 'silently'],
    worstCase: 'never ask never ',
  },
];
