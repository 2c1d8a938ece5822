/** exec_injection: running commands, code and shells. Assembled into the one table by ../rules.ts. */
import { backtickIsExecution, BIN_DIR, DANGEROUS_BIN, pipeHasCommandBefore, SHELL, subshellIsDangerous, SUDO } from './fragments.js';
import type { Rule } from './types.js';

export const EXEC_RULES: readonly Rule[] = [
  {
    id: 'EXEC_SUBSHELL',
    kind: 'pattern',
    category: 'exec_injection',
    severity: 'CRITICAL',
    description: 'Subshell command injection: $(command) with a dangerous binary',
    help: 'A `$(...)` that runs a network, shell or decoding binary executes whatever it fetches or decodes. Remove it or replace it with a pinned, reviewed script.',
    pattern: new RegExp(String.raw`\$\(\s{0,8}${SUDO}${BIN_DIR}${DANGEROUS_BIN}\b(?![-.])|\b${SHELL}\s{1,8}-c\s{1,8}["']?\$\(`, 'gi'),
    triggers: ['$('],
    check: subshellIsDangerous,
    worstCase: '$($(curl ',
  },
  {
    id: 'EXEC_BACKTICK',
    kind: 'pattern',
    category: 'exec_injection',
    severity: 'CRITICAL',
    description: 'Backtick command injection with a dangerous binary',
    help: 'Backtick command substitution runs a network, shell or decoding binary. Ordinary inline code in prose is not flagged; inline code that runs fetched content (`curl ... | sh`, `wget https://.../x.sh`) is.',
    pattern: new RegExp(String.raw`\`[ \t]{0,4}${SUDO}${BIN_DIR}${DANGEROUS_BIN}\b[^\`\n]{0,300}\``, 'gi'),
    // The backtick and what can follow it in a match: a blank, a bin directory's `/`, sudo's `s` or a binary's first letter.
    // A backtick before anything else (a fence's next one, most inline code) opens no window: 36,710 -> 13,946 in the benign corpus.
    triggers: ['` ', '`\t', '`/', '`b', '`c', '`d', '`e', '`k', '`m', '`n', '`o', '`p', '`r', '`s', '`t', '`w', '`x', '`z'],
    check: backtickIsExecution,
    worstCase: '`curl `sh ',
  },
  {
    id: 'EXEC_EVAL',
    kind: 'pattern',
    category: 'exec_injection',
    severity: 'CRITICAL',
    description: 'eval()/exec() with a string or decoded argument',
    help: 'Evaluating a string (or decoded/fetched data) as code hides what runs. Write the code out.',
    pattern:
      /\b(?:eval|exec)\s{0,4}\(\s{0,4}(?:["'`]|(?:atob|unescape|decodeURIComponent|(?:base64\.)?b64decode|bytes\.fromhex|codecs\.decode|String\.fromCharCode|compile|requests\.get|urlopen|fetch)\s{0,4}\()|\bnew\s{1,4}Function\s{0,4}\(\s{0,4}["'`]/gi,
    triggers: ['eval', 'exec', 'function'],
    // In a script beside the skill, eval of a literal is the script's own code (issue 19 §2: ordinary
    // for a build script, not CRITICAL by itself); eval of decoded or fetched data still is.
    check: (ctx) => ctx.kind !== 'script' || !/[(]\s{0,4}["'`]$/.test(ctx.match[0]),
    worstCase: 'eval( exec(',
  },
  {
    id: 'EXEC_PIPE_BASH',
    kind: 'pattern',
    category: 'exec_injection',
    severity: 'CRITICAL',
    description: 'Pipe to a shell interpreter',
    help: 'Piping text into a shell (or `bash <(curl ...)`) runs content nobody reviewed. Download, verify a checksum or signature, then run a pinned file.',
    pattern: new RegExp(
      // A pipe needs a command before it on the same line (not a Markdown table border) and is not followed by another cell border.
      String.raw`\|\s{0,8}${SUDO}${BIN_DIR}(?:env\s{1,8})?${SHELL}\b(?![-.\w])(?![ \t]{0,4}\|)|\|\s{0,8}${SUDO}(?:python[23]?|perl|ruby|node|php|iex|invoke-expression)[ \t]{0,4}(?:-[ \t]{0,4})?(?=$|[;&)#])`,
      'gim',
    ),
    triggers: ['|'],
    check: pipeHasCommandBefore,
    worstCase: '| | sudo ',
  },
  {
    id: 'EXEC_DYNAMIC_CONTEXT',
    kind: 'pattern',
    category: 'exec_injection',
    severity: 'CRITICAL',
    description: 'Dynamic context injection (!`command` or a ```! fence) runs a command when the skill loads',
    help: 'Agent hosts run these commands while loading the skill, before any model decision or approval. Remove them.',
    pattern: /!`[^`\n]{1,300}`|^[ \t]{0,3}(?:`{3,}|~{3,})![^\n]{0,100}$/gim,
    // A fence of any length: its first three characters are within 3 of the line start.
    triggers: ['!`', '```', '~~~'],
    lead: 3,
    // Every part of both alternatives stops at a line break (`[^`\n]`, `[^\n]`, `$` under `m`,
    // runs of backticks or tildes): an attempt reads no further than the end of its line.
    attemptStops: /[^\n]*/y,
    markdownOnly: true,
    check: (ctx) => {
      if (ctx.match[0].startsWith('!`')) return ctx.region !== 'fenced-code' && ctx.region !== 'indented-code' && !ctx.inInlineCode(ctx.rawStart);
      return true;
    },
    worstCase: '!`a !`',
  },
  {
    id: 'EXEC_DOWNLOAD_EXEC',
    kind: 'detector',
    category: 'exec_injection',
    severity: 'WARN',
    description: 'Downloaded file is executed (download-then-run)',
    help: 'Saving a download and running it is `curl | sh` in two steps. Verify a checksum or signature first, and pin the version.',
    worstCase: 'curl -o /tmp/a ',
  },
  {
    id: 'EXEC_SHELL_STRING',
    kind: 'pattern',
    category: 'exec_injection',
    severity: 'WARN',
    description: 'Code runs a computed string through a shell (shell=True, os.system, child_process.exec)',
    help: 'A string built at run time and handed to a shell can be anything (read from an image, a server, a file). Run a fixed argument list.',
    pattern:
      /\bsubprocess\.(?:run|call|Popen|check_output|check_call)\s{0,4}\(\s{0,4}[A-Za-z_][\w.]{0,60}\s{0,4},[^\n]{0,200}?\bshell\s{0,2}=\s{0,2}True|\bos\.(?:system|popen)\s{0,4}\(\s{0,4}(?!["'])[\w.]|\bchild_process["'\\)]{0,6}\s{0,4}\.\s{0,4}exec(?:Sync)?\s{0,4}\(|\bexecSync\s{0,4}\(\s{0,4}(?!["'`])[\w.]|\bRuntime\.getRuntime\(\)\.exec\s{0,4}\(/gi,
    triggers: ['subprocess', 'os.', 'child_process', 'execsync', 'runtime'],
    worstCase: 'subprocess.run(x subprocess.run(',
  },
  {
    id: 'EXEC_REMOTE_CODE',
    kind: 'cooccur',
    category: 'exec_injection',
    severity: 'CRITICAL',
    description: 'Fetched content executed as code (download + exec/eval/shell)',
    help: 'The code downloads something and executes a variable: remote code execution controlled by whoever serves the URL.',
    scope: 'paragraph',
    scriptScope: 'file',
    anchor:
      /\b(?:exec|eval)\s{0,4}\(\s{0,4}[A-Za-z_]\w{0,40}\s{0,4}\)|\bsubprocess\.\w{1,12}\s{0,4}\(\s{0,4}[A-Za-z_]\w{0,40}\s{0,4},\s{0,4}shell\s{0,2}=\s{0,2}True|\bos\.system\s{0,4}\(\s{0,4}[A-Za-z_]\w{0,40}\s{0,4}\)|\bnew\s{1,4}Function\s{0,4}\(\s{0,4}[A-Za-z_]\w{0,40}\s{0,4}\)/gi,
    with: [/\b(?:urlopen|urllib\.request|requests\.(?:get|post)|httpx\.\w{1,10}|fetch\s{0,2}\(|axios|https?\.get)\b/i],
    triggers: ['exec', 'eval', 'subprocess', 'system', 'function'],
    // Every alternative starts with its trigger but `os.system` (3 before it) and `new\s{1,4}Function` (at most 7):
    // windows of 8 positions a trigger, not the anchor's longest match (about 100).
    lead: 7,
    worstCase: 'exec(a) exec(',
  },
  {
    id: 'EXEC_HIDDEN_PATH',
    kind: 'pattern',
    category: 'exec_injection',
    severity: 'WARN',
    description: 'Runs a script kept inside .git/ (where reviews and diffs do not look)',
    help: 'Files under .git/ are not part of the reviewed tree. Keep scripts in the skill folder.',
    pattern: /\b(?:ba|z|da)?sh\s{1,8}["']?(?:\.\/)?\.git\/(?!hooks\/)[\w./-]{1,200}|\bsource\s{1,8}["']?(?:\.\/)?\.git\/[\w./-]{1,200}|\bpython[23]?\s{1,8}["']?(?:\.\/)?\.git\/[\w./-]{1,200}/gi,
    triggers: ['.git/'],
    worstCase: 'sh .git/ sh ',
  },
  {
    id: 'EXEC_TMP_FILE',
    kind: 'pattern',
    category: 'exec_injection',
    severity: 'WARN',
    description: 'Runs a file from /tmp (dropped payloads are staged there)',
    help: 'Executables written to /tmp at run time were never reviewed. Ship the script with the skill.',
    pattern: /\b(?:(?:ba|z|da)?sh|source|python[23]?|node|perl|ruby|execute|exec|run|chmod\s{1,4}(?:\+|u\+|a\+|7)\w{0,3})\s{1,4}["']?\/tmp\/[\w./-]{1,200}|(?:&&|;|^)[ \t]{0,8}\/tmp\/[\w./-]{1,200}(?=[ \t]|$)/gim,
    triggers: ['/tmp/'],
    worstCase: 'sh /tmp/ sh /tmp/',
  },
  {
    id: 'YAML_UNSAFE_TAG',
    kind: 'pattern',
    category: 'exec_injection',
    severity: 'CRITICAL',
    description: 'Frontmatter YAML tag that constructs objects or runs code in unsafe loaders (!!python/object, !ruby/object, !!js/function)',
    help: 'Unsafe YAML loaders (PyYAML load, js-yaml full schema) execute these tags. comis parses with the `yaml` package, which does not; remove them anyway.',
    pattern: /!!?(?:python|ruby|perl|php|java|js|javascript)\/[\w:./-]{0,100}/gi,
    regions: ['frontmatter', 'description'],
    triggers: ['!'],
    worstCase: '!!python !!',
  },
  {
    id: 'FRONTMATTER_CODE_ENGINE',
    kind: 'pattern',
    category: 'exec_injection',
    severity: 'CRITICAL',
    description: 'Frontmatter opened as code (---js, ---javascript, ---coffee): front-matter engines such as gray-matter eval it',
    help: 'gray-matter and similar libraries evaluate `---js` frontmatter with eval. Use plain `---` YAML.',
    pattern: /^\uFEFF?---[ \t]{0,4}(?:js|javascript|coffee|coffeescript|cson)\b/gi,
    // `---` and the blank or the engine's first letter after it: table borders and rules (11,429 windows in the benign corpus, now 116) open none.
    triggers: ['--- ', '---\t', '---j', '---c'],
    worstCase: '---js ---',
  },
];
