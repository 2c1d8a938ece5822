/** persistence: startup files, crontab, services, agent memory and hooks. Assembled into the one table by ../rules.ts. */
import type { Rule } from './types.js';

export const PERSISTENCE_RULES: readonly Rule[] = [
  {
    id: 'PERSIST_SHELL_RC',
    kind: 'pattern',
    category: 'persistence',
    severity: 'WARN',
    description: 'Writes shell startup files, authorized_keys, crontab or services (persistence)',
    help: 'Changing ~/.bashrc, ~/.zshrc, authorized_keys, crontab, launchd or systemd makes code run long after the skill. Ask the user to do it by hand.',
    pattern:
      /(?:>>?|\btee\s{1,4}(?:-a\s{1,4})?)\s{0,4}["']?(?:~|\$\{?HOME\}?|\/root|\/home\/[\w.-]{1,32}|\/Users\/[\w.-]{1,32})["']?\/\.(?:bashrc|bash_profile|bash_login|profile|zshrc|zprofile|zshenv|zlogin|config\/fish\/config\.fish|ssh\/authorized_keys)\b|\bcrontab\s{1,4}-(?=\s|$)|\|\s{0,4}crontab\b|\blaunchctl\s{1,4}(?:load|bootstrap)\b|\bsystemctl\s{1,4}(?:--user\s{1,4})?enable\b/gim,
    triggers: ['>', 'tee', 'crontab', 'launchctl', 'systemctl'],
    // Every alternative starts with its trigger but `|\s{0,4}crontab` (at most 5 before it): windows of 6 positions a trigger, not 83.
    lead: 5,
    worstCase: '>> > >> tee ',
  },
  {
    id: 'PERSIST_AGENT_MEMORY',
    kind: 'pattern',
    category: 'persistence',
    severity: 'WARN',
    description: 'Shell writes into agent memory or instruction files (MEMORY.md, SOUL.md, CLAUDE.md, AGENTS.md, .cursorrules)',
    help: 'Appending to the files an agent loads every session plants standing instructions (memory poisoning). Edit them by hand.',
    pattern:
      /(?:>>|(?<![\w<-])>(?=[ \t])|\btee\s{1,4}(?:-a\s{1,4})?)\s{0,4}["']?[\w.~/$-]{0,80}?(?:memory|soul|claude|agents|gemini|identity|copilot-instructions)\.md\b|(?:>>|(?<![\w<-])>(?=[ \t])|\btee\s{1,4}(?:-a\s{1,4})?)\s{0,4}["']?[\w.~/$-]{0,80}?\.(?:cursorrules|windsurfrules|clinerules)\b/gi,
    // The file names themselves, each whole in every match: every Markdown link and path holds `.md` (2,862 trigger
    // hits in a scan of the benign corpus, now 164).
    triggers: ['memory.md', 'soul.md', 'claude.md', 'agents.md', 'gemini.md', 'identity.md', 'copilot-instructions.md', '.cursorrules', '.windsurfrules', '.clinerules'],
    worstCase: '>> x>> x',
  },
  {
    id: 'PERSIST_AGENT_HOOK',
    kind: 'pattern',
    category: 'persistence',
    severity: 'WARN',
    description: 'Agent settings file shipped with a skill registers hooks (commands run on agent events)',
    help: 'Hooks in .claude/settings.json and similar run commands on every tool call, outside the model. Remove the settings file from the skill.',
    pattern: /"hooks"\s{0,4}:\s{0,4}[{[]/gi,
    pathFilter: /(?:^|[\\/])(?:\.claude|\.cursor|\.codex|\.gemini|\.github)[\\/].{0,200}\.json$|(?:^|[\\/])settings(?:\.local)?\.json$/i,
    triggers: ['hooks'],
    worstCase: '"hooks": "hooks"',
  },
];
