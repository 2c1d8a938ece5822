/**
 * The one-shot repair conversation (seed 000 "One-shot repair"): what the
 * model is asked, and how its answer becomes a script.
 *
 * The request carries exactly four things: the original script, its
 * language, the failure's stderr tail (redacted before it gets here, and
 * again here: every registered secret is replaced) and a digest of the SDK
 * methods the agent holds with their capabilities. It asks for the whole
 * corrected script and nothing else. Nothing else of the host goes in: no
 * environment, no host path (the caller maps them to the jail's own names),
 * no config.
 *
 * The answer is untrusted: {@link extractScript} takes the code of a fenced
 * block (or the bare answer), and the caller puts it through the same
 * pre-flight and the same jail as the original.
 */
import { redactSecrets } from '../redact/output-guard.js';
import type { ChatMessage } from './client.js';

export type RepairLanguage = 'ts' | 'js' | 'py';

/** One SDK method the agent may call, as the digest lists it. */
export interface MethodDigest {
  /** `read`, `web_fetch`, `mcp` … */
  name: string;
  capability: string;
  /** The parameters, compactly: `{path: string, offset?: integer}`. */
  params: string;
  summary: string;
}

export interface RepairRequest {
  language: RepairLanguage;
  script: string;
  /** Why it is being repaired: bad_import, comis_tools_misuse, syntax_error, type_error. */
  errorClass: string;
  exitCode: number | null;
  /** The stderr tail, redacted, with host paths mapped to jail paths. */
  stderrTail: string;
  methods: readonly MethodDigest[];
}

const LANGUAGE_NAMES: Record<RepairLanguage, string> = { ts: 'TypeScript (ESM)', js: 'JavaScript (ESM, Node.js)', py: 'Python 3' };
const FENCE_TAGS: Record<RepairLanguage, string> = { ts: 'typescript', js: 'javascript', py: 'python' };

const IMPORT_LINE: Record<RepairLanguage, string> = {
  ts: "import { comis_tools } from './comis_tools.js';   // every call returns a Promise: await it",
  js: "import { comis_tools } from './comis_tools.js';   // every call returns a Promise: await it",
  py: 'import comis_tools                               # calls are synchronous',
};

const CALL_EXAMPLE: Record<RepairLanguage, string> = {
  ts: "const r = await comis_tools.read({ path: 'notes.md' });",
  js: "const r = await comis_tools.read({ path: 'notes.md' });",
  py: "r = comis_tools.read({'path': 'notes.md'})",
};

/** The conversation sent to the model for one repair. */
export function buildRepairMessages(req: RepairRequest): ChatMessage[] {
  const system = [
    'You repair one failed script. It runs in a sandbox with no network and no third-party packages;',
    'the working directory is the agent workspace (/workspace). The only way to reach tools is the comis_tools SDK.',
    'Answer with the whole corrected script in ONE fenced code block and nothing else: no explanation, no diff.',
    'Keep what the script does and what it prints; fix only what made it fail. Call only the SDK methods listed.',
  ].join(' ');
  const methods = req.methods.length === 0 ? '  (none: this agent holds no tool)' : req.methods.map((m) => `  comis_tools.${m.name}(${m.params}) [${m.capability}]: ${m.summary}`).join('\n');
  const tag = FENCE_TAGS[req.language];
  const user = [
    `Language: ${LANGUAGE_NAMES[req.language]}`,
    `Failure: ${req.errorClass} (exit code ${req.exitCode ?? 'none'})`,
    '',
    'SDK:',
    `  ${IMPORT_LINE[req.language]}`,
    `  ${CALL_EXAMPLE[req.language]}   ${req.language === 'py' ? '#' : '//'} one object of parameters`,
    '',
    'Methods this agent holds (comis_tools.describe()):',
    methods,
    '',
    'The script:',
    fence(tag, req.script),
    '',
    'Its stderr (the tail):',
    fence('text', req.stderrTail),
    '',
    `Answer with the whole corrected ${LANGUAGE_NAMES[req.language]} script in one \`\`\`${tag} block.`,
  ].join('\n');
  return [
    { role: 'system', content: redactSecrets(system) },
    { role: 'user', content: redactSecrets(user) },
  ];
}

/** A fence the content cannot close early (longer than any backtick run inside it). */
function fence(tag: string, content: string): string {
  const longest = Math.max(2, ...[...content.matchAll(/`+/g)].map((m) => m[0].length));
  const ticks = '`'.repeat(longest + 1);
  return `${ticks}${tag}\n${content}${content.endsWith('\n') ? '' : '\n'}${ticks}`;
}

/**
 * The script in a model's answer: the first non-empty fenced block (one tagged
 * with the script's language preferred; an unclosed last fence, as a cut-off
 * answer leaves it, runs to the end), else the bare answer. Reasoning blocks
 * (`<think>…</think>`, as some local models emit) are dropped first. Undefined
 * when there is no code at all.
 */
export function extractScript(answer: string, language: RepairLanguage): string | undefined {
  const text = answer.replace(/<think>[\s\S]*?<\/think>/gi, '').replace(/\r\n/g, '\n');
  const blocks: { tag: string; body: string }[] = [];
  const re = /^(`{3,}|~{3,})[ \t]*([\w+#.-]*)[^\n]*\n([\s\S]*?)(?:^\1[ \t]*$|(?![\s\S]))/gm;
  for (const m of text.matchAll(re)) blocks.push({ tag: (m[2] ?? '').toLowerCase(), body: m[3] ?? '' });
  const usable = blocks.filter((b) => b.body.trim() !== '');
  if (blocks.length > 0) {
    const tags = LANGUAGE_TAGS[language];
    const chosen = usable.find((b) => tags.includes(b.tag)) ?? usable[0];
    return chosen ? withNewline(chosen.body) : undefined;
  }
  const bare = text.trim();
  return bare === '' ? undefined : withNewline(bare);
}

const LANGUAGE_TAGS: Record<RepairLanguage, readonly string[]> = {
  ts: ['typescript', 'ts', 'tsx'],
  js: ['javascript', 'js', 'mjs', 'node'],
  py: ['python', 'py', 'python3'],
};

function withNewline(s: string): string {
  const t = s.replace(/\s+$/, '');
  return `${t}\n`;
}
